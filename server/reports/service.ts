import { sql, type SQL } from 'drizzle-orm';
import type Database from 'better-sqlite3';
import type { Db } from '../db/open.js';
import type { PgDb } from '../db/pg/open.js';
import { bySql, onPostgres, row, rows, indexedBy, isFalse, isTrue } from '../db/raw.js';
import { readTransactionOf } from '../db/transaction.js';
import { minorDigits } from '../purchases/service.js';
import { bucketsOf, previousWindow, windowOf, type Bucket } from './calendar.js';
import { visitMix, type Mix, type ShopMix } from './mix.js';
import { agedByBucket, agedBySite, hasAged } from './aged.js';
import { doorCounts, shopScope, type Scope } from './door.js';
import { openHoursBetween, type OpeningHours } from '../shops/hours.js';
import type { ReportQuery } from './query.js';
import { boundsJson, bucketTable, bySlug, jsonArrayText } from './sql.js';

/**
 * Footfall and conversion (spec: Reports; decisions in docs/reports.md). Everything is counted in SQL over UTC
 * ranges that the calendar computes from local wall time: visits shop by shop through visits_shop_time_idx, new
 * customers through customers_company_first_idx (both from migration 0004) or, for one shop, their first visit
 * through customers_id_first_idx (migration 0006), purchases through purchases_company_idx. All queries of one
 * report read one snapshot.
 */

export interface FootfallPoint {
  /** Local wall-time label (calendar.ts). */
  label: string;
  /** Unique people: distinct customers plus one per unidentified visit. */
  visitors: number;
  /** Customers whose first visit ever falls in this bucket (and who visited the scope in it). */
  newVisitors: number;
  /** The other customers of the bucket. */
  returning: number;
  /** Crossings of a counting line into the shop (entries) and out of it (exits) in the bucket (door.ts). */
  entries: number;
  exits: number;
  /** Identified visits / entries, 0..1; null without entries (door.ts). */
  captureRate: number | null;
  /** Hour buckets: whether a shop of the scope was open in it; null for other buckets or without opening hours. */
  open: boolean | null;
  /** Visits, dwell and bands of the bucket (mix.ts). */
  mix: Mix;
}

/** The window figures of the period before (docs/reports.md, "Compared with the period before"). */
export interface PreviousFootfall {
  from: string;
  to: string;
  total: number;
  visits: number;
  belowGate: number;
  averageDwellMs: number;
  medianDwellMs: number;
  entries: number;
  exits: number;
  captureRate: number | null;
  openHours: number | null;
}

export interface SiteShare {
  id: string;
  name: string;
  slug: string;
  visits: number;
  belowGate: number;
}

export interface FootfallReport {
  query: ReportQuery;
  points: FootfallPoint[];
  /** Unique people over the whole window (not the sum of the points). */
  total: number;
  visits: number;
  belowGate: number;
  /** belowGate / visits; 0 without visits. */
  fractionBelowGate: number;
  /** Average length of a visit (a stay) in milliseconds; 0 without visits. */
  averageDwellMs: number;
  /** The shop with the largest share of visits below the gate; null without visits. */
  worstSite: SiteShare | null;
  /** Entries and exits over the window (the sums of the points'). */
  entries: number;
  exits: number;
  /** Over the whole window; null without entries. */
  captureRate: number | null;
  /** Hours the scope's shops were open over the window (summed over shops); null unless every shop has opening hours. */
  openHours: number | null;
  /** Median length of a visit, ms; 0 without visits. */
  medianDwellMs: number;
  /** Visits, dwell and bands over the window, and per shop of the scope (mix.ts). */
  mix: Mix;
  shops: ShopMix[];
  /** The same figures over the period before. */
  previous: PreviousFootfall;
}

export interface CurrencyTotal {
  currency: string;
  baskets: number;
  amountMinor: number;
}

