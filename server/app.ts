import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import { sql } from 'drizzle-orm';
import type { AppRouter, Custom, Deps, Mw, State } from './context.js';
import type { Store } from './db/open.js';
import { row } from './db/raw.js';
import { accessLog, defineRequestLog, deferBodyErrors, errors, privateAnswers, requestId } from './http/middleware.js';
import { noSuchRoute } from './http/errors.js';
import { mountRouters } from './http/mount.js';
import { authRoutes, meRoute } from './auth/routes.js';
import type { FastRoute } from './http/fast-lane.js';
import { clientsRoutes } from './clients/routes.js';
import { teamRoutes } from './team/routes.js';
import { shopsRoutes } from './shops/routes.js';
import { camerasRoutes } from './cameras/routes.js';
import { agentRoutes } from './agent-api/routes.js';
import { visitsRoutes } from './visits/routes.js';
import { customersRoutes } from './customers/routes.js';
import { purchasesRoutes } from './purchases/routes.js';
import { reportsRoutes } from './reports/routes.js';
import { assistantRoutes } from './assistant/routes.js';
import { authServiceRoutes } from './auth-service/routes.js';
import { metricsRoutes, requestMetrics } from './metrics/routes.js';
import { consoleRoutes } from './console/serve.js';
import { idpRoutes } from './idp/routes.js';
import { openapiRoutes } from './openapi/routes.js';
import { auditRoutes } from './audit/routes.js';
import { privacyRoutes } from './privacy/routes.js';
import { alertsRoutes } from './alerts/routes.js';
import { digestsRoutes } from './digests/routes.js';

/** Builds the head-office Koa app. Nothing listens here: startServer (or a test) does that. */
export function buildApp(deps: Deps): Koa<State, Custom> {
  // Behind our reverse proxy the caller is the last X-Forwarded-For entry (the one the proxy appended); earlier
  // entries are whatever the client sent, so only one is read.
  const app = new Koa<State, Custom>({ proxy: deps.config.FOOTFALL_TRUST_PROXY, maxIpsCount: 1 });
  app.context.deps = deps;
  defineRequestLog(app.context, deps.log);
  app.silent = true; // errors() logs; Koa's default stderr printing would duplicate it

  app.use(requestId);
  app.use(privateAnswers);
  app.use(accessLog);
  app.use(requestMetrics);
  app.use(errors);
  // The embedded identity provider's Identity Toolkit paths (their own body parsing and error JSON; docs/auth-service.md).
  app.use(idpRoutes(deps.config));
  const parsedMethods = ['POST', 'PUT', 'PATCH', 'DELETE'];
  app.use(deferBodyErrors(bodyParser({ enableTypes: ['json'], jsonLimit: deps.config.FOOTFALL_BODY_LIMIT_BYTES, parsedMethods }), parsedMethods));

  // The web console: GET / (for a browser) and /console/* (docs/console.md). Nothing under /api, /auth, /metrics.
  app.use(consoleRoutes());

  // Admin routes answer no 405: to anyone else /api/admin/* must look like nothing at all (a plain 404).
  // Each mount answers as `app.use(r.routes()).use(r.allowedMethods())` for its routers in turn (server/http/mount.ts).
  const { admin, routers } = appRouters();
  app.use(mountRouters(admin, { withAllowedMethods: false }));
  app.use(adminGuard);
  app.use(mountRouters(routers));
  return app;
}

/** The app's routers, in mounting order: the admin routes (before adminGuard, no 405s), then the rest. */
export function appRouters(): { admin: AppRouter[]; routers: AppRouter[] } {
  return {
    admin: [clientsRoutes()],
    routers: [healthRoutes(), openapiRoutes(), metricsRoutes(), authRoutes(), teamRoutes(), shopsRoutes(), camerasRoutes(), agentRoutes(), visitsRoutes(), customersRoutes(), purchasesRoutes(), digestsRoutes(), reportsRoutes(), alertsRoutes(), assistantRoutes(), authServiceRoutes(), auditRoutes(), privacyRoutes()],
  };
}

/** The GETs the fast lane answers beside Koa (server/http/fast-lane.ts); each is also a Koa route, from the same definition. */
export function fastRoutes(): FastRoute[] {
  return [meRoute];
}

/** Anything under /api/admin the admin routes did not answer: the plain 404 of an unknown path. */
export const adminGuard: Mw = (ctx, next) => {
  if (ctx.path === '/api/admin' || ctx.path.startsWith('/api/admin/')) throw noSuchRoute(ctx.method, ctx.path);
  return next();
};

/** Whether the database answers a trivial query: the SQLite file open, or a PostgreSQL connection that works. */
async function databaseAnswers(store: Store): Promise<boolean> {
  if (store.dialect === 'sqlite' && !store.sqlite.open) return false;
  try {
    return (await row<{ ok: number }>(store.db, sql`select 1 as ok`))?.ok === 1;
  } catch {
    return false;
  }
}

function healthRoutes(): AppRouter {
  const r: AppRouter = new Router();
  r.get('/healthz', async (ctx) => {
    const { store, broker } = ctx.deps;
    const dbOk = await databaseAnswers(store);
    const brokerOk = broker.accepting;
    ctx.status = dbOk && brokerOk ? 200 : 503;
    ctx.body = { status: ctx.status === 200 ? 'ok' : 'unavailable', database: dbOk ? 'ok' : 'down', broker: brokerOk ? 'ok' : 'down' };
  });
  return r;
}
