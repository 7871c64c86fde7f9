import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Mw } from '../context.js';
import { describesRoutes } from '../http/describe.js';
import { noSuchRoute } from '../http/errors.js';
import { packageRoot } from '../paths.js';

/**
 * The web console (docs/console.md): static files built into dist/console by `npm run build` (the browser code in
 * server/console/web, compiled by its own tsconfig, plus index.html and console.css copied by copy-static.ts).
 *
 * - `GET /` answers index.html to a browser (an Accept naming text/html); any other caller (curl, an app) gets a
 *   one-line JSON pointer to the console, the API reference and the health check (ROOT_POINTER). Other methods on `/`
 *   are the JSON 404 of an unknown path. `GET /console/` is index.html for everyone.
 * - `GET /console/<name>.<js|css|html|svg|png|ico>` answers that file. Names are checked against a strict pattern
 *   (lower-case letters, digits, `-`, `_`, `/`-separated folders, no dots but the extension), so `..`, `%2f` and
 *   anything encoded never reach the file system; the resolved path is checked to be inside the folder as well.
 * - Anything else under /console, and any other method, is the API's JSON 404 of an unknown path.
 */

const PREFIX = '/console/';

/** What `GET /` tells a caller that is not a browser: where things are (docs/api-conventions.md). */
export const ROOT_POINTER = {
  service: 'Footfall head office',
  console: '/ (open it in a browser)',
  api_reference: '/api/openapi.json',
  health: '/healthz',
} as const;
const NAME = /^(?:[a-z0-9_-]+\/)*[a-z0-9_-]+\.(js|css|html|svg|png|ico)$/;

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  html: 'text/html; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  ico: 'image/x-icon',
};

/** The console's Content-Security-Policy: nothing inline, nothing from elsewhere. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=()',
};

/** The folder the console is served from: dist/console under the package root. */
export function consoleDir(): string {
  return path.join(packageRoot(), 'dist', 'console');
}

export function consoleRoutes(dir = consoleDir()): Mw {
  const root = path.resolve(dir);
  /**
   * Files read and hashed once, again only when their size or time changes (a rebuild): a page load asks for some
   * twenty of them, each revalidated every time. Keys are names that exist in the folder, so the map stays small.
   */
  const files = new Map<string, { mtimeMs: number; size: number; body: Buffer; etag: string }>();
  // Only `GET /` is declared to the OpenAPI document (./openapi.ts): the console's static files are not API routes.
  const answer: Mw = async (ctx, next) => {
    const p = ctx.path;
    const isRoot = p === '/';

    if (isRoot) {
      ctx.vary('Accept');
      if (!(ctx.method === 'GET' || ctx.method === 'HEAD')) return next();
      // Only a browser navigation gets the page; API clients (curl, apps) get a pointer to what is here.
      if (!wantsHtml(ctx.get('Accept'))) {
        ctx.set('Cache-Control', 'no-cache');
        ctx.body = ROOT_POINTER;
        return;
      }
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) ctx.set(k, v);
    if (!(ctx.method === 'GET' || ctx.method === 'HEAD')) throw noSuchRoute(ctx.method, p);

    const name = isRoot || p === PREFIX ? 'index.html' : p.slice(PREFIX.length);
    const ext = NAME.exec(name)?.[1];
    if (!ext) throw noSuchRoute(ctx.method, p);
    const file = path.resolve(root, name);
    if (!file.startsWith(root + path.sep)) throw noSuchRoute(ctx.method, p);

    let cached = files.get(file);
    try {
      const st = await fs.stat(file);
      if (!st.isFile()) throw new Error('not a file');
      if (!cached || cached.mtimeMs !== st.mtimeMs || cached.size !== st.size) {
        const body = await fs.readFile(file);
        cached = { mtimeMs: st.mtimeMs, size: st.size, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
        files.set(file, cached);
      }
    } catch {
      files.delete(file);
      throw noSuchRoute(ctx.method, p);
    }
    const { body, etag } = cached;
    ctx.set('ETag', etag);
    // Names are not content-hashed, so every use revalidates (a 304 costs one small round trip).
    ctx.set('Cache-Control', 'no-cache');
    if (ctx.get('If-None-Match') === etag) {
      ctx.status = 304;
      return;
    }
    ctx.type = TYPES[ext]!;
    ctx.body = body;
  };
  // Any other path passes straight on, without an async frame of its own.
  const ours = (p: string) => p === '/' || p === '/console' || p.startsWith(PREFIX);
  return describesRoutes<Mw>((ctx, next) => (ours(ctx.path) ? answer(ctx, next) : next()), [{ method: 'GET', path: '/' }]);
}

function wantsHtml(accept: string): boolean {
  return accept.split(',').some((part) => part.trim().split(';')[0]!.trim().toLowerCase() === 'text/html');
}