export interface ConversionReport {
  query: ReportQuery;
  /** The footfall report's `total`. */
  visitors: number;
  /** Distinct customers with a purchase in the window. */
  purchasers: number;
  /** purchasers / visitors; 0 without visitors. */
  conversion: number;
  /** The currency reported (most purchases); null without purchases. */
  main: CurrencyTotal | null;
  /** Every currency of the window, main first. */
  currencies: CurrencyTotal[];
  /** The same figures over the period before (docs/reports.md, "Compared with the period before"). */
  previous: PreviousConversion;
}

export interface PreviousConversion {
  from: string;
  to: string;
  visitors: number;
  purchasers: number;
  conversion: number;
  main: CurrencyTotal | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The visits of the scope: the company's shops (or the one filtered), each shop's visits through
 * visits_shop_time_idx (shop_id, occurred_at, customer_id, passed_gate, staff, dwell_ms; migration 0007), which
 * covers every column counted, so no table row is read. A visit's company is its shop's, so the tenant is the shop's
 * company_id. Staff's visits are never counted (their customers' flag is copied onto them, past ones included).
 */
function scopedVisits(companyId: string, scope: Scope): { from: SQL; where: SQL } {
  const shop = shopScope(companyId, scope);
  return { from: sql`shops s cross join visits v${indexedBy('visits_shop_time_idx')}`, where: sql`${shop} and v.shop_id = s.id and ${isFalse('v.staff')}` };
}

/**
 * Runs fn in one read transaction, so every query of a report sees the same rows; fn queries through the database it
 * is handed. SQLite: BEGIN DEFERRED on the connection (a savepoint when already inside a transaction), the same
 * database. PostgreSQL: a transaction of its own on one pooled connection, `repeatable read` (one snapshot for all
 * its statements; read committed would take one per statement) and `read only`; inside an open transaction, a
 * savepoint of it.
 */
export function readSnapshot<T>(db: Db, fn: (db: Db) => Promise<T>): Promise<T> {
  if (!onPostgres) return readTransactionOf(db as unknown as { $client: Database.Database })(() => fn(db));
  return (db as unknown as PgDb).transaction((t) => fn(t as unknown as Db), { isolationLevel: 'repeatable read', accessMode: 'read only' });
}

interface WindowCounts {
  /** Distinct customers plus unidentified visits. */
  people: number;
  visits: number;
  belowGate: number;
  dwellMs: number;
  sites: SiteShare[];
}

async function windowCounts(db: Db, companyId: string, scope: Scope, lo: string, hi: string): Promise<WindowCounts> {
  const { from, where } = scopedVisits(companyId, scope);
  const range = sql`${where} and v.occurred_at >= ${lo} and v.occurred_at < ${hi}`;
  // Grouped by slug on SQLite: shops are read in slug order (shops_company_slug_uq), so grouping needs no sort.
  // PostgreSQL groups by the key (its other columns follow from it) and sorts as SQLite does (sql.ts, bySlug).
  const sites = await rows<SiteShare & { anon: number; dwell: number }>(db, sql`
    select s.id as id, s.name as name, s.slug as slug, count(*) as visits,
      count(*) filter (where ${isFalse('v.passed_gate')}) as "belowGate", count(*) filter (where v.customer_id is null) as anon,
      ${bySql(sql`total(v.dwell_ms)`, sql`coalesce(sum(v.dwell_ms), 0)`)} as dwell
    from ${from} where ${range} ${bySql(sql`group by s.slug`, sql`group by s.id order by ${bySlug}`)}`);
  const known = (await row<{ n: number }>(db, sql`select count(distinct v.customer_id) as n from ${from} where ${range}`))?.n ?? 0;
  let people = known + sites.reduce((n, r) => n + r.anon, 0);
  if (await hasAged(db, companyId)) {
    // Aged days (visit_retention_days): their counts add to the rows held, shop by shop (aged.ts).
    const byId = new Map(sites.map((r) => [r.id, r]));
    for (const a of (await agedBySite(db, companyId, scope, lo, hi))) {
      people += a.known + a.anon;
      const r = byId.get(a.id);
      if (r) {
        r.visits += a.visits;
        r.belowGate += a.belowGate;
        r.dwell += a.dwellMs;
      } else {
        const row = { id: a.id, name: a.name, slug: a.slug, visits: a.visits, belowGate: a.belowGate, anon: a.anon, dwell: a.dwellMs };
        sites.push(row);
        byId.set(a.id, row);
      }
    }
    sites.sort((x, y) => (x.slug < y.slug ? -1 : x.slug > y.slug ? 1 : 0));
  }
  return {
    people,
    visits: sites.reduce((n, r) => n + r.visits, 0),
    belowGate: sites.reduce((n, r) => n + r.belowGate, 0),
    dwellMs: sites.reduce((n, r) => n + r.dwell, 0),
    sites: sites.map(({ id, name, slug, visits, belowGate }) => ({ id, name, slug, visits, belowGate })),
  };
}

