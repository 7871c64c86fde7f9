import Router from '@koa/router';
import { tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { queryOf, validate } from '../http/pipeline.js';
import { reportsPolicy } from './policy.js';
import { reportPool } from './pool.js';
import { conversionCsv, footfallCsv, formatOf, sendCsv } from './csv.js';
import { presentConversion, presentFootfall, presentRegions } from './presenter.js';
import { getShop, listShops } from '../shops/service.js';
import { ReportQueryInput, resolveReportQuery, type ReportQuery } from './query.js';

/** Parsed, defaulted and checked on this thread (every 400 as before); only the counting goes to a report thread. */
async function reportQuery(ctx: Ctx): Promise<ReportQuery> {
  return await resolveReportQuery(ctx.deps.store.db, tenantOf(ctx), queryOf(ctx, ReportQueryInput));
}

/** The filtered shop's slug for the CSV's `site` column; empty for the whole company. */
async function siteName(ctx: Ctx, q: ReportQuery): Promise<string> {
  return q.siteId ? ((await getShop(ctx.deps.store.db, q.siteId))?.slug ?? '') : '';
}

export function reportsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/reports' });

  /** Footfall per bucket over a window of local days (docs/reports.md), computed off the event loop (pool.ts). */
  r.get('/footfall', auth(reportsPolicy.view), validate({ query: ReportQueryInput }), async (ctx) => {
    const format = formatOf(ctx);
    const q = await reportQuery(ctx);
    const body = presentFootfall(await reportPool(ctx.deps).footfall(tenantOf(ctx), q));
    if (format === 'csv') sendCsv(ctx, 'footfall', q, footfallCsv(body));
    else ctx.body = body;
  });

  /** Visitors, purchasers and revenue over the same window. */
  r.get('/conversion', auth(reportsPolicy.view), validate({ query: ReportQueryInput }), async (ctx) => {
    const format = formatOf(ctx);
    const q = await reportQuery(ctx);
    const body = presentConversion(await reportPool(ctx.deps).conversion(tenantOf(ctx), q));
    if (format === 'csv') sendCsv(ctx, 'conversion', q, conversionCsv(body, q, await siteName(ctx, q)));
    else ctx.body = body;
  });

  /** Regions ranked (docs/reports.md, "Regions"): one footfall and one conversion report per region, on the report threads. */
  r.get('/regions', auth(reportsPolicy.view), validate({ query: ReportQueryInput }), async (ctx) => {
    const companyId = tenantOf(ctx);
    const q = { ...await reportQuery(ctx), siteId: null, bucket: 'day' as const };
    const shops = await listShops(ctx.deps.store.db, companyId);
    const groups = [...new Set(shops.map((s) => s.region))];
    const pool = reportPool(ctx.deps);
    const rows = await Promise.all(
      groups.map(async (region) => {
        const scoped = { ...q, region: region ?? '' };
        const [f, c] = await Promise.all([pool.footfall(companyId, scoped), pool.conversion(companyId, scoped)]);
        return { region, shops: shops.filter((s) => s.region === region).length, f: presentFootfall(f), c: presentConversion(c) };
      }),
    );
    ctx.body = presentRegions(q, rows);
  });

  return r;
}
