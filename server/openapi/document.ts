import { z } from 'zod';
import { requestSchemasOf, routesDeclaredBy, securityOf, type RequestSchemas, type SecurityNote, type SecurityScheme } from '../http/describe.js';
import { appVersion } from '../paths.js';
import { ApiError, AuthError, type Method, type ResponseDoc, type RouteDoc, type RouteDocs, type RouteKey } from './registry.js';

/**
 * The OpenAPI 3.1 document, generated: paths, methods, request schemas and security are read off the koa routers
 * the app really runs (validate() and auth() tag their middleware, server/http/describe.ts); summaries and response
 * schemas come from each domain's route docs (server/<domain>/openapi.ts, listed in ./domains.ts). zod 4 writes
 * the JSON Schema (draft 2020-12, OpenAPI 3.1's dialect).
 */

export interface RouteInfo {
  method: Method;
  /** OpenAPI form: /api/visitors/{id}. */
  path: string;
  /** Every middleware the route runs: its router's use() middleware, then its own. */
  stack: unknown[];
}

type Json = Record<string, unknown>;

interface Layer {
  path: string;
  methods: string[];
  stack: unknown[];
  match(path: string): boolean;
}

const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** koa's `/:id/x` as OpenAPI's `/{id}/x`; an escaped colon (`/v1/accounts\\:signUp`) is a literal `:`. */
export const openapiPath = (koaPath: string) => koaPath.replace(/(?<!\\):(\w+)/g, '{$1}').replace(/\\:/g, ':');

/**
 * Every route of an app: its routers' (the middleware made by `router.routes()` carries its router, one made by
 * mountRouters (server/http/mount.ts) its routers), and those a plain middleware declares with describesRoutes()
 * (server/http/describe.ts).
 */
export function routesOf(app: { middleware: readonly unknown[] }): RouteInfo[] {
  const out: RouteInfo[] = [];
  for (const mw of app.middleware) {
    for (const declared of routesDeclaredBy(mw) ?? []) out.push({ method: declared.method, path: declared.path, stack: [mw] });
    const mounted = (mw as { routers?: { stack: Layer[] }[] }).routers;
    const router = (mw as { router?: { stack: Layer[] } }).router;
    for (const r of mounted ?? (router ? [router] : [])) out.push(...routesOfRouter(r));
  }
  return out;
}

function routesOfRouter(router: { stack: Layer[] }): RouteInfo[] {
  const out: RouteInfo[] = [];
  const uses = router.stack.filter((l) => l.methods.length === 0);
  for (const layer of router.stack) {
    if (layer.methods.length === 0) continue;
    const before = uses.filter((u) => u.match(layer.path)).flatMap((u) => u.stack);
    for (const m of layer.methods) {
      if (!(METHODS as readonly string[]).includes(m)) continue;
      out.push({ method: m as Method, path: openapiPath(layer.path), stack: [...before, ...layer.stack] });
    }
  }
  return out;
}

export const keyOf = (r: { method: string; path: string }) => `${r.method} ${r.path}` as RouteKey;

/** Routes the document lacks, and documented routes nothing serves. Both empty when the document is complete. */
export function coverage(routes: RouteInfo[], docs: RouteDocs): { undocumented: string[]; unrouted: string[] } {
  const served = new Set<string>(routes.map(keyOf));
  return {
    undocumented: [...served].filter((k) => !docs[k as RouteKey]).sort(),
    unrouted: Object.keys(docs)
      .filter((k) => !served.has(k))
      .sort(),
  };
}

/** Merges domains' route docs; one route documented twice is a mistake. */
export function mergeDocs(parts: RouteDocs[]): RouteDocs {
  const all: RouteDocs = {};
  for (const part of parts) {
    for (const [k, v] of Object.entries(part) as [RouteKey, RouteDoc][]) {
      if (all[k]) throw new Error(`OpenAPI: ${k} is documented twice`);
      all[k] = v;
    }
  }
  return all;
}