/** Highest share below the gate; ties: more visits below the gate, then name, then slug. */
function worstOf(sites: readonly SiteShare[]): SiteShare | null {
  let worst: SiteShare | null = null;
  for (const s of sites) {
    if (s.visits === 0) continue;
    if (!worst) {
      worst = s;
      continue;
    }
    const d = s.belowGate * worst.visits - worst.belowGate * s.visits; // s's share minus worst's, without division
    const tie = s.belowGate - worst.belowGate || (s.name < worst.name ? 1 : s.name > worst.name ? -1 : s.slug < worst.slug ? 1 : -1);
    if (d > 0 || (d === 0 && tie > 0)) worst = s;
  }
  return worst;
}

interface BucketCounts {
  /** Distinct customers. */
  known: number;
  /** Unidentified visits. */
  anon: number;
  /** Customers first seen ever in the bucket who visited the scope in it. */
  fresh: number;
}

/**
 * Per bucket, one correlated range scan each (no sort: the bucket list drives the loop), counting customers and
 * unidentified visits in the same pass. "New": a customer whose customers.first_seen_at (the earliest of their
 * visits, kept by ingest and merge) lies in the bucket. For the whole company that is a count on
 * customers_company_first_idx (their first visit is in the company, so in the bucket). For one shop it is checked
 * on the shop's customers of the bucket: the bucket's visits grouped by customer (the unidentified ones in one group,
 * customer_id null), then each customer's first_seen_at read once from customers_id_first_idx (migration 0006), not
 * from the customer's row, which carries a 2 KiB template.
 */
async function bucketCounts(db: Db, companyId: string, scope: Scope, buckets: readonly Bucket[], hourly: boolean): Promise<BucketCounts[]> {
  const bounds = boundsJson(buckets);
  const { from, where } = scopedVisits(companyId, scope);
  const inBucket = sql`${where} and v.occurred_at >= b.lo and v.occurred_at < b.hi`;
  const firstInBucket = sql`c.first_seen_at >= b.lo and c.first_seen_at < b.hi`;
  const counted = scope.siteId || scope.region !== null
    ? await rows<{ i: number; r: string }>(db, sql`
        with ${bucketTable(bounds)}
        select b.i as i, (
          select ${jsonArrayText([sql`count(d.customer_id)`, sql`coalesce(sum(d.visits) filter (where d.customer_id is null), 0)`, sql`count(*) filter (where ${firstInBucket})`])}
          from (select v.customer_id as customer_id, count(*) as visits from ${from} where ${inBucket} group by v.customer_id) d
            left join customers c${indexedBy('customers_id_first_idx')} on c.id = d.customer_id) as r
        from b`)
    : await rows<{ i: number; r: string }>(db, sql`
        with ${bucketTable(bounds)}
        select b.i as i, (
          select ${jsonArrayText([
            sql`count(distinct v.customer_id)`,
            sql`count(*) filter (where v.customer_id is null)`,
            sql`(select count(*) from customers c${indexedBy('customers_company_first_idx')}
                 where c.company_id = ${companyId} and c.merged_into is null and ${isFalse('c.staff')} and ${firstInBucket})`,
          ])}
          from ${from} where ${inBucket}) as r
        from b`);
  const out = buckets.map((): BucketCounts => ({ known: 0, anon: 0, fresh: 0 }));
  for (const r of counted) {
    const [known, anon, fresh] = JSON.parse(r.r) as [number, number, number];
    out[r.i] = { known, anon, fresh };
  }
  if (await hasAged(db, companyId)) {
    // Aged days: each customer counted once per shop and local day; "new" for the whole company stays the count on
    // customers.first_seen_at above (kept when visits age out), for a shop or region it comes with the counts.
    const scoped = scope.siteId !== null || scope.region !== null;
    for (const a of (await agedByBucket(db, companyId, scope, bounds))) {
      const o = out[a.i]!;
      o.known += hourly ? a.knownHour : a.known;
      o.anon += a.anon;
      if (scoped) o.fresh += hourly ? a.freshHour : a.fresh;
    }
  }
  return out;
}

