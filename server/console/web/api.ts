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
}

/** A JSON call; answers the parsed body (undefined for 204) or throws ApiError with the API's message. */
export async function api<T = unknown>(method: string, path: string, opts: Options = {}): Promise<T> {
  const res = await authed(method, path, opts);
  return (await parse(res)) as T;
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

function jsonHeaders(body: unknown, token?: string): Record<string, string> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

async function parse(res: Response): Promise<unknown> {
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
  const send = (token: string) => fetch(path, { method, headers: jsonHeaders(opts.body, token), body, signal: opts.signal ?? null, credentials: 'omit' });

  const token = session.access_token;
  let res = await send(token);
  if (res.status === 401) {
    let fresh: Session | null = null;
    if ((await problemOf(res)).code === 'token_expired') {
      fresh = await refresh(token);
    } else {
      // A call sent just before another call (or tab) rotated the tokens carries an access token that no longer
      // exists: 401 unauthorized, not token_expired. Wait for that refresh; if the stored token changed, retry.
      if (inflight) await inflight.catch(() => undefined);
      const now = load();
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

/** Refreshes the session whose access token `stale` was refused as expired; one refresh at a time. */
export function refresh(stale: string): Promise<Session> {
  inflight ??= withLock(() => rotate(stale)).finally(() => {
    inflight = null;
  });
  return inflight;
}

function withLock<T>(work: () => Promise<T>): Promise<T> {
  const locks = (navigator as Navigator & { locks?: LockManager }).locks;
  return locks ? (locks.request('footfall-refresh', work) as Promise<T>) : work();
}

async function rotate(stale: string): Promise<Session> {
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
  if (!res.ok) {
    const message = (await problemOf(res)).message ?? 'Your session has ended. Sign in again.';
    endSession(res.status === 401 ? message : 'Your session could not be renewed. Sign in again.');
    throw new ApiError(res.status, 'unauthorized', message);
  }
  const next = (await res.json()) as Session;
  save(next); // before anything else: the old refresh token is already dead
  return next;
}
