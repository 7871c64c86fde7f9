/**
 * The spec's error envelope: `{ error, message }`. `error` is a stable code; `message` is shown to a person.
 * Codes the spec leaves open (docs/api-conventions.md): invalid_request (400), unauthorized (401),
 * not_found (404), method_not_allowed (405), payload_too_large (413), unsupported_media_type (415), internal (500),
 * database_busy and database_unavailable (503, with Retry-After);
 * request_timeout (408) and headers_too_large (431) for what Node's HTTP parser refuses (./client-errors.ts).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    /** Headers the answer carries (Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new HttpError(400, 'invalid_request', message, extra);
export const unauthorized = (message = 'Sign in to continue.') => new HttpError(401, 'unauthorized', message);
export const tokenExpired = () => new HttpError(401, 'token_expired', 'Your session token has expired. Refresh it and try again.');
export const forbidden = (message: string) => new HttpError(403, 'forbidden', message);
export const notFound = (what = 'That') => new HttpError(404, 'not_found', `${what} was not found.`);
export const conflict = (message: string, code = 'conflict') => new HttpError(409, code, message);
export const preconditionFailed = (message: string) => new HttpError(412, 'precondition_failed', message);
/** The 404 of a path nothing answers; admin routes answer exactly this to anyone but the platform admin. */
export const noSuchRoute = (method: string, path: string) => new HttpError(404, 'not_found', `There is no ${method} ${path}.`);

/**
 * 503 with Retry-After: the database refused the moment, not the request (a serialization failure that outlasted the
 * store's re-runs on PostgreSQL, SQLite busy past its timeout). Nothing was written; the same request may be sent again.
 */
export const databaseBusyError = () =>
  new HttpError(503, 'database_busy', 'The database was too busy with other changes to take this one; nothing was changed. Try again in a moment.', {}, { 'Retry-After': '1' });
/** 503 with Retry-After: the database cannot be reached or is out of resources (connections, disk). */
export const databaseUnavailableError = () =>
  new HttpError(503, 'database_unavailable', 'The database cannot be reached right now, so this was not done. Try again shortly; if it persists, tell whoever runs head office.', {}, { 'Retry-After': '5' });