export async function footfallReport(db: Db, companyId: string, q: ReportQuery): Promise<FootfallReport> {
  const buckets = bucketsOf(q.tz, q.from, q.to, q.bucket);
  const w = windowOf(q.tz, q.from, q.to);
  return await readSnapshot(db, async (db) => {
    const counts = await windowCounts(db, companyId, q, iso(w.lo), iso(w.hi));
    const per = await bucketCounts(db, companyId, q, buckets, q.bucket === 'hour');
    const { points: door, total: whole } = await doorCounts(db, companyId, q, buckets);
    const hours = await scopeHours(db, companyId, q);
    const mix = await visitMix(db, companyId, q, buckets);
    const points = buckets.map((b, i): FootfallPoint => {
      const { known, anon, fresh } = per[i]!;
      const { entries, exits, captureRate } = door[i]!;
      const newVisitors = Math.min(fresh, known);
      const open = q.bucket !== 'hour' || !hours ? null : hours.some((x) => openHoursBetween(x.hours, x.tz, b.lo, b.hi) > 0);
      return { label: b.label, visitors: known + anon, newVisitors, returning: known - newVisitors, entries, exits, captureRate, open, mix: mix.points[i]! };
    });
    return {
      query: q,
      points,
      total: counts.people,
      visits: counts.visits,
      belowGate: counts.belowGate,
      fractionBelowGate: counts.visits === 0 ? 0 : counts.belowGate / counts.visits,
      averageDwellMs: counts.visits === 0 ? 0 : counts.dwellMs / counts.visits,
      worstSite: worstOf(counts.sites),
      entries: whole.entries,
      exits: whole.exits,
      captureRate: whole.captureRate,
      openHours: hours ? hours.reduce((n, x) => n + openHoursBetween(x.hours, x.tz, w.lo, w.hi), 0) : null,
      medianDwellMs: mix.window.medianDwellMs,
      mix: mix.window,
      shops: mix.shops,
      previous: await previousFootfall(db, companyId, q, hours),
    };
  });
}

/**
 * The footfall report's window figures over the period before (calendar.ts previousWindow): people, visits, faces
 * below the gate, dwell (mean and median), entries, exits, capture rate and open hours; no points, no bands.
 */
