import { and, asc, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { Db } from '../db/open.js';
import { badRequest } from '../http/errors.js';
import { resolve } from '../references/resolver.js';
import { shopRef } from '../references/shops.js';
import { DEFAULT_TIMEZONE, canonicalTimezone, getShop } from '../shops/service.js';
import { LAST_YEAR, addDays, daysBetween, isDate, mondayOf, monthStart, todayIn, type BucketKind } from './calendar.js';
import { one } from '../db/query.js';
import { shops } from '../db/tables.js';

export const BUCKETS = ['hour', 'day', 'week', 'month'] as const satisfies readonly BucketKind[];

/** Longest window per bucket, in days (`from` to `to` inclusive). */
export const MAX_DAYS: Record<BucketKind, number> = { hour: 31, day: 366, week: 366, month: 731 };

/** An empty parameter (`?site=`) is the same as an absent one. */
const optionalText = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const date = optionalText(10).refine((v) => v === undefined || isDate(v), `must be a date as YYYY-MM-DD, from 1970-01-01 to ${LAST_YEAR}-12-31`);

/** The query string of GET /api/reports/footfall and /conversion (the same for both). */
export const ReportQueryInput = z.object({
  from: date,
  to: date,
  /** Shop id or slug; omitted: the whole company. `site_id` is the same filter (spec: References, rule 6). */
  site: optionalText(200),
  site_id: optionalText(200),
  /** Additive: only the shops of this region (docs/reports.md, "Regions"). */
  region: optionalText(100),
  /** IANA zone name. */
  tz: optionalText(64),
  bucket: z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), z.enum(BUCKETS, { error: 'must be hour, day, week or month' }).optional()),
});

export type ReportQuery = { from: string; to: string; siteId: string | null; region: string | null; tz: string; bucket: 'hour' | 'day' | 'week' | 'month' };

/** The default window ending on `to`: one day of hours, seven days, four weeks, twelve months. */
function defaultFrom(to: string, bucket: BucketKind): string {
  switch (bucket) {
    case 'hour':
      return to;
    case 'day':
      return addDays(to, -6);
    case 'week':
      return addDays(mondayOf(to), -21);
    case 'month':
      return monthStart(to, -11);
  }
}

/** The zone of the filtered shop; else of the company's first shop; else the spec's shop default. */
async function defaultZone(db: Db, companyId: string, siteId: string | null): Promise<string> {
  const shop = siteId ? (await getShop(db, siteId)) : await one(db.select().from(shops).where(eq(shops.companyId, companyId)).orderBy(asc(shops.createdAt), asc(shops.slug)));
  return (shop && canonicalTimezone(shop.timezone)) ?? DEFAULT_TIMEZONE;
}

/**
 * Applies the defaults (docs/reports.md), resolves the shop in the caller's company (unknown or another company's:
 * 400) and checks the window. Throws 400 invalid_request naming the field.
 */
export async function resolveReportQuery(db: Db, companyId: string, input: z.output<typeof ReportQueryInput>, now: Date = new Date()): Promise<ReportQuery> {
  const refs = [input.site, input.site_id].filter((v): v is string => v !== undefined);
  const ids = [...new Set(await Promise.all(refs.map((v) => resolve(db, shopRef, companyId, v, 'query'))))];
  if (ids.length > 1) throw badRequest('site and site_id name different shops; send one of them.');
  const siteId = ids[0] ?? null;
  const region = input.region ?? null;
  if (region !== null && !(await one(db.select({ id: shops.id }).from(shops).where(and(eq(shops.companyId, companyId), eq(shops.region, region))))))
    throw badRequest(`region: no shop of yours is in the region "${region}"`);

  let tz: string;
  if (input.tz !== undefined) {
    const zone = canonicalTimezone(input.tz);
    if (!zone) throw badRequest(`tz: "${input.tz}" is not an IANA time zone name (for example Asia/Kolkata or America/New_York)`);
    tz = zone;
  } else {
    tz = await defaultZone(db, companyId, siteId);
  }

  const bucket = input.bucket ?? 'day';
  const to = input.to ?? todayIn(tz, now);
  const from = input.from ?? defaultFrom(to, bucket);
  if (from > to) throw badRequest(`from: ${from} is after to (${to}); from must be on or before to`);
  const days = daysBetween(from, to) + 1;
  const max = MAX_DAYS[bucket];
  if (days > max) throw badRequest(`to: the window from ${from} to ${to} is ${days} days; with bucket ${bucket} it may be at most ${max} days`);
  return { from, to, siteId, region, tz, bucket };
}

