/**
 * The shop PC's HTTP client for head office's ten /api/agent/* routes (shared/agent-api.ts). Every answer is parsed
 * with the contract's schema; every failure is an AgentHttpError with the protocol's error word (`unauthorized`,
 * `not_found`, ...) or, when head office could not be reached at all, status 0 and a sentence a person understands
 * ("head-office:8080 refused the connection").
 *
 * Node's fetch keeps connections alive, so live frames (one request per frame) reuse one connection.
 */
import type { z } from 'zod';
import {
  AgentIdentity,
  CameraList,
  CameraStateResult,
  CheckAnswered,
  ClaimResult,
  FaceStored,
  LiveDemands,
  LiveFrameResult,
  SnapshotStored,
  type CameraStateReport,
  type CheckAnswer,
  type CheckJob,
} from '../../shared/agent-api.js';
import { ErrorEnvelope } from '../../shared/errors.js';

export class AgentHttpError extends Error {
  override name = 'AgentHttpError';
  constructor(
    /** HTTP status; 0 when head office could not be reached (see `code`). */
    readonly status: number,
    /** The protocol's error word (`unauthorized`, `not_found`...), or for status 0: `unreachable`, `timeout`, `dns`. */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** Head office was not reached, or answered 5xx: try again later. */
  get retryable(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

/**
 * A fetch failure in words: "127.0.0.1:8080 refused the connection (is head office running there?)". `url` is the
 * address that was called.
 */
export function describeNetworkError(err: unknown, url: string, timeoutMs?: number): { code: string; message: string } {
  let where = url;
  try {
    const u = new URL(url);
    where = u.host;
  } catch {
    // keep the text as it was
  }
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string; name?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
    return { code: 'timeout', message: `${where} did not answer${timeoutMs ? ` within ${Math.round(timeoutMs / 100) / 10} s` : ''} (is the address right, is a firewall in the way?)` };
  }
  const code = e?.cause?.code ?? (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return { code: 'unreachable', message: `${where} refused the connection (is head office running there, and is the port right?)` };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return { code: 'dns', message: `the host name in ${where} could not be found (check the spelling, or use head office's IP address)` };
    case 'EHOSTUNREACH':
    case 'EHOSTDOWN':
      return { code: 'unreachable', message: `no route to ${where} (check the network cable and the address)` };
    case 'ENETUNREACH':
      return { code: 'unreachable', message: `the network is unreachable from this PC (is it connected?)` };
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return { code: 'unreachable', message: `${where} closed the connection (is it head office, and not another program?)` };
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
      return { code: 'timeout', message: `${where} did not answer in time (is the address right, is a firewall in the way?)` };
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'CERT_HAS_EXPIRED':
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return { code: 'tls', message: `the certificate of ${where} is not trusted (${code})` };
    default: {
      const detail = e?.cause?.message ?? e?.message ?? String(err);
      return { code: 'unreachable', message: `${where} could not be reached (${detail})` };
    }
  }
}

export interface AgentApiOptions {
  /** Head office, e.g. `http://head-office:8080` (no trailing slash needed). */
  serverUrl: string;
  /** The shop PC's token (`ffs_...`); never logged. */
  token: string;
  /** Per-request timeout; default 15 s. */
  timeoutMs?: number;
}

type Body = { json: unknown } | { jpeg: Buffer } | undefined;

/** Still called after head office refused the token (they tell whether it is accepted again). */
const PROBES = new Set(['/api/agent/me', '/api/agent/cameras']);

export class AgentApi {
  readonly serverUrl: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  /**
   * Head office answered 401 (the shop was removed, or another PC was enrolled for it): the protocol says stop.
   * Until a probe (the camera list, pulled every camera_sync_s) is accepted again, every other call fails here
   * without a request: no snapshot uploads, live polls every few seconds or face uploads that cannot succeed.
   */
  private refused = false;

  constructor(options: AgentApiOptions) {
    this.serverUrl = options.serverUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  /** `signal`: given up early (the agent is stopped while it waits at start). */
  me(signal?: AbortSignal): Promise<AgentIdentity> {
    return this.call('GET', '/api/agent/me', AgentIdentity, undefined, this.timeoutMs, signal);
  }

  cameras(): Promise<CameraList> {
    return this.call('GET', '/api/agent/cameras', CameraList);
  }

  reportStates(report: CameraStateReport): Promise<z.infer<typeof CameraStateResult>> {
    return this.call('POST', '/api/agent/cameras/state', CameraStateResult, { json: report });
  }

  putSnapshot(camera: string, jpeg: Buffer): Promise<z.infer<typeof SnapshotStored>> {
    return this.call('PUT', `/api/agent/cameras/${encodeURIComponent(camera)}/snapshot`, SnapshotStored, { jpeg });
  }

  uploadFace(jpeg: Buffer, timeoutMs?: number): Promise<z.infer<typeof FaceStored>> {
    return this.call('POST', '/api/agent/faces', FaceStored, { jpeg }, timeoutMs);
  }

  async claimCheck(): Promise<CheckJob | null> {
    return (await this.call('POST', '/api/agent/checks/claim', ClaimResult)).job;
  }

  answerCheck(checkId: string, answer: CheckAnswer): Promise<z.infer<typeof CheckAnswered>> {
    return this.call('POST', `/api/agent/checks/${encodeURIComponent(checkId)}/answer`, CheckAnswered, { json: answer });
  }

  liveDemands(): Promise<LiveDemands> {
    return this.call('GET', '/api/agent/live', LiveDemands);
  }

  liveFrame(camera: string, jpeg: Buffer, timeoutMs = 5000): Promise<LiveFrameResult> {
    return this.call('POST', `/api/agent/live/${encodeURIComponent(camera)}/frames`, LiveFrameResult, { jpeg }, timeoutMs);
  }

  /** Head office refused this PC's token at the last chance it had (401). */
  get unauthorized(): boolean {
    return this.refused;
  }

  private async call<S extends z.ZodType>(method: string, path: string, schema: S, body?: Body, timeoutMs = this.timeoutMs, signal?: AbortSignal): Promise<z.infer<S>> {
    const probe = PROBES.has(path);
    if (this.refused && !probe) {
      throw new AgentHttpError(401, 'unauthorized', 'Head office no longer accepts this shop PC: enrol it again with a new code (footfall enrol --force ...)');
    }
    const url = this.serverUrl + path;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}`, Accept: 'application/json' };
    let payload: string | Buffer | undefined;
    if (body && 'json' in body) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body.json);
    } else if (body && 'jpeg' in body) {
      headers['Content-Type'] = 'image/jpeg';
      payload = body.jpeg;
    }
    let res: Response;
    let text: string;
    try {
      const timeout = AbortSignal.timeout(timeoutMs);
      res = await fetch(url, { method, headers, body: payload, signal: signal ? AbortSignal.any([timeout, signal]) : timeout });
      text = await res.text();
    } catch (err) {
      const { code, message } = describeNetworkError(err, url, timeoutMs);
      throw new AgentHttpError(0, code, `Head office: ${message}`);
    }
    if (res.status === 401) this.refused = true;
    else if (probe && res.ok) this.refused = false;
    return parseAnswer(res.status, text, schema, `${method} ${path}`);
  }
}

/** The answer's JSON checked against the contract; an error envelope (or anything else) becomes an AgentHttpError. */
export function parseAnswer<S extends z.ZodType>(status: number, text: string, schema: S, what: string): z.infer<S> {
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (status >= 200 && status < 300) {
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    throw new AgentHttpError(status, 'bad_answer', `Head office answered ${what} with something this shop PC does not understand (is it the same version?)`);
  }
  const envelope = ErrorEnvelope.safeParse(json);
  if (envelope.success) throw new AgentHttpError(status, envelope.data.error, envelope.data.message);
  throw new AgentHttpError(status, status >= 500 ? 'internal' : 'http_error', `Head office answered ${what} with HTTP ${status} (is the address head office's, not another web server?)`);
}