// ---- JSON Schema from zod -----------------------------------------------------------------------------

/** Converts zod schemas, moving schemas with a `.meta({ id })` into components.schemas (shared by reference). */
class Schemas {
  readonly components: Record<string, Json> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', reused: 'inline' }) as Json;
    delete json.$schema;
    const defs = (json.$defs ?? {}) as Record<string, Json>;
    delete json.$defs;
    const rename: Record<string, string> = {};
    const fix = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(fix);
      if (v && typeof v === 'object') {
        const o: Json = {};
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/')) o[k] = `#/components/schemas/${rename[x.slice(8)] ?? x.slice(8)}`;
          else o[k] = fix(x);
        }
        return o;
      }
      return v;
    };
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    for (const [id, def] of Object.entries(defs)) {
      const known = this.components[id];
      if (!known || same(known, fix(def))) continue;
      // The same shape as a request (defaults optional) differs from the response: a second component.
      const name = `${id}${io === 'input' ? 'Input' : 'Output'}`;
      rename[id] = name;
    }
    for (const [id, def] of Object.entries(defs)) {
      const name = rename[id] ?? id;
      const fixed = fix(def) as Json;
      const known = this.components[name];
      if (known && !same(known, fixed)) throw new Error(`OpenAPI: two different schemas are named ${name}`);
      this.components[name] = fixed;
    }
    return fix(json) as Json;
  }
}

// ---- Operations ---------------------------------------------------------------------------------------

const SCHEMES: Record<SecurityScheme, Json> = {
  userBearer: {
    type: 'http',
    scheme: 'bearer',
    description:
      'A user session: the opaque `access_token` of POST /api/auth/login (or refresh, register). Expired: 401 `token_expired`; refresh once, behind one lock (docs/api.md).',
  },
  shopBearer: {
    type: 'http',
    scheme: 'bearer',
    description: "A shop PC's own token (`ffs_...`), from POST /api/agent/enrol. User routes refuse it; shop-PC routes refuse user sessions.",
  },
  idToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: "The identity provider's ID token (the `sessionToken` of /auth sign-in), verified against the provider's keys and this service's revocations.",
  },
  metricsBearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'The Prometheus scrape token (FOOTFALL_METRICS_TOKEN). Without it configured, /metrics does not exist (404).',
  },
};

const TAGS: [prefix: string, tag: string, description: string][] = [
  ['/api/auth/', 'Sessions', 'Sign-in with email and password, rotating tokens, devices, invitations'],
  ['/api/team', 'Team', 'Members and invitations'],
  ['/api/admin/', 'Platform administration', 'Companies; the platform admin only (404 to anyone else)'],
  ['/api/sites', 'Shops', 'Shops, their checks and enrolment codes'],
  ['/api/cameras', 'Cameras', 'Cameras, checks, snapshots and the live view'],
  ['/api/agent/', 'Shop PC', "The shop-PC agent's HTTP half (docs/agent-protocol.md); shop-PC token"],
  ['/api/visits', 'Arrivals', 'The arrivals feed: polling with a cursor, and server-sent events'],
  ['/api/visitors/{id}/purchases', 'Purchases', 'Sales recorded against customers'],
  ['/api/purchases', 'Purchases', 'Sales recorded against customers'],
  ['/api/visitors', 'Customers', 'Customers (visitors), their profiles, history and photos'],
  ['/api/faces/', 'Customers', 'Customers (visitors), their profiles, history and photos'],
  ['/api/reports/', 'Reports', 'Footfall and conversion'],
  ['/api/audit', 'Privacy', 'The audit trail, privacy settings and subject access'],
  ['/api/company/privacy', 'Privacy', 'The audit trail, privacy settings and subject access'],
  ['/api/assistant', 'Assistant', 'Questions about the business in plain language'],
  ['/api/openapi.json', 'Reference', 'This document'],
  ['/console/', 'Console', 'The web console (GET / to a browser)'],
  ['/auth/', 'Auth service', 'Phone and client sign-in through the identity provider (auth-service spec v2); errors use its own envelope'],
  ['/identitytoolkit.googleapis.com/', 'Identity provider', "The embedded identity provider's Google-compatible REST paths"],
  ['/securetoken.googleapis.com/', 'Identity provider', "The embedded identity provider's Google-compatible REST paths"],
  ['/healthz', 'Operations', 'Health and metrics'],
  ['/metrics', 'Operations', 'Health and metrics'],
];

