import { clear, load, save, type Session } from './session.js';

/**
 * Calls to the head-office API (same origin, `/api/...`) with the session's bearer token.
 *
 * The spec's client rules: on 401 `token_expired`, refresh once and retry silently; only one refresh in flight
 * (the refresh token is single use: presenting a rotated one again ends the whole session); store the rotated
 * tokens before anything else. The lock is a promise shared by this tab and, where the browser has it, a Web Lock
 * shared by every tab of the console (tabs signed in with "keep me signed in" share one refresh token). Inside
 * the lock the stored session is read again: if another tab already refreshed, its tokens are used as they are.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** What to tell a person about a failed call: the API's own message, or that head office could not be reached. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof TypeError) return 'Head office could not be reached. Try again.';
  return err instanceof Error ? err.message : String(err);
}

/** Called once the session is gone (refresh failed, token revoked): the console goes back to sign-in. */
let onEnded: (message: string) => void = () => {};
export function whenSessionEnds(fn: (message: string) => void): void {
  onEnded = fn;
}

interface Options {
  body?: unknown;
  signal?: AbortSignal;
  /** Sent as If-Match: the call only succeeds on the version read (else 412 precondition_failed). */
  ifMatch?: string;
}

/** A JSON call; answers the parsed body (undefined for 204) or throws ApiError with the API's message. */
export async function api<T = unknown>(method: string, path: string, opts: Options = {}): Promise<T> {
  const res = await authed(method, path, opts);
  return (await parse(res)) as T;
}

/** A JSON call that also answers the resource's ETag (empty when it has none), for a later `ifMatch`. */
export async function apiTagged<T = unknown>(method: string, path: string, opts: Options = {}): Promise<{ body: T; etag: string }> {
  const res = await authed(method, path, opts);
  return { body: (await parse(res)) as T, etag: res.headers.get('etag') ?? '' };
}

/** A call that answers the Response as it is (images, the live stream); errors still throw ApiError. */
export async function raw(path: string, signal?: AbortSignal): Promise<Response> {
  const res = await authed('GET', path, signal ? { signal } : {});
  if (!res.ok) await parse(res);
  return res;
}

/**
 * An image the API serves only with the token (a snapshot, a face photo), as a blob: URL for an <img>. The caller
 * revokes it (URL.revokeObjectURL) when the image leaves the page.
 */
export async function imageUrl(path: string, signal?: AbortSignal): Promise<string> {
  return URL.createObjectURL(await (await raw(path, signal)).blob());
}

/** A call without a session (sign-in, invitation lookup, register). */
export async function open<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, { method, headers: jsonHeaders(body), body: body === undefined ? null : JSON.stringify(body), credentials: 'omit' });
  return (await parse(res)) as T;
}

function jsonHeaders(body: unknown, token?: string, ifMatch?: string): Record<string, string> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (ifMatch) headers['If-Match'] = ifMatch;
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

async function parse(res: Response): Promise<unknown> {
  observeClock(res);
  if (res.status === 204) return undefined;
  const type = res.headers.get('content-type') ?? '';
  const body: unknown = type.includes('json') ? await res.json().catch(() => undefined) : undefined;
  if (res.ok) return body;
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const message = typeof b.message === 'string' && b.message ? b.message : `The server answered ${res.status}.`;
  throw new ApiError(res.status, typeof b.error === 'string' ? b.error : 'http_' + res.status, message, b);
}