async function previousFootfall(db: Db, companyId: string, q: ReportQuery, hours: { hours: OpeningHours; tz: string }[] | null): Promise<PreviousFootfall> {
  const p = previousWindow(q.from, q.to);
  const w = windowOf(q.tz, p.from, p.to);
  const counts = await windowCounts(db, companyId, q, iso(w.lo), iso(w.hi));
  const one = [{ label: '', lo: w.lo, hi: w.hi }];
  const { total: door } = await doorCounts(db, companyId, q, one);
  const mix = await visitMix(db, companyId, q, one, false);
  return {
    from: p.from,
    to: p.to,
    total: counts.people,
    visits: counts.visits,
    belowGate: counts.belowGate,
    averageDwellMs: counts.visits === 0 ? 0 : counts.dwellMs / counts.visits,
    medianDwellMs: mix.window.medianDwellMs,
    entries: door.entries,
    exits: door.exits,
    captureRate: door.captureRate,
    openHours: hours ? hours.reduce((n, x) => n + openHoursBetween(x.hours, x.tz, w.lo, w.hi), 0) : null,
  };
}

/** The opening hours of every shop in scope, or null when one of them has none set (or the scope has no shop). */
async function scopeHours(db: Db, companyId: string, scope: Scope): Promise<{ hours: OpeningHours; tz: string }[] | null> {
  // As JSON text on both: node-postgres would hand a jsonb column over parsed.
  const shops = await rows<{ hours: string | null; tz: string }>(
    db,
    sql`select ${bySql(sql`s.opening_hours`, sql`s.opening_hours::text`)} as hours, s.timezone as tz from shops s where ${shopScope(companyId, scope)}`,
  );
  if (shops.length === 0 || shops.some((r) => r.hours === null)) return null;
  return shops.map((r) => ({ hours: JSON.parse(r.hours!) as OpeningHours, tz: r.tz }));
}

/** Most purchases first; ties: the larger amount in major units, then the code. */
function byMain(a: CurrencyTotal & { major: number }, b: CurrencyTotal & { major: number }): number {
  return b.baskets - a.baskets || b.major - a.major || (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0);
}

/** Visitors, purchasers and the currencies of purchases over [lo, hi) (one read snapshot is the caller's). */
async function conversionWindow(db: Db, companyId: string, q: ReportQuery, lo: string, hi: string) {
  const visitors = (await windowCounts(db, companyId, q, lo, hi)).people;
  // Staff's purchases are left out like their visits (customers_company_staff_idx lists them).
  const scope = sql`p.company_id = ${companyId} and p.created_at >= ${lo} and p.created_at < ${hi} ${q.siteId || q.region !== null ? sql`and p.shop_id in (select s.id from shops s where ${shopScope(companyId, q)})` : sql``}
    and p.customer_id not in (select c.id from customers c where c.company_id = ${companyId} and ${isTrue('c.staff')})`;
  const purchasers = (await row<{ n: number }>(db, sql`select count(distinct p.customer_id) as n from purchases p where ${scope}`))?.n ?? 0;
  const currencies = (await rows<CurrencyTotal>(db, sql`select p.currency as currency, count(*) as baskets, sum(p.amount_minor) as "amountMinor" from purchases p where ${scope} group by p.currency`))
    .map((c) => ({ ...c, major: c.amountMinor / 10 ** minorDigits(c.currency) }))
    .sort(byMain)
    .map(({ currency, baskets, amountMinor }) => ({ currency, baskets, amountMinor }));
  return { visitors, purchasers, conversion: visitors === 0 ? 0 : purchasers / visitors, main: currencies[0] ?? null, currencies };
}

export async function conversionReport(db: Db, companyId: string, q: ReportQuery): Promise<ConversionReport> {
  const w = windowOf(q.tz, q.from, q.to);
  const p = previousWindow(q.from, q.to);
  const pw = windowOf(q.tz, p.from, p.to);
  return await readSnapshot(db, async (db) => {
    const now = await conversionWindow(db, companyId, q, iso(w.lo), iso(w.hi));
    const before = await conversionWindow(db, companyId, q, iso(pw.lo), iso(pw.hi));
    return {
      query: q,
      ...now,
      previous: { from: p.from, to: p.to, visitors: before.visitors, purchasers: before.purchasers, conversion: before.conversion, main: before.main },
    };
  });
}
