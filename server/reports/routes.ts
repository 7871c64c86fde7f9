import Router from '@koa/router';
import { tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { queryOf, validate } from '../http/pipeline.js';
import { reportsPolicy } from './policy.js';
import { presentConversion, presentFootfall } from './presenter.js';
import { ReportQueryInput, resolveReportQuery, type ReportQuery } from './query.js';
import { conversionReport, footfallReport } from './service.js';

function reportQuery(ctx: Ctx): ReportQuery {
  return resolveReportQuery(ctx.deps.store.db, tenantOf(ctx), queryOf(ctx, ReportQueryInput));
}

export function reportsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/reports' });

  /** Footfall per bucket over a window of local days (docs/reports.md). */
  r.get('/footfall', auth(reportsPolicy.view), validate({ query: ReportQueryInput }), (ctx) => {
    ctx.body = presentFootfall(footfallReport(ctx.deps.store.db, tenantOf(ctx), reportQuery(ctx)));
  });

  /** Visitors, purchasers and revenue over the same window. */
  r.get('/conversion', auth(reportsPolicy.view), validate({ query: ReportQueryInput }), (ctx) => {
    ctx.body = presentConversion(conversionReport(ctx.deps.store.db, tenantOf(ctx), reportQuery(ctx)));
  });

  return r;
}