async function authed(method: string, path: string, opts: Options): Promise<Response> {
  const session = load();
  if (!session) {
    onEnded('Sign in to continue.');
    throw new ApiError(401, 'unauthorized', 'Sign in to continue.');
  }
  // The body is serialised once so that the retry sends exactly the same request.
  const body = opts.body === undefined ? null : JSON.stringify(opts.body);
  const send = (token: string) => fetch(path, { method, headers: jsonHeaders(opts.body, token, opts.ifMatch), body, signal: opts.signal ?? null, credentials: 'omit' });

  let token = session.access_token;
  // A token at (or past) the point where it should have been renewed (the tab slept, a timer was throttled):
  // renew it first. A failure here (head office unreachable) is not the call's: it goes out with the old token.
  if (due(session)) {
    const fresh = await refresh(token, true).catch(() => load());
    if (!fresh) throw new ApiError(401, 'unauthorized', 'Your session has ended. Sign in again.');
    token = fresh.access_token;
  }
  let res = await send(token);
  if (res.status === 401) {
    let fresh: Session | null = null;
    if ((await problemOf(res)).code === 'token_expired') {
      fresh = await refresh(token);
    } else {
      // A call sent just before another call (or tab) rotated the tokens carries an access token that no longer
      // exists: 401 unauthorized, not token_expired. Wait for that refresh; if the stored token changed, retry.
      // Another tab's refresh is waited for through the shared lock: it holds it from sending the refresh until it
      // has stored the new tokens, and head office retired the old access token in between, so a 401 seen here
      // while that tab has not stored them yet is not the end of the session. Its write may then still be on its
      // way to this tab (see `handOver`): the stored token is watched a moment before the session is given up.
      if (inflight) await inflight.catch(() => undefined);
      await withLock(async () => undefined, 15_000).catch(() => undefined); // at most 15 s: then as if it were not held
      const now = await storedOtherThan(token, HANDOVER_MS * 4);
      if (now && now.access_token !== token) fresh = now;
    }
    if (fresh) res = await send(fresh.access_token);
  }
  if (res.status === 401) {
    // A call whose page was left meanwhile cannot read its answer: that says nothing about the session.
    if (opts.signal?.aborted) throw new DOMException('The page was left.', 'AbortError');
    const message = (await problemOf(res)).message ?? 'Your session has ended. Sign in again.';
    endSession(message);
    throw new ApiError(401, 'unauthorized', message);
  }
  return res;
}

/** The error body of a refused call (`error` code and a message to show), read from a clone; empty when it is not JSON. */
async function problemOf(res: Response): Promise<{ code?: string; message?: string }> {
  try {
    const b = (await res.clone().json()) as { message?: unknown; error?: unknown };
    const code = typeof b.error === 'string' ? b.error : undefined;
    const message = code === 'token_expired' ? 'Your session has ended. Sign in again.' : typeof b.message === 'string' ? b.message : undefined;
    return { ...(code ? { code } : {}), ...(message ? { message } : {}) };
  } catch {
    return {};
  }
}

/** Ends the session in this browser (storage cleared) and returns to sign-in with `message`. */
export function endSession(message: string): void {
  clear();
  onEnded(message);
}

let inflight: Promise<Session> | null = null;

/**
 * Refreshes the session whose access token `stale` was refused as expired (or, `ahead`, is about to expire); one
 * refresh at a time.
 */
export function refresh(stale: string, ahead = false): Promise<Session> {
  inflight ??= new Promise<Session>((resolve, reject) => {
    withLock(async () => {
      let next: Session;
      try {
        next = await rotate(stale, ahead);
      } catch (err) {
        reject(err);
        return;
      }
      resolve(next);
      await handOver();
    }).catch(reject);
  }).finally(() => {
    inflight = null;
  });
  return inflight;
}

/*
 * Tabs see each other's localStorage writes a moment late: Chromium keeps a copy of it in each tab's process and
 * passes a write on to the others asynchronously, with no order against the Web Lock being released. A tab that
 * took the lock the instant another released it could still read the old tokens, and then present the refresh
 * token just retired, which head office takes for a stolen copy and answers by ending the session in every tab
 * (seen in a loaded test run: both tabs signed out). So the tab that rotated holds the lock a moment longer, and a
 * tab refused with tokens that look current watches them a moment before it gives up.
 */
const HANDOVER_MS = 250;

const handOver = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, HANDOVER_MS));

