import { z } from 'zod';
import type { RequestSchemas, SecurityScheme } from '../http/describe.js';

/**
 * What a route's OpenAPI entry adds to what the generator reads off the router (docs/api.md, "Registering a route").
 * Request schemas and security come from the route's own validate() and auth() middleware; a route doc names the
 * summary and the responses, and may add a request schema the stack cannot show (a body validated by hand).
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** `'GET /api/visitors/{id}'`: the method and the path as OpenAPI writes it (koa's `:id` is `{id}`). */
export type RouteKey = `${Method} /${string}`;

export interface ResponseDoc {
  description: string;
  /** A JSON body (application/json), as the presenter shapes it. */
  json?: z.ZodType;
  /** A body of another type (`image/jpeg`, `text/plain`, `text/csv`), instead of or beside the JSON one. */
  media?: string | string[];
  /** A server-sent event stream (text/event-stream): its events, each with the JSON of its `data:` line. */
  events?: Record<string, { description: string; data?: z.ZodType }>;
  headers?: Record<string, string>;
}

export interface RouteDoc {
  summary: string;
  description?: string;
  tags?: string[];
  /** Request parts the middleware stack does not carry (validated in the handler or by a dynamic schema). */
  request?: RequestSchemas & {
    /** A non-JSON request body: its media type and a description. */
    media?: { type: string; description: string };
    /** Request headers the route reads. */
    headers?: Record<string, string>;
  };
  /** Descriptions of the path's and the query's parameters, by name (a description on the zod schema wins). */
  params?: Record<string, string>;
  /** Security the stack does not show (checked in the handler); `[]` means none. */
  security?: SecurityScheme[];
  /** Every status the route answers with, success first. Error statuses use the envelope unless they say otherwise. */
  responses: Record<number, ResponseDoc | string>;
}

export type RouteDocs = Partial<Record<RouteKey, RouteDoc>>;

/** Declares a domain's route docs (typed; nothing else). */
export function routeDocs(docs: RouteDocs): RouteDocs {
  return docs;
}

// ---- Shapes many domains share ------------------------------------------------------------------------

/** RFC 3339 UTC timestamp as stored (`toISOString()`). */
export const Timestamp = z.string().meta({ format: 'date-time', description: 'RFC 3339 timestamp (UTC)' });
export const Uuid = z.string().meta({ format: 'uuid' });

/** The /api error envelope: `error` a stable code, `message` for a person; some errors add fields. */
export const ApiError = z
  .object({
    error: z.string().meta({ description: 'Stable error code, e.g. invalid_request, unauthorized, token_expired, forbidden, not_found, conflict' }),
    message: z.string().meta({ description: 'A sentence to show a person' }),
  })
  .catchall(z.unknown())
  .meta({ id: 'ApiError', description: 'The /api error envelope (head-office-api spec, Errors). A few errors add fields, e.g. invitation_id, owners.' });

/** The /auth error envelope (auth-service spec, Errors). */
export const AuthError = z
  .object({
    code: z.string().meta({ description: 'UNAUTHENTICATED, FORBIDDEN, VALIDATION_ERROR or AUTH_PROVIDER_ERROR; NOT_FOUND, METHOD_NOT_ALLOWED, INTERNAL for what is not an auth route' }),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).meta({ description: '`reason` (a lower-case word), and e.g. `fields`, `retryAfterSeconds`, `providerCode`' }),
    requestId: z.string(),
  })
  .meta({ id: 'AuthError', description: 'The /auth error envelope: { code, message, details, requestId }.' });

/** The spec's Image object. */
export const ImageObject = z
  .union([
    z.object({ available: z.literal(true), url: z.string(), auth: z.literal(true) }),
    z.object({ available: z.literal(false), reason: z.string() }),
  ])
  .meta({ id: 'Image', description: 'A photo link (relative URL, fetched with the same bearer token), or why there is none.' });
