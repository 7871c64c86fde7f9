import type { z } from 'zod';

/**
 * What a middleware tells the OpenAPI generator (server/openapi/document.ts) about the route it sits in. The
 * generator reads these off the koa router's stack, so a route's request schemas and security are the very ones
 * that run: validate() records its zod schemas, auth() / agentAuth() their scheme and role.
 */
export interface RequestSchemas {
  body?: z.ZodType;
  query?: z.ZodType;
}

/** userBearer: a session from /api/auth/login; shopBearer: a shop PC's token; idToken: the provider's ID token (/auth). */
export type SecurityScheme = 'userBearer' | 'shopBearer' | 'idToken' | 'metricsBearer';

export interface SecurityNote {
  scheme: SecurityScheme;
  /** The least role a user rule lets through (server/policy.ts), with the 403 message. */
  least?: string;
  message?: string;
}

const REQUEST = Symbol.for('footfall.openapi.request');
const SECURITY = Symbol.for('footfall.openapi.security');

type Tagged = { [REQUEST]?: RequestSchemas; [SECURITY]?: SecurityNote };

/** Records the zod schemas a middleware validates the request with; returns the middleware itself. */
export function describesRequest<T extends object>(mw: T, schemas: RequestSchemas): T {
  (mw as Tagged)[REQUEST] = schemas;
  return mw;
}

/** Records the security scheme a middleware enforces; returns the middleware itself. */
export function describesSecurity<T extends object>(mw: T, note: SecurityNote): T {
  (mw as Tagged)[SECURITY] = note;
  return mw;
}

export function requestSchemasOf(mw: unknown): RequestSchemas | undefined {
  return typeof mw === 'function' ? (mw as Tagged)[REQUEST] : undefined;
}

export function securityOf(mw: unknown): SecurityNote | undefined {
  return typeof mw === 'function' ? (mw as Tagged)[SECURITY] : undefined;
}

/** A route a plain middleware answers without a koa router (a dispatch table, e.g. the embedded identity provider). */
export interface DeclaredRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** As OpenAPI writes it: `/identitytoolkit.googleapis.com/v1/accounts:signUp`, `/x/{id}`. */
  path: string;
}

const ROUTES = Symbol.for('footfall.openapi.routes');

/**
 * Records the routes a plain middleware answers, so that the generator and the coverage test see them as they see a
 * router's: `app.use(describesRoutes(idpMiddleware, [{ method: 'POST', path: '/securetoken.googleapis.com/v1/token' }]))`.
 */
export function describesRoutes<T extends object>(mw: T, routes: DeclaredRoute[]): T {
  (mw as { [ROUTES]?: DeclaredRoute[] })[ROUTES] = routes;
  return mw;
}

export function routesDeclaredBy(mw: unknown): DeclaredRoute[] | undefined {
  return typeof mw === 'function' ? (mw as { [ROUTES]?: DeclaredRoute[] })[ROUTES] : undefined;
}