/** The stored session once its access token is no longer `token` (within `waitMs`), else as it is then. */
async function storedOtherThan(token: string, waitMs: number): Promise<Session | null> {
  const end = Date.now() + waitMs;
  for (;;) {
    const s = load();
    if (!s || s.access_token !== token || Date.now() >= end) return s;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/*
 * Refresh ahead of expiry. The envelope's `expires_at` is head office's clock; the browser's may differ, so the
 * difference is measured from the `Date` header of every answer (whole seconds, rounded down: the estimate assumes
 * head office is up to a second later, so renewal comes early rather than late). A token is renewed a quarter of
 * its life before it ends, at most a minute before (12 h tokens: a minute; a 6 s token: about a second and a half);
 * a token seen with under 4.5 s left is renewed on its 401 only. The timer only says when to look: each time it fires the stored session is read again (another tab may
 * have renewed it), and a call made when the token is already due renews it first (a sleeping laptop, a throttled
 * background tab). A renewal that fails for a transient reason (network, 5xx) signs nobody out: it is tried again,
 * and once the token has expired the 401 path takes over as before.
 */
let skewMs = 0; // head office's clock minus the browser's
let timer: ReturnType<typeof setTimeout> | undefined;
let failures = 0;
/** How long before its end each access token is renewed, fixed when the tab first sees the token. */
const leads = new Map<string, number>();

function observeClock(res: Response): void {
  const date = Date.parse(res.headers.get('date') ?? '');
  if (Number.isNaN(date)) return;
  const next = date + 1000 - Date.now();
  const moved = Math.abs(next - skewMs) > 2000;
  skewMs = next;
  if (!moved) return;
  leads.clear(); // placed with a wrong idea of head office's clock
  if (timer !== undefined) keepFresh();
}

/** When the token ends, in the browser's clock (ms). */
function endsAt(s: Session): number {
  return Date.parse(s.expires_at) - skewMs;
}

function leadOf(s: Session): number {
  let lead = leads.get(s.access_token);
  if (lead === undefined) {
    // Seen with under 4.5 s left (a head office set to few-second tokens, or a page opened just before the end): the
    // whole-second clock estimate cannot place a renewal ahead reliably, so that token is renewed on its 401 only.
    const left = endsAt(s) - Date.now();
    lead = left < 4500 ? -1 : Math.min(60_000, left / 4);
    if (leads.size > 20) leads.clear();
    leads.set(s.access_token, lead);
  }
  return lead;
}

function due(s: Session): boolean {
  if (Number.isNaN(Date.parse(s.expires_at))) return false;
  const lead = leadOf(s);
  return lead >= 0 && Date.now() >= endsAt(s) - lead;
}

/** Keeps the stored session's access token renewed ahead of its expiry while the console is open (idempotent). */
export function keepFresh(): void {
  clearTimeout(timer);
  timer = undefined;
  const s = load();
  if (!s || Number.isNaN(Date.parse(s.expires_at)) || leadOf(s) < 0) return;
  const retry = failures > 0 ? Math.min(30_000, 1000 * 2 ** failures) : 0;
  const wait = Math.max(retry, endsAt(s) - leadOf(s) - Date.now());
  // Looked at again at least every five minutes: the clock difference may have been measured meanwhile.
  timer = setTimeout(() => void renewIfDue(), Math.min(wait, 300_000));
}

async function renewIfDue(): Promise<void> {
  timer = undefined;
  const s = load();
  if (!s) return;
  if (due(s)) {
    try {
      await refresh(s.access_token, true);
      failures = 0;
    } catch {
      if (!load()) return; // the session ended (a refused refresh token): sign-in is shown already
      failures++;
    }
  }
  keepFresh();
}

/** Runs `work` holding the refresh lock shared by every tab; `waitMs`: give up (reject) if not held by then. */
function withLock<T>(work: () => Promise<T>, waitMs?: number): Promise<T> {
  const locks = (navigator as Navigator & { locks?: LockManager }).locks;
  if (!locks) return work();
  return (waitMs === undefined ? locks.request('footfall-refresh', work) : locks.request('footfall-refresh', { signal: AbortSignal.timeout(waitMs) }, work)) as Promise<T>;
}

async function rotate(stale: string, ahead: boolean): Promise<Session> {
  const current = load();
  if (!current) {
    endSession('Sign in to continue.');
    throw new ApiError(401, 'unauthorized', 'Sign in to continue.');
  }
  if (current.access_token !== stale) return current; // another tab (or an earlier call) already refreshed
  const res = await fetch('/api/auth/refresh', {
    method: 'POST',
    headers: jsonHeaders({}),
    body: JSON.stringify({ refresh_token: current.refresh_token }),
    credentials: 'omit',
  });
  observeClock(res);
  if (!res.ok) {
    const message = (await problemOf(res)).message ?? 'Your session has ended. Sign in again.';
    // Head office busy or restarting (429, 5xx): the refresh token was not used, so the session lives on; a renewal
    // ahead of expiry is simply tried again. Any other refusal (401: revoked, rotated already) ends it.
    if (ahead && (res.status === 429 || res.status >= 500)) throw new ApiError(res.status, 'refresh_failed', message);
    endSession(res.status === 401 ? message : 'Your session could not be renewed. Sign in again.');
    throw new ApiError(res.status, 'unauthorized', message);
  }
  const next = (await res.json()) as Session;
  save(next); // before anything else: the old refresh token is already dead
  keepFresh();
  return next;
}
