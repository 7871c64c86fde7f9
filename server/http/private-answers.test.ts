import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { appRouters } from '../app.js';

/**
 * Every /api and /auth answer carries `Cache-Control: no-store` and `X-Content-Type-Options: nosniff` (issue 29,
 * OWASP ASVS): every route of the app's routers, with every method it has, asked by no one (its 401 or 400) and, for
 * GETs, by its owner or the platform admin (its 200, 404 or 400); plus unknown paths and wrong methods. Asked over
 * real HTTP of a started head office, so GET /api/auth/me goes through the fast lane.
 */
let h: Harness;
let company: Company;

beforeAll(async () => {
  h = await startHarness({}, { openapi: false });
  company = await h.company('Private Answers Co');
}, 60_000);

afterAll(async () => {
  await h?.close();
});

/** Every route as [method, concrete path]: path parameters filled with an id nothing has. */
function routes(): [string, string, boolean][] {
  const { admin, routers } = appRouters();
  const out: [string, string, boolean][] = [];
  for (const [isAdmin, list] of [[true, admin], [false, routers]] as const) {
    for (const layer of list.flatMap((r) => r.stack)) {
      if (typeof layer.path !== 'string') continue;
      const path = layer.path.replace(/(?<!\\):\w+/g, 'no-such-id-1').replace(/\\/g, '');
      for (const m of layer.methods) if (m !== 'HEAD') out.push([m, path, isAdmin]);
    }
  }
  return out;
}

function expectPrivate(res: Response, label: string): void {
  const cc = (res.headers.get('cache-control') ?? '').split(',').map((d) => d.trim());
  expect(cc, `${label}: Cache-Control`).toContain('no-store');
  expect(res.headers.get('x-content-type-options'), `${label}: X-Content-Type-Options`).toBe('nosniff');
}

async function ask(method: string, path: string, token?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  const hasBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
  if (hasBody) headers['Content-Type'] = 'application/json';
  const res = await fetch(h.url + path, { method, headers, body: hasBody ? '{}' : undefined });
  await res.body?.cancel(); // an event stream never ends on its own
  return res;
}

describe('answers under /api and /auth', () => {
  it('carry no-store and nosniff on every route, whoever asks and whatever the answer', async () => {
    const all = routes().filter(([, p]) => p === '/api' || p.startsWith('/api/') || p.startsWith('/auth/'));
    expect(all.length).toBeGreaterThan(60);
    const admin = await h.adminToken();
    const statuses = new Set<number>();
    for (const [method, path, isAdmin] of all) {
      const anon = await ask(method, path);
      statuses.add(anon.status);
      expectPrivate(anon, `${method} ${path} (no token: ${anon.status})`);
      if (method !== 'GET') continue;
      const own = await ask(method, path, isAdmin ? admin : company.ownerToken);
      statuses.add(own.status);
      expectPrivate(own, `${method} ${path} (${isAdmin ? 'admin' : 'owner'}: ${own.status})`);
    }
    // The sweep met successes and refusals alike.
    expect([...statuses]).toEqual(expect.arrayContaining([200, 401, 404]));
  }, 60_000);

  it('carry them on the fast lane, on unknown paths and on wrong methods too', async () => {
    const me = await ask('GET', '/api/auth/me', company.ownerToken);
    expect(me.status).toBe(200);
    expectPrivate(me, 'GET /api/auth/me');
    for (const [method, path] of [['GET', '/api/nothing-here'], ['GET', '/auth/nothing'], ['DELETE', '/api/auth/me'], ['GET', '/api'], ['GET', '/api/admin/nothing']] as const) {
      const res = await ask(method, path, company.ownerToken);
      expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expectPrivate(res, `${method} ${path}`);
    }
  });

  it('leave the console and health answers to their own caching', async () => {
    const health = await ask('GET', '/healthz');
    expect(health.headers.get('cache-control')).toBeNull();
  });
});