function tagOf(path: string): string {
  return TAGS.find(([p]) => path === p || path.startsWith(p))?.[1] ?? 'Other';
}

const isAuthService = (path: string) => path === '/auth' || path.startsWith('/auth/');

function errorResponse(path: string, description: string): Json {
  const ref = isAuthService(path) ? 'AuthError' : 'ApiError';
  return { description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } };
}

/** The error statuses a route's stack implies (bad input, no or wrong token, role too low, nothing at that id). */
function impliedErrors(path: string, request: RequestSchemas, security: SecurityNote | undefined, docSecurity: SecurityScheme[] | undefined): Record<number, string> {
  const out: Record<number, string> = {};
  if (request.body || request.query) out[400] = 'The request is not valid (the message names the field).';
  const schemes = docSecurity ?? (security ? [security.scheme] : []);
  if (schemes.length > 0) out[401] = 'No token, an unknown or revoked one, or (user sessions) `token_expired`: refresh once and retry.';
  if (security?.least === 'admin') out[404] = 'Anyone but the platform admin: this path does not exist for them.';
  else if (security?.least === 'manager' || security?.least === 'owner') out[403] = `A role below ${security.least}: ${security.message ?? 'forbidden'}`;
  if (/\{\w+\}/.test(path)) out[404] ??= 'Nothing with that id here (another company’s is 404 too).';
  return out;
}

function responseObject(path: string, status: number, doc: ResponseDoc | string, schemas: Schemas): Json {
  const r: ResponseDoc = typeof doc === 'string' ? { description: doc } : doc;
  const out: Json = { description: r.description };
  const content: Json = {};
  if (r.json) content['application/json'] = { schema: schemas.convert(r.json, 'output') };
  for (const media of r.media === undefined ? [] : [r.media].flat()) content[media] = { schema: { type: 'string', contentMediaType: media } };
  if (r.events) {
    const events = Object.entries(r.events).map(([name, e]) => ({ event: name, description: e.description, ...(e.data ? { data: schemas.convert(e.data, 'output') } : {}) }));
    content['text/event-stream'] = {
      schema: { type: 'string', description: 'Server-sent events (text/event-stream); see x-events for each event and its JSON data.' },
      'x-events': events,
    };
  }
  if (Object.keys(content).length > 0) out.content = content;
  else if (status >= 400) return { ...errorResponse(path, r.description), ...(r.headers ? { headers: headersOf(r.headers) } : {}) };
  if (r.headers) out.headers = headersOf(r.headers);
  return out;
}

const headersOf = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([name, description]) => [name, { description, schema: { type: 'string' } }]));

