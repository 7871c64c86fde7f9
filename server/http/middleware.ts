import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Ctx, Mw } from '../context.js';
import { NoEncryptionKeyError } from '../crypto/keys.js';
import { authServiceEnvelope, isAuthServicePath } from '../auth-service/errors.js';
import { databaseBusy, databaseUnreachable } from '../db/unavailable.js';
import { HttpError, badRequest, databaseBusyError, databaseUnavailableError, noSuchRoute } from './errors.js';

const validRequestId = /^[\w.:-]{1,128}$/;

/** The request's id: the caller's X-Request-Id when sane, else a new one. */
export function requestIdOf(given: string | undefined): string {
  return given !== undefined && validRequestId.test(given) ? given : randomUUID();
}

/** Every request gets an id (requestIdOf). Echoed in the response and logs. */
export const requestId: Mw = (ctx, next) => {
  ctx.state.requestId = requestIdOf(ctx.get('X-Request-Id'));
  ctx.set('X-Request-Id', ctx.state.requestId);
  ctx.state.logFields = { req_id: ctx.state.requestId };
  return next();
};

/** The headers every /api and /auth answer carries (OWASP ASVS 8.1.1, 14.4.3): never stored by a cache, never sniffed. */
export const privateAnswerHeaders = [
  ['Cache-Control', 'no-store'],
  ['X-Content-Type-Options', 'nosniff'],
] as const;

/** Whether a path is one of the API's (/api, /auth): its answers carry privateAnswerHeaders. */
export function isPrivatePath(path: string): boolean {
  return path === '/api' || path.startsWith('/api/') || path === '/auth' || path.startsWith('/auth/');
}

/**
 * Sets privateAnswerHeaders on every /api and /auth answer, errors included (set before the route runs, and Koa keeps
 * headers on a handled error). A route may name more directives (`no-store, no-transform`), never drop `no-store`.
 */
export const privateAnswers: Mw = (ctx, next) => {
  if (isPrivatePath(ctx.path)) for (const [k, v] of privateAnswerHeaders) ctx.set(k, v);
  return next();
};

/**
 * The request's logger, made on first use: the server's logger with the request's fields (`req_id`, then `user_id` or
 * `shop_id` once the caller is known). Most requests log only their access-log line, which is written from the
 * fields directly (same JSON line), so a pino child logger per request is made only when a route logs something.
 * Installed on the app's context (buildApp) as `ctx.log`. The server's logger is read from `ctx.deps.log` at each
 * request (as the access-log line does), so replacing it takes effect for both.
 */
export function defineRequestLog(context: object, fallback: Logger): void {
  Object.defineProperty(context, 'log', {
    configurable: true,
    get(this: Ctx & { _log?: Logger }): Logger {
      if (this._log) return this._log;
      const base = this.deps?.log ?? fallback;
      const fields = this.state?.logFields;
      return fields ? (this._log = base.child(fields)) : base;
    },
    set(this: Ctx & { _log?: Logger }, value: Logger) {
      this._log = value;
    },
  });
}

/** Adds a field to the request's log lines (`user_id` once auth() knows the caller, `shop_id` for a shop PC). */
export function addLogField(ctx: Ctx, key: string, value: string): void {
  const own = (ctx as Ctx & { _log?: Logger })._log;
  if (own) ctx.log = own.child({ [key]: value });
  else if (ctx.state.logFields) ctx.state.logFields[key] = value;
  else ctx.log = ctx.log.child({ [key]: value });
}

/** One access-log line per request; never logs headers or bodies (they carry tokens and passwords). */
export const accessLog: Mw = async (ctx, next) => {
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    const ms = logMs(Number(process.hrtime.bigint() - started));
    const own = (ctx as Ctx & { _log?: Logger })._log;
    if (own) own.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    else logAccess(ctx.deps.log, { ...ctx.state.logFields, method: ctx.method, path: ctx.path, status: ctx.status, ms });
  }
};

/** A duration in nanoseconds as an access-log line's `ms`: milliseconds to a tenth. */
export function logMs(ns: number): number {
  return Math.round(ns / 1e5) / 10;
}

/** An access-log line from its fields (req_id, user_id or shop_id, method, path, status, ms). */
export function logAccess(log: Logger, fields: Record<string, string | number>): void {
  accessLoggerOf(log).info(fields, 'request');
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * The server's logger for access-log lines: a child with no bindings and no redaction, so the same line without
 * pino's redaction pass (a fifth of a line's cost). Its fields (req_id, user_id, shop_id, method, path, status, ms)
 * are none of the redacted keys (server/logger.ts), so the line is byte for byte the same.
 */
