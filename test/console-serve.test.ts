import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import os from 'node:os';
import Koa from 'koa';
import { CONSOLE_CSP, consoleDir, consoleRoutes } from '../server/console/serve.js';
import { startHarness, type Harness } from './support/harness.js';

/**
 * Serving the web console (docs/console.md): GET / for a browser, /console/* assets from dist/console, the security
 * headers, caching, and that nothing outside the folder can be reached. Plain HTTP; no browser. Needs `npm run build`
 * (npm test builds first).
 */

let h: Harness;

beforeAll(async () => {
  if (!fs.existsSync(path.join(consoleDir(), 'index.html'))) throw new Error('dist/console is not built: run npm run build first');
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** A GET that sends the path exactly as written (fetch would normalise `..` and encodings away). */
function rawGet(p: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const u = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: p, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

function expectSecurityHeaders(headers: http.IncomingHttpHeaders): void {
  const csp = String(headers['content-security-policy']);
  for (const d of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "object-src 'none'"]) {
    expect(csp).toContain(d);
  }
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['x-frame-options']).toBe('DENY');
}

function expectNotFound(r: { status: number; headers: http.IncomingHttpHeaders; text: string }, label: string): void {
  expect(r.status, label).toBe(404);
  expect(String(r.headers['content-type']), label).toContain('application/json');
  const body = JSON.parse(r.text) as { error: string; message: string };
  expect(body.error, label).toBe('not_found');
  expect(body.message, label).toMatch(/^There is no /);
}

describe('web console: serving', () => {
  it('GET / from a browser is index.html with the strict headers, revalidated on every use', async () => {
    const r = await rawGet('/', { Accept: browserAccept });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.text).toContain('<script type="module" src="/console/main.js"></script>');
    expect(r.text).not.toMatch(/<script>|<style|style=|onclick=/i); // nothing inline: the CSP would refuse it
    expectSecurityHeaders(r.headers);
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(String(r.headers.vary)).toContain('Accept');
    expect(r.headers.etag).toMatch(/^"[\w-]+"$/);

    const again = await rawGet('/', { Accept: browserAccept, 'If-None-Match': r.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');

    const head = await rawGet('/', { Accept: browserAccept }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('GET / from curl or an app (no text/html in Accept) is a one-line pointer to the console, API reference and health check', async () => {
    for (const accept of [undefined, '*/*', 'application/json']) {
      const r = await rawGet('/', accept ? { Accept: accept } : {});
      expect(r.status, `Accept ${accept}`).toBe(200);
      expect(String(r.headers['content-type'])).toContain('application/json');
      expect(r.text.split('\n').filter(Boolean)).toHaveLength(1);
      expect(JSON.parse(r.text)).toEqual({ service: 'Footfall head office', console: '/ (open it in a browser)', api_reference: '/api/openapi.json', health: '/healthz' });
      expect(r.headers['content-security-policy']).toBeUndefined();
    }
    for (const method of ['PUT', 'PATCH', 'DELETE'] as const) expectNotFound(await rawGet('/', {}, method), `${method} /`);
    const post = await rawGet('/', { Accept: browserAccept }, 'POST');
    expectNotFound(post, 'POST /');
  });

  it('assets: modules as JavaScript, the stylesheet as CSS, each with an ETag; /console/ is the page too', async () => {
    const js = await rawGet('/console/main.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.text).toContain("from './api.js'");
    expectSecurityHeaders(js.headers);
    expect(js.headers['cache-control']).toBe('no-cache');
    const etag = js.headers.etag!;
    expect((await rawGet('/console/main.js', { 'If-None-Match': etag })).status).toBe(304);
    expect((await rawGet('/console/main.js', { 'If-None-Match': '"other"' })).status).toBe(200);

    const css = await rawGet('/console/console.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');

    const page = await rawGet('/console/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('uPlot is served from head office itself (dist/console/vendor, copied at build), with the same headers', async () => {
    const js = await rawGet('/console/vendor/uplot.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['content-security-policy']).toBe(CONSOLE_CSP);
    const css = await rawGet('/console/vendor/uplot.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it('no innerHTML and no inline styles anywhere in the built console', () => {
    for (const name of [...fs.readdirSync(consoleDir()), 'vendor/uplot.js']) {
      if (!name.endsWith('.js')) continue;
      const text = fs.readFileSync(path.join(consoleDir(), name), 'utf8');
      expect(text, name).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
      expect(text, name).not.toMatch(/setAttribute\(['"]style/);
    }
  });

  it('unknown assets and other methods are the JSON 404 of an unknown path, never a 500', async () => {
    const paths = ['/console', '/console/nope.js', '/console/main.ts', '/console/main.js.map', '/console/Main.js', '/console/main', '/console/.env', '/console/sub/nope.css', '/console/main.js/', '/console/main.js?x=1&y=..%2f'];
    for (const p of paths) {
      const r = await rawGet(p);
      if (p.startsWith('/console/main.js?')) {
        expect(r.status, p).toBe(200); // a query string is not part of the name
        continue;
      }
      expectNotFound(r, p);
    }
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) expectNotFound(await rawGet('/console/main.js', {}, m), `${m} /console/main.js`);
  });

  it('no way out of the folder: dot segments, encoded slashes and dots, backslashes, NUL', async () => {
    const secret = ['package.json', 'server/app.ts', 'dist/server/app.js'];
    for (const f of secret) expect(fs.existsSync(path.resolve(consoleDir(), '..', '..', f)), f).toBe(true);
    const attempts = [
      '/console/../package.json',
      '/console/../../package.json',
      '/console/../server/app.js',
      '/console/..%2f..%2fpackage.json',
      '/console/..%2Fserver%2Fapp.js',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/%2e%2e%2f%2e%2e%2fpackage.json',
      '/console/..%5c..%5cpackage.json',
      '/console/..\\..\\package.json',
      '/console/%252e%252e%252fpackage.json',
      '/console/main.js%00.css',
      '/console/%00',
      '/console//etc/passwd',
      '/console/%2fetc%2fpasswd',
      '/console/....//....//package.json',
      '/console/./main.js',
    ];
    for (const p of attempts) {
      const r = await rawGet(p);
      expect(r.status, p).not.toBe(200);
      expect(r.status, p).toBeLessThan(500);
      expect(r.text, p).not.toContain('"name": "footfall"');
      expect(r.text, p).not.toContain('buildApp');
      if (r.status === 404) expectNotFound(r, p);
    }
  });

  it('a file rebuilt while head office runs is served anew, with a new ETag (files are read once per version)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-console-'));
    const app = new Koa();
    app.use(consoleRoutes(dir) as unknown as Koa.Middleware);
    const server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/console/app.js`;
    try {
      fs.writeFileSync(path.join(dir, 'app.js'), 'export const v = 1;\n');
      const first = await fetch(url);
      expect(await first.text()).toBe('export const v = 1;\n');
      const etag = first.headers.get('etag')!;
      expect((await fetch(url, { headers: { 'If-None-Match': etag } })).status).toBe(304);

      fs.writeFileSync(path.join(dir, 'app.js'), 'export const v = 22;\n');
      const second = await fetch(url);
      expect(await second.text()).toBe('export const v = 22;\n');
      expect(second.headers.get('etag')).not.toBe(etag);
      expect((await fetch(url, { headers: { 'If-None-Match': etag } })).status).toBe(200);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves /api, /healthz and their headers alone', async () => {
    const r = await rawGet('/api/sites', { Accept: browserAccept });
    expect(r.status).toBe(401);
    expect(r.headers['content-security-policy']).toBeUndefined();
    expect(JSON.parse(r.text).error).toBe('unauthorized');
    const health = await rawGet('/healthz', { Accept: browserAccept });
    expect(health.status).toBe(200);
    expect(health.headers['content-type']).toContain('application/json');
  });
});
