import Router from '@koa/router';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { OpenApiMismatch, responseChecker } from '../../test/support/openapi-check.js';
import { buildApp } from '../app.js';
import type { AppRouter } from '../context.js';
import { describesRoutes } from '../http/describe.js';
import { buildDocument, coverage, keyOf, openapiPath, routesOf } from './document.js';
import { allDocs } from './domains.js';
import type { RouteDocs } from './registry.js';

type Json = Record<string, any>;

let h: Harness;
let co: Company;
let served: Json;

beforeAll(async () => {
  h = await startHarness();
  co = await h.company();
  const r = await h.request<Json>('GET', '/api/openapi.json');
  expect(r.status).toBe(200);
  served = r.body;
});
afterAll(async () => {
  await h?.close();
});

const operationsOf = (doc: Json) =>
  Object.entries(doc.paths as Record<string, Json>)
    .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();

describe('GET /api/openapi.json', () => {
  it('is served without a token and passes an OpenAPI 3.1 validator', async () => {
    expect(served.openapi).toBe('3.1.0');
    const result = await new Validator().validate(served as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents both error envelopes and the four security schemes', () => {
    const { schemas, securitySchemes } = served.components;
    expect(schemas.ApiError.required).toEqual(['error', 'message']);
    expect(schemas.AuthError.required).toEqual(['code', 'message', 'details', 'requestId']);
    expect(Object.keys(securitySchemes).sort()).toEqual(['idToken', 'metricsBearer', 'shopBearer', 'userBearer']);
    // /api errors use the /api envelope, /auth errors the service's.
    expect(served.paths['/api/team'].get.responses.default.content['application/json'].schema.$ref).toBe('#/components/schemas/ApiError');
    expect(served.paths['/auth/session'].get.responses['401'].content['application/json'].schema.$ref).toBe('#/components/schemas/AuthError');
  });

  it('reads request schemas and security off the routes themselves', () => {
    const login = served.paths['/api/auth/login'].post;
    expect(login.security).toEqual([]);
    expect(login.requestBody.content['application/json'].schema.required).toEqual(['email', 'password']);
    const invite = served.paths['/api/team/invitations'].post;
    expect(invite.security).toEqual([{ userBearer: [] }]);
    expect(invite['x-footfall-role']).toBe('manager');
    expect(Object.keys(invite.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', 'default']));
    expect(served.paths['/api/agent/me'].get.security).toEqual([{ shopBearer: [] }]);
    expect(served.paths['/auth/session'].get.security).toEqual([{ idToken: [] }]);
    const feed = served.paths['/api/visits'].get.parameters.map((p: Json) => `${p.in}:${p.name}`);
    expect(feed).toEqual(['query:limit', 'query:cursor', 'query:site', 'query:site_id']);
    expect(served.paths['/api/visits'].get.parameters[1].description).toContain('cursor');
    expect(served.paths['/api/visitors/{id}'].get.parameters[0]).toMatchObject({ name: 'id', in: 'path', required: true });
    // Admin routes: 404 to anyone else, as the route answers.
    expect(served.paths['/api/admin/clients'].get.responses['404']).toBeDefined();
  });

  it('describes the event streams', () => {
    const stream = served.paths['/api/visits/stream'].get.responses['200'].content['text/event-stream'];
    expect(stream['x-events'][0]).toMatchObject({ event: 'arrival', data: { $ref: '#/components/schemas/Arrival' } });
    const live = served.paths['/api/cameras/{id}/live'].get.responses['200'].content['text/event-stream'];
    expect(live['x-events'].map((e: Json) => e.event)).toEqual(['waiting', 'frame', 'end']);
  });
});

describe('route coverage', () => {
  it('every route the app serves is documented, and every documented route is served', () => {
    const routes = routesOf(buildApp(h.server.deps));
    expect(routes.length).toBeGreaterThan(60);
    expect(coverage(routes, allDocs())).toEqual({ undocumented: [], unrouted: [] });
    expect(operationsOf(served)).toEqual([...new Set(routes.map(keyOf))].sort());
  });

  it('catches a broken copy: a route without docs, and docs without a route', () => {
    const app = buildApp(h.server.deps);
    const extra: AppRouter = new Router({ prefix: '/api/extra' });
    extra.post('/:id/thing', (ctx) => {
      ctx.body = {};
    });
    app.use(extra.routes());
    const docs: RouteDocs = { ...allDocs(), 'DELETE /api/ghost/{id}': { summary: 'gone', responses: { 204: 'gone' } } };
    delete docs['GET /api/auth/me'];
    const routes = routesOf(app);
    expect(coverage(routes, docs)).toEqual({ undocumented: ['GET /api/auth/me', 'POST /api/extra/{id}/thing'], unrouted: ['DELETE /api/ghost/{id}'] });
    // The document built from that copy shows the same gaps the test compares.
    const doc = buildDocument(routes, docs);
    expect(doc.paths).not.toHaveProperty(['/api/extra/{id}/thing']);
    expect(operationsOf(doc)).toContain('DELETE /api/ghost/{id}');
  });
});

describe('routes outside a koa router', () => {
  it('a plain middleware that declares its routes is covered like a router (the identity provider registers this way)', () => {
    const app = buildApp(h.server.deps);
    const provider = describesRoutes(async (_ctx: unknown, next: () => Promise<void>) => next(), [
      { method: 'POST', path: '/identitytoolkit.googleapis.com/v1/accounts:signUp' },
      { method: 'POST', path: '/securetoken.googleapis.com/v1/token' },
    ]);
    app.middleware.unshift(provider as never);
    const routes = routesOf(app);
    expect(coverage(routes, allDocs()).undocumented).toEqual(['POST /identitytoolkit.googleapis.com/v1/accounts:signUp', 'POST /securetoken.googleapis.com/v1/token']);
    const docs: RouteDocs = {
      ...allDocs(),
      'POST /identitytoolkit.googleapis.com/v1/accounts:signUp': { summary: 'Sign up', security: [], responses: { 200: 'Signed up' } },
      'POST /securetoken.googleapis.com/v1/token': { summary: 'Exchange a refresh token', security: [], responses: { 200: 'Tokens' } },
    };
    expect(coverage(routes, docs)).toEqual({ undocumented: [], unrouted: [] });
    const doc = buildDocument(routes, docs) as Json;
    expect(doc.paths['/securetoken.googleapis.com/v1/token'].post.tags).toEqual(['Identity provider']);
  });

  it("writes koa's parameters the OpenAPI way and keeps escaped colons literal", () => {
    expect(openapiPath('/api/visitors/:id/history')).toBe('/api/visitors/{id}/history');
    expect(openapiPath('/v1/accounts\\:signUp')).toBe('/v1/accounts:signUp');
  });
});

describe('response validation', () => {
  const copy = () => structuredClone(served);

  it('passes what the routes answer', async () => {
    // The harness checked every answer above already; these are checked again explicitly.
    const checker = responseChecker(served);
    const me = await h.request('GET', '/api/auth/me', { token: co.ownerToken });
    expect(() => checker.check({ method: 'GET', path: '/api/auth/me', status: me.status, contentType: me.headers.get('content-type')!, body: me.body })).not.toThrow();
    const none = await h.request('GET', '/api/auth/me');
    expect(none.status).toBe(401);
  });

  it('catches a broken copy: a schema the answer does not match', async () => {
    const broken = copy();
    // User gains a required field the presenter never writes.
    broken.components.schemas.User.properties.nickname = { type: 'string' };
    broken.components.schemas.User.required.push('nickname');
    const hb = await startHarness({}, { openapi: broken });
    try {
      const signIn = { body: { email: hb.admin.email, password: hb.admin.password } };
      await expect(hb.request('POST', '/api/auth/login', signIn)).rejects.toThrow(OpenApiMismatch);
      await expect(hb.request('POST', '/api/auth/login', signIn)).rejects.toThrow(/must have required property 'nickname'/);
      // The same answers, fetched without the harness, are what the server really sends: only the copy is wrong.
      const raw = await fetch(`${hb.url}/api/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(signIn.body) });
      const envelope = (await raw.json()) as { access_token: string };
      expect(raw.status).toBe(200);
      await expect(hb.request('GET', '/api/auth/me', { token: envelope.access_token })).rejects.toThrow(/nickname/);
      // Answers whose schemas do not involve User still pass.
      expect((await hb.request('GET', '/healthz')).status).toBe(200);
    } finally {
      await hb.close();
    }
  });

  it('catches a broken copy: an undocumented status, a wrong type, a wrong content type', async () => {
    const me = await h.request('GET', '/api/auth/me', { token: co.ownerToken });
    const answer = { method: 'GET', path: '/api/auth/me', status: 200, contentType: 'application/json; charset=utf-8', body: me.body };

    const noStatus = copy();
    delete noStatus.paths['/api/auth/me'].get.responses['200'];
    expect(() => responseChecker(noStatus).check(answer)).toThrow(/lists no 200/);

    const wrongType = copy();
    wrongType.components.schemas.User.properties.email = { type: 'integer' };
    expect(() => responseChecker(wrongType).check(answer)).toThrow(/\/email must be integer/);

    expect(() => responseChecker(served).check({ ...answer, contentType: 'text/html' })).toThrow(/with text\/html/);
    expect(() => responseChecker(served).check(answer)).not.toThrow();
  });

  it('checks server-sent events against x-events, and catches a broken copy', () => {
    const checker = responseChecker(served);
    const live = { path: '/api/cameras/0b7c6a52-8f0e-4a59-9d3a-6f8f2b7c3a11/live' };
    expect(() => checker.checkEvent({ ...live, event: 'waiting', data: '{}' })).not.toThrow();
    expect(() => checker.checkEvent({ ...live, event: 'end', data: '{"reason":"max_duration"}' })).not.toThrow();
    expect(() => checker.checkEvent({ ...live, event: 'frame', data: '/9j/4AAQ' })).not.toThrow();
    expect(() => checker.checkEvent({ ...live, event: 'end', data: '{"reason":"bored"}' })).toThrow(/reason must be equal to one of the allowed values/);
    expect(() => checker.checkEvent({ ...live, event: 'gone', data: '{}' })).toThrow(/lists waiting, frame, end/);
    expect(() => checker.checkEvent({ path: '/api/visits/stream', event: 'arrival', data: '{"visit_id":"x"}' })).toThrow(/must have required property/);
    // A copy whose Arrival needs a field the presenter never writes refuses every real arrival.
    const broken = copy();
    broken.components.schemas.Arrival.required.push('dwell_s');
    const arrival = {
      visit_id: '0b7c6a52-8f0e-4a59-9d3a-6f8f2b7c3a11',
      occurred_at: '2026-11-26T08:00:00.000Z',
      site_id: '0b7c6a52-8f0e-4a59-9d3a-6f8f2b7c3a12',
      site: 'Bandra',
      site_slug: 'bandra',
      camera_id: 'door',
      label: '',
      is_new_visitor: false,
      similarity: 0,
      quality: 0.4,
      attributes: {},
      image: { available: false, reason: 'Photos are kept only for identified customers.' },
    };
    expect(() => checker.checkEvent({ path: '/api/visits/stream', event: 'arrival', data: JSON.stringify(arrival) })).not.toThrow();
    expect(() => responseChecker(broken).checkEvent({ path: '/api/visits/stream', event: 'arrival', data: JSON.stringify(arrival) })).toThrow(/dwell_s/);
  });
});
