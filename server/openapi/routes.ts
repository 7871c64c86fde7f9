import Router from '@koa/router';
import type { AppRouter } from '../context.js';
import { buildDocument, routesOf } from './document.js';
import { allDocs } from './domains.js';

const documents = new WeakMap<object, string>();

/** The document of this app, built from its routers on first request (they do not change after buildApp). */
export function documentOf(app: { middleware: readonly unknown[] }): string {
  let text = documents.get(app);
  if (!text) {
    text = JSON.stringify(buildDocument(routesOf(app), allDocs(), { keepUnrouted: false }));
    documents.set(app, text);
  }
  return text;
}

/** GET /api/openapi.json: no token (it describes routes, never data). */
export function openapiRoutes(): AppRouter {
  const r: AppRouter = new Router();
  r.get('/api/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = documentOf(ctx.app);
  });
  return r;
}