function operationId(method: string, path: string): string {
  const words = path
    .replace(/[{}]/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join('');
}

function operation(route: RouteInfo, doc: RouteDoc, schemas: Schemas): Json {
  const fromStack: RequestSchemas = {};
  let security: SecurityNote | undefined;
  for (const mw of route.stack) {
    Object.assign(fromStack, requestSchemasOf(mw));
    security = securityOf(mw) ?? security;
  }
  const request: RequestSchemas = { ...fromStack, ...(doc.request?.body ? { body: doc.request.body } : {}), ...(doc.request?.query ? { query: doc.request.query } : {}) };
  const schemes = doc.security ?? (security ? [security.scheme] : []);

  const parameters: Json[] = [];
  for (const m of route.path.matchAll(/\{(\w+)\}/g)) {
    parameters.push({ name: m[1], in: 'path', required: true, description: doc.params?.[m[1]!] ?? '', schema: { type: 'string' } });
  }
  if (request.query) {
    const q = schemas.convert(request.query, 'input');
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((q.properties ?? {}) as Record<string, Json>)) {
      const { description, ...rest } = schema;
      const text = description ?? doc.params?.[name];
      parameters.push({ name, in: 'query', required: required.has(name), ...(text ? { description: text } : {}), schema: rest });
    }
  }
  for (const [name, description] of Object.entries(doc.request?.headers ?? {})) parameters.push({ name, in: 'header', required: false, description, schema: { type: 'string' } });

  const op: Json = {
    operationId: operationId(route.method, route.path),
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: doc.tags ?? [tagOf(route.path)],
    security: schemes.map((s) => ({ [s]: [] })),
    ...(security?.least ? { 'x-footfall-role': security.least } : {}),
  };
  if (parameters.length) op.parameters = parameters;
  if (request.body) {
    const body = schemas.convert(request.body, 'input');
    const content: Json = { 'application/json': { schema: body } };
    for (const media of doc.request?.alsoAs ?? []) content[media] = { schema: body };
    op.requestBody = { required: ((body.required as unknown[] | undefined) ?? []).length > 0, content };
  } else if (doc.request?.media) {
    op.requestBody = { required: true, description: doc.request.media.description, content: { [doc.request.media.type]: { schema: { type: 'string', contentMediaType: doc.request.media.type } } } };
  }

  const responses: Json = {};
  const documented = doc.responses;
  const implied = impliedErrors(route.path, request, security, doc.security);
  const statuses = [...new Set([...Object.keys(documented), ...Object.keys(implied)].map(Number))].sort((a, b) => a - b);
  for (const s of statuses) responses[String(s)] = responseObject(route.path, s, documented[s] ?? implied[s]!, schemas);
  responses.default = errorResponse(route.path, 'Any other error, in the envelope (5xx: no details; the X-Request-Id header names it in the log).');
  op.responses = responses;
  return op;
}

export interface BuildOptions {
  /** Documented routes nothing serves are kept, so the coverage check can see them (default true). */
  keepUnrouted?: boolean;
}

/** The OpenAPI document for these routes and docs. Undocumented routes are left out (the coverage test names them). */
export function buildDocument(routes: RouteInfo[], docs: RouteDocs, opts: BuildOptions = {}): Json {
  const schemas = new Schemas();
  schemas.convert(ApiError, 'output');
  schemas.convert(AuthError, 'output');
  const paths: Record<string, Json> = {};
  const add = (route: RouteInfo, doc: RouteDoc) => {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, doc, schemas);
  };
  for (const route of routes) {
    const doc = docs[keyOf(route)];
    if (doc) add(route, doc);
  }
  if (opts.keepUnrouted ?? true) {
    const served = new Set<string>(routes.map(keyOf));
    for (const [key, doc] of Object.entries(docs) as [RouteKey, RouteDoc][]) {
      if (served.has(key)) continue;
      const [method, path] = key.split(' ') as [Method, string];
      add({ method, path, stack: [] }, doc);
    }
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  const usedTags = new Set(Object.values(sortedPaths).flatMap((p) => Object.values(p).flatMap((op) => (op as { tags: string[] }).tags)));
  const tags = [...new Map(TAGS.filter(([, t]) => usedTags.has(t)).map(([, name, description]) => [name, { name, description }])).values()];
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Footfall head office',
      version: appVersion(),
      description:
        'Every route head office serves: the LAN API under /api (web console, mobile app, shop PCs under /api/agent), the auth service under /auth, ' +
        'the embedded identity provider’s Google-compatible paths, GET / (a pointer), health and metrics. Generated from the zod schemas the routes validate with (server/openapi). How a mobile client signs in, refreshes and ' +
        'follows arrivals: docs/api.md.',
    },
    servers: [{ url: '/', description: 'This head office' }],
    tags,
    paths: sortedPaths,
    components: { schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))), securitySchemes: SCHEMES },
  };
}
