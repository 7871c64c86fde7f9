import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Next } from 'koa';
import type { AppRouter, Ctx, Mw } from '../context.js';
import type { Metrics } from './metrics.js';
import { noSuchRoute, unauthorized } from '../http/errors.js';

/**
 * GET /metrics, Prometheus' text format. Off (no FOOTFALL_METRICS_TOKEN): a plain 404, as any unknown path. On: the
 * scraper sends the token as a bearer token (Prometheus: `authorization: { credentials: ... }`); anything else is 401.
 */
export function metricsRoutes(): AppRouter {
  const r: AppRouter = new Router();
  r.get('/metrics', metricsOn, scraper, async (ctx) => {
    const { contentType, body } = await ctx.deps.metrics!.scrape();
    ctx.type = contentType;
    ctx.body = body;
  });
  return r;
}

const metricsOn: Mw = async (ctx, next) => {
  if (!ctx.deps.metrics || !ctx.deps.config.FOOTFALL_METRICS_TOKEN) throw noSuchRoute(ctx.method, ctx.path);
  await next();
};

/** The scrape token, compared in constant time (as digests, so a wrong length tells nothing either). */
const scraper: Mw = async (ctx, next) => {
  const expected = ctx.deps.config.FOOTFALL_METRICS_TOKEN!;
  const sent = /^Bearer +(\S+)$/i.exec(ctx.get('authorization'))?.[1];
  const digest = (v: string) => createHash('sha256').update(v).digest();
  if (!sent || !timingSafeEqual(digest(sent), digest(expected))) {
    ctx.set('WWW-Authenticate', 'Bearer realm="footfall metrics"');
    throw unauthorized(sent ? 'That metrics token is not the one head office was given (FOOTFALL_METRICS_TOKEN).' : 'Send the metrics token as a bearer token (FOOTFALL_METRICS_TOKEN).');
  }
  await next();
};

/** Counts and times every answered request by its route template (ids never become labels). */
export const requestMetrics: Mw = (ctx, next) => (ctx.deps.metrics ? timed(ctx, next, ctx.deps.metrics) : next());

async function timed(ctx: Ctx, next: Next, metrics: Metrics): Promise<void> {
  const started = process.hrtime.bigint();
  try {
    await next();
  } finally {
    const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
    const route = typeof matched === 'string' ? matched : 'unmatched';
    metrics.request(ctx.method, route, ctx.status, Number(process.hrtime.bigint() - started) / 1e9);
  }
}
