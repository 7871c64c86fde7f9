import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { eq } from 'drizzle-orm';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { appRouters, buildApp, fastRoutes } from '../app.js';
import { hashToken } from '../auth/tokens.js';
import { securityOf } from './describe.js';
import { withFastLane } from './fast-lane.js';
import { one } from '../db/query.js';
import { sessions } from '../db/tables.js';

/**
 * The fast lane answers exactly as Koa does. Two listeners on one running head office (same database, logger and
 * metrics): Koa alone, and the fast lane in front of Koa (whose fallbacks are counted). Each request goes to both and
 * the answers are compared whole: status, body, every header in order (Date and a generated X-Request-Id aside), the
 * access-log line (time and ms aside) and the metrics sample.
 */
const METRICS_TOKEN = 'metrics-token-fast-lane-test-0123456789';
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  },
});

let h: Harness;
let company: Company;
let koaUrl: string;
let laneUrl: string;
let fallbacks = 0;
const servers: http.Server[] = [];

async function listen(listener: http.RequestListener): Promise<string> {
  const server = http.createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Answer {
  status: number;
  body: string;
  headers: [string, string][];
  requestId: string;
}

function send(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(base + path, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const raw = res.rawHeaders;
        const pairs: [string, string][] = [];
        for (let i = 0; i < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
        resolve({ status: res.statusCode!, body, headers: pairs, requestId: String(res.headers['x-request-id'] ?? '') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** What must be equal: the generated request id and the Date header are per request. */
function comparable(a: Answer, givenId: boolean) {
  return {
    status: a.status,
    body: a.body,
    headers: a.headers.filter(([k]) => k.toLowerCase() !== 'date').map(([k, v]) => [k, k.toLowerCase() === 'x-request-id' && !givenId ? '(generated)' : v]),
  };
}

function accessLine(requestId: string): Record<string, unknown> {
  const line = lines.find((l) => l.msg === 'request' && l.req_id === requestId);
  if (!line) throw new Error(`no access-log line for ${requestId}`);
  const { time: _time, ms, req_id: _id, ...rest } = line;
  expect(typeof ms).toBe('number');
  return rest;
}

async function meSample(): Promise<number> {
  const res = await fetch(`${h.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  const m = /^footfall_http_requests_total\{method="GET",route="\/api\/auth\/me",status="200"\} (\d+)$/m.exec(text);
  const d = /^footfall_http_request_duration_seconds_count\{method="GET",route="\/api\/auth\/me"\} (\d+)$/m.exec(text);
  expect(m?.[1]).toBe(d?.[1]);
  return Number(m?.[1] ?? 0);
}

/** The same request to both listeners; returns the lane's answer after checking it is Koa's. */
async function same(method: string, path: string, headers: Record<string, string> = {}): Promise<{ lane: Answer; fellBack: boolean }> {
  const before = fallbacks;
  const koa = await send(koaUrl, method, path, headers);
  const lane = await send(laneUrl, method, path, headers);
  const givenId = /^[\w.:-]{1,128}$/.test(headers['X-Request-Id'] ?? ''); // a sane id is echoed, anything else replaced
  expect(comparable(lane, givenId)).toEqual(comparable(koa, givenId));
  await new Promise((r) => setImmediate(r)); // log lines are written at the end of the event loop's turn
  if (method !== 'HEAD' && lane.requestId) expect(accessLine(lane.requestId)).toEqual(accessLine(koa.requestId));
  return { lane, fellBack: fallbacks > before };
}

beforeAll(async () => {
  h = await startHarness({ FOOTFALL_METRICS_TOKEN: METRICS_TOKEN }, { log: pino({ level: 'info' }, sink) });
  company = await h.company('Fast Lane Co');
  const koa = buildApp(h.server.deps).callback();
  koaUrl = await listen(koa);
  laneUrl = await listen(
    withFastLane(h.server.deps, fastRoutes(), (req, res) => {
      fallbacks++;
      void koa(req, res);
    }),
  );
}, 60_000);

afterAll(async () => {
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await h?.close();
});

describe('the fast lane', () => {
  it('serves only paths that are Koa GET routes with the same rule, with no path parameters', () => {
    const layers = appRouters().routers.flatMap((r) => r.stack);
    for (const route of fastRoutes()) {
      expect(route.path).toMatch(/^(\/[a-z0-9-]+)+$/);
      const koa = layers.filter((l) => l.path === route.path && l.methods.includes('GET'));
      expect(koa, route.path).toHaveLength(1);
      const notes = koa[0]!.stack.map((mw) => securityOf(mw)).filter((n) => n !== undefined);
      expect(notes).toEqual([{ scheme: 'userBearer', least: route.rule.least, message: route.rule.message }]);
    }
  });

  it('answers GET /api/auth/me itself, byte for byte as Koa, with the same log line and metrics sample', async () => {
    const auth = { Authorization: `Bearer ${company.ownerToken}` };
    const m0 = await meSample();
    const plain = await same('GET', '/api/auth/me', auth);
    expect(plain.fellBack).toBe(false);
    expect(plain.lane.status).toBe(200);
    expect(JSON.parse(plain.lane.body)).toEqual({ ...company.owner.user });
    expect(plain.lane.headers.map(([k]) => k)).toEqual(['X-Request-Id', 'Cache-Control', 'X-Content-Type-Options', 'Content-Type', 'Content-Length', 'Date', 'Connection', 'Keep-Alive']);
    expect(await meSample()).toBe(m0 + 2);

    const withId = await same('GET', '/api/auth/me', { ...auth, 'X-Request-Id': 'phone-42.poll:7' });
    expect(withId.fellBack).toBe(false);
    expect(withId.lane.requestId).toBe('phone-42.poll:7');
    const badId = await same('GET', '/api/auth/me', { ...auth, 'X-Request-Id': 'not an id!' });
    expect(badId.fellBack).toBe(false);
    expect(badId.lane.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await same('GET', '/api/auth/me?x=1&x=2', auth)).fellBack).toBe(false);
    expect((await same('GET', '/api/auth/me', { Authorization: `bearer   ${company.ownerToken}  ` })).fellBack).toBe(false);
    const admin = await same('GET', '/api/auth/me', { Authorization: `Bearer ${await h.adminToken()}` });
    expect(admin.fellBack).toBe(false);
    expect(JSON.parse(admin.lane.body)).toMatchObject({ role: 'admin', client_id: '', client_name: '' });
  });

  it('leaves everything else to Koa, which answers it as before', async () => {
    const token = company.ownerToken;
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/api/auth/me', {}],
      ['GET', '/api/auth/me', { Authorization: 'Bearer ffa_not-a-token' }],
      ['GET', '/api/auth/me', { Authorization: 'Bearer ffs_a-shop-pc-token' }],
      ['GET', '/api/auth/me', { Authorization: `Basic ${token}` }],
      ['GET', '/api/auth/me/', { Authorization: `Bearer ${token}` }],
      ['GET', '/API/auth/me', { Authorization: `Bearer ${token}` }],
      ['GET', '/api/auth/%6De', { Authorization: `Bearer ${token}` }],
      ['HEAD', '/api/auth/me', { Authorization: `Bearer ${token}` }],
      ['POST', '/api/auth/me', { Authorization: `Bearer ${token}` }],
      ['GET', '/api/auth/sessions', { Authorization: `Bearer ${token}` }],
      ['GET', '/api/nothing-here', {}],
    ];
    for (const [method, path, headers] of cases) {
      const r = await same(method, path, headers);
      expect(r.fellBack, `${method} ${path}`).toBe(true);
    }
  });

  it('sees an expired token, a sign-out and a deactivated member on the very next request', async () => {
    const member = await h.request('POST', '/api/team/members', { token: company.ownerToken, body: { email: 'lane.staff@example.test', full_name: 'Lane Staff', role: 'staff', password: 'staff-password-1' } });
    expect(member.status).toBe(201);
    const staff = await h.login('lane.staff@example.test', 'staff-password-1');
    const auth = (t: string) => ({ Authorization: `Bearer ${t}` });

    expect((await same('GET', '/api/auth/me', auth(staff.access_token))).lane.status).toBe(200);
    // The access token runs out (its session lives on): token_expired, from Koa.
    const db = h.server.store.db;
    const hash = hashToken(staff.access_token);
    const was = (await one(db.select().from(sessions).where(eq(sessions.accessHash, hash))))!.accessExpiresAt;
    await db.update(sessions).set({ accessExpiresAt: new Date(Date.now() - 1000).toISOString() }).where(eq(sessions.accessHash, hash));
    const expired = await same('GET', '/api/auth/me', auth(staff.access_token));
    expect([expired.lane.status, JSON.parse(expired.lane.body).error, expired.fellBack]).toEqual([401, 'token_expired', true]);
    await db.update(sessions).set({ accessExpiresAt: was }).where(eq(sessions.accessHash, hash));
    expect((await same('GET', '/api/auth/me', auth(staff.access_token))).fellBack).toBe(false);

    // Deactivated by the owner: refused at once.
    const off = await h.request('PATCH', `/api/team/${staff.user.id}`, { token: company.ownerToken, body: { active: false } });
    expect(off.status).toBe(200);
    const gone = await same('GET', '/api/auth/me', auth(staff.access_token));
    expect([gone.lane.status, gone.fellBack]).toEqual([401, true]);

    // Signed out: refused at once.
    const second = await h.login(company.ownerEmail, company.ownerPassword);
    expect((await same('GET', '/api/auth/me', auth(second.access_token))).fellBack).toBe(false);
    expect((await h.request('POST', '/api/auth/logout', { token: second.access_token })).status).toBe(204);
    const out = await same('GET', '/api/auth/me', auth(second.access_token));
    expect([out.lane.status, JSON.parse(out.lane.body).error, out.fellBack]).toEqual([401, 'unauthorized', true]);
  });
});
