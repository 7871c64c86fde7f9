import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminGuard, appRouters } from '../app.js';
import type { AppRouter, Custom, Mw, State } from '../context.js';
import { defineRequestLog, errors } from './middleware.js';
import { mountRouters } from './mount.js';

/**
 * mountRouters answers exactly as mounting each router's routes() and allowedMethods() in turn. Two apps with the
 * head office's own routers, one mounted each way, get the same requests over HTTP: every route's path, in upper case,
 * with a trailing slash, one segment longer or shorter, and paths no route has, with every method the routers know,
 * one they do not (TRACE: 501) and OPTIONS. No token is sent, so a reached route answers its auth step's 401 (or its
 * validation's 400); what differs between the mounts (404, 405 with Allow, 501, OPTIONS' Allow) is compared whole.
 */
/** The head office's routers behind the errors middleware, mounted by `mount` (admin routes, then the guard, then the rest). */
function appMounted(mount: (routers: AppRouter[], withAllowedMethods: boolean) => Mw[]): Koa<State, Custom> {
  const app = new Koa<State, Custom>();
  defineRequestLog(app.context, pino({ level: 'silent' }));
  app.silent = true;
  const { admin, routers } = appRouters();
  app.use(errors);
  for (const mw of mount(admin, false)) app.use(mw);
  app.use(adminGuard);
  for (const mw of mount(routers, true)) app.use(mw);
  return app;
}

/** Each router's routes() and, unless admin, allowedMethods(), one after the other: the mounting before mountRouters. */
const plainApp = () => appMounted((routers, allowed) => routers.flatMap((r) => [r.routes() as Mw, ...(allowed ? [r.allowedMethods() as Mw] : [])]));
const mountedApp = () => appMounted((routers, allowed) => [mountRouters(routers, { withAllowedMethods: allowed })]);

async function listen(app: Koa<State, Custom>): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function request(url: string, method: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + path, { method, agent, headers: method === 'POST' || method === 'PATCH' || method === 'PUT' ? { 'content-type': 'application/json' } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(JSON.stringify([res.statusCode, res.headers.allow ?? null, res.headers['content-type'] ?? null, body])));
    });
    req.on('error', reject);
    req.end(method === 'POST' || method === 'PATCH' || method === 'PUT' ? '{}' : undefined);
  });
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function pathsToTry(): string[] {
  const { admin, routers } = appRouters();
  const templates = [...admin, ...routers].flatMap((r) => r.stack.map((l) => l.path)).filter((p): p is string => typeof p === 'string');
  const concrete = templates.map((t) => t.replace(/\\:/g, ':').replace(/(?<!\\):\w+/g, 'x1').replace(/\{[^}]*\}/g, '').replace(/\(\.\*\)/g, '') || '/');
  const out = new Set<string>(['/', '/api', '/api/', '/nothing', '/API/VISITS', '/api/visitsx', '/api/visitor', '/auth', '/healthz/', '/HEALTHZ', '/metricsx', '/api/admin', '/api/adminx']);
  for (const p of concrete) {
    out.add(p);
    out.add(p.toUpperCase());
    out.add(p.endsWith('/') ? p : `${p}/`);
    out.add(`${p.replace(/\/$/, '')}/extra`);
    out.add(p.replace(/\/[^/]*\/?$/, '') || '/');
  }
  return [...out];
}

describe('mountRouters', () => {
  let plain: { server: http.Server; url: string };
  let mounted: { server: http.Server; url: string };
  beforeAll(async () => {
    plain = await listen(plainApp());
    mounted = await listen(mountedApp());
  });
  afterAll(async () => {
    agent.destroy();
    for (const s of [plain, mounted]) await new Promise((r) => s?.server.close(r));
  });

  it('answers every path and method as the routers mounted one by one do', async () => {
    const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];
    const cases = pathsToTry().flatMap((p) => methods.map((m) => [m, p] as const));
    expect(cases.length).toBeGreaterThan(1000);
    const differ: string[] = [];
    const seen = new Set<number>();
    for (let i = 0; i < cases.length; i += 16) {
      await Promise.all(
        cases.slice(i, i + 16).map(async ([m, p]) => {
          const [a, b] = await Promise.all([request(plain.url, m, p), request(mounted.url, m, p)]);
          seen.add(JSON.parse(a)[0] as number);
          if (a !== b) differ.push(`${m} ${p}: ${a} != ${b}`);
        }),
      );
    }
    expect(differ).toEqual([]);
    // The matrix reaches every kind of answer the mount decides: unknown path, wrong method, unknown method, OPTIONS, a route.
    expect([...seen].sort()).toEqual(expect.arrayContaining([200, 401, 404, 405, 501]));
  });
});