function accessLoggerOf(base: Logger): Logger {
  let l = accessLoggers.get(base);
  if (!l) accessLoggers.set(base, (l = base.child({}, { redact: [] })));
  return l;
}

/**
 * Turns every failure into the spec's `{ error, message }` envelope; unexpected errors are 500 with no details.
 * Paths under /auth (the authentication service) answer that service's `{ code, message, details, requestId }`.
 */
export const errors: Mw = async (ctx, next) => {
  try {
    await next();
    if (ctx.body === undefined || ctx.body === null) {
      // Nothing answered: an unknown route, or a router's allowedMethods() that set 405/501 and an Allow header.
      if (ctx.status === 404) throw noSuchRoute(ctx.method, ctx.path);
      if (ctx.status === 405 || ctx.status === 501) throw toHttpError({ status: ctx.status });
    }
  } catch (err) {
    const e = toHttpError(err);
    // The authentication service logs its provider failures itself (a warning, once at start for not_configured).
    if (e.status >= 500 && e.code !== 'AUTH_PROVIDER_ERROR') ctx.log.error({ err }, 'request failed');
    ctx.status = e.status;
    for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
    ctx.body = isAuthServicePath(ctx.path) ? authServiceEnvelope(e, ctx.state.requestId) : { error: e.code, message: e.message, ...e.extra };
    if (e.status === 405 && err && typeof err === 'object' && 'headers' in err) {
      const allow = (err as { headers?: Record<string, string> }).headers?.Allow;
      if (allow) ctx.set('Allow', allow);
    }
  }
};

function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof NoEncryptionKeyError) {
    return new HttpError(503, 'no_encryption_key', 'This server has no usable encryption key, so it cannot do this now. Ask whoever runs head office to restore the key file (the server log says what is wrong) and restart it.');
  }
  if (databaseBusy(err)) return databaseBusyError();
  if (databaseUnreachable(err)) return databaseUnavailableError();
  const e = err as { status?: number; type?: string; expose?: boolean; message?: string };
  switch (e?.status) {
    case 400:
      if (err instanceof SyntaxError) return new HttpError(400, 'invalid_request', 'The request body is not valid JSON: send one JSON object.');
      return new HttpError(400, 'invalid_request', e.expose && e.message ? e.message : 'The request is not valid.');
    case 405:
      return new HttpError(405, 'method_not_allowed', 'That method is not allowed on this path.');
    case 413:
      return new HttpError(413, 'payload_too_large', 'The request body is too large.');
    case 415:
      return new HttpError(415, 'unsupported_media_type', 'Send the request body as JSON (Content-Type: application/json).');
    case 501:
      return new HttpError(501, 'not_implemented', 'That method is not implemented on this path.');
  }
  return new HttpError(500, 'internal', 'Something went wrong on the server. The request id identifies it in the logs.');
}

/**
 * Runs the body parser but leaves its failure (JSON that does not parse, a body over the limit) to the route that
 * reads the body (validate): a path that does not exist, or that a caller may not see (/api/admin/*), answers its
 * plain 404 whatever the body, so a malformed body cannot tell whether a path is there.
 */
export function deferBodyErrors(parse: Mw, parsedMethods: readonly string[]): Mw {
  const parsing: Mw = async (ctx, next) => {
    try {
      await parse(ctx, async () => {});
    } catch (err) {
      ctx.state.bodyError = unreadableBody(err);
    }
    await next();
  };
  // The parser reads no other method's body (it would only call next): GET polls skip it, and the async frame.
  return (ctx, next) => (parsedMethods.includes(ctx.method.toUpperCase()) ? parsing(ctx, next) : next());
}

/**
 * The parser's own failures carry their 4xx status (400 bad JSON, 413 too large, 415 unknown charset or encoding).
 * One without a status is the decompressor's: a Content-Encoding that does not match the bytes (zlib's "incorrect
 * header check"). That is the caller's body too, so a 400, never a 500.
 */
function unreadableBody(err: unknown): unknown {
  const status = (err as { status?: unknown } | null | undefined)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return err;
  return badRequest('The request body could not be decoded: it does not match its Content-Encoding. Send it uncompressed, or compressed as it says.');
}
