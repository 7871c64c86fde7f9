import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { bySql, row, rows, indexedBy, isFalse } from '../db/raw.js';
import type { Bucket } from './calendar.js';
import { agedByBucket, hasAged } from './aged.js';
import { shopScope, type Scope } from './door.js';
import { boundsJson, bySlug, visitBuckets } from './sql.js';

/**
 * Dwell time and age and gender bands of the footfall report (docs/reports.md, "Dwell time" and "Age and gender
 * bands"). Counted in SQL over the same UTC bucket bounds as the visitors, staff left out:
 * - one pass grouped by bucket and shop gives each pair's visits, summed dwell and band counts; the points, the shops
 *   and the window are sums of these pairs (the buckets partition the window);
 * - medians, per bucket, per shop and over the window: the middle visit (or the mean of the two middle ones) of the
 *   visits read in dwell order, with limit and offset from the counts of the pass above.
 * Bands count visits, not people: a person's age estimate can differ from one visit to the next.
 */

export const AGE_BANDS = ['under_18', '18_24', '25_34', '35_44', '45_54', '55_64', '65_plus'] as const;
export const GENDER_BANDS = ['female', 'male'] as const;
export type AgeBand = (typeof AGE_BANDS)[number] | 'unknown';
export type GenderBand = (typeof GENDER_BANDS)[number] | 'unknown';

/** Lower bounds in years of AGE_BANDS after the first (under 18): a band holds ages from its bound to the next one. */
const AGE_BOUNDS = [18, 25, 35, 45, 55, 65];

export interface Mix {
  visits: number;
  /** Summed dwell of the visits, ms. */
  dwellMs: number;
  /** Median dwell, ms; 0 without visits. */
  medianDwellMs: number;
  age: Record<AgeBand, number>;
  gender: Record<GenderBand, number>;
}

export interface ShopMix extends Mix {
  id: string;
  name: string;
  slug: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

function emptyMix(): Mix {
  return {
    visits: 0,
    dwellMs: 0,
    medianDwellMs: 0,
    age: Object.fromEntries([...AGE_BANDS, 'unknown'].map((k) => [k, 0])) as Record<AgeBand, number>,
    gender: { female: 0, male: 0, unknown: 0 },
  };
}

function add(into: Mix, r: PairRow): void {
  into.visits += r.visits;
  into.dwellMs += r.dwell;
  AGE_BANDS.forEach((k, j) => (into.age[k] += r[`a${j}` as keyof PairRow] as number));
  into.gender.female += r.female;
  into.gender.male += r.male;
}

function close(m: Mix): Mix {
  m.age.unknown = m.visits - AGE_BANDS.reduce((n, k) => n + m.age[k], 0);
  m.gender.unknown = m.visits - m.gender.female - m.gender.male;
  return m;
}

interface PairRow {
  i: number;
  shop: string;
  visits: number;
  dwell: number;
  female: number;
  male: number;
  a0: number;
  a1: number;
  a2: number;
  a3: number;
  a4: number;
  a5: number;
  a6: number;
}

/** The age band columns: under 18, then each bound to the next, the last open-ended. A null age is in none. */
function ageColumns(): SQL {
  const cols = [sql`count(*) filter (where v.age < ${AGE_BOUNDS[0]}) as a0`];
  AGE_BOUNDS.forEach((lo, j) => {
    const hi = AGE_BOUNDS[j + 1];
    cols.push(hi === undefined ? sql`count(*) filter (where v.age >= ${lo}) as ${sql.raw(`a${j + 1}`)}` : sql`count(*) filter (where v.age >= ${lo} and v.age < ${hi}) as ${sql.raw(`a${j + 1}`)}`);
  });
  return sql.join(cols, sql`, `);
}

/**
 * Dwell and bands per bucket (same order as `buckets`), per shop of the scope (in slug order, those without visits too) and over
 * the window the buckets partition. `bands: false` skips the band counts (which read each visit's row; the dwell
 * figures come from visits_shop_time_idx alone).
 */
export async function visitMix(db: Db, companyId: string, scope: Scope, buckets: readonly Bucket[], bands = true): Promise<{ points: Mix[]; shops: ShopMix[]; window: Mix }> {
  const bounds = boundsJson(buckets);
  const per = visitBuckets(buckets);
  const visits = sql`${per.join}shops s cross join visits v${indexedBy('visits_shop_time_idx')}
    where ${shopScope(companyId, scope)} and v.shop_id = s.id and ${isFalse('v.staff')} and ${per.within}`;
  const bandCols = bands
    ? sql`count(*) filter (where lower(v.gender) = 'female') as female, count(*) filter (where lower(v.gender) = 'male') as male, ${ageColumns()}`
    : sql`0 as female, 0 as male, 0 as a0, 0 as a1, 0 as a2, 0 as a3, 0 as a4, 0 as a5, 0 as a6`;
  const pairs = await rows<PairRow>(db, sql`
    ${per.with}
    select ${per.i} as i, s.id as shop, count(*) as visits, ${bySql(sql`total(v.dwell_ms)`, sql`coalesce(sum(v.dwell_ms), 0)`)} as dwell, ${bandCols}
    from ${visits} group by ${per.group}, s.id`);
  const points = buckets.map(emptyMix);
  const window = emptyMix();
  const byShop = new Map<string, Mix>();
  for (const r of pairs) {
    add(points[r.i]!, r);
    add(window, r);
    let m = byShop.get(r.shop);
    if (!m) byShop.set(r.shop, (m = emptyMix()));
    add(m, r);
  }
  // Medians: the middle visit (or the two middle ones) of each bucket, each shop and the window, by an ordered read
  // with limit and offset, the count known from the pass above (measured: a third of row_number() over a window).
  const median = async (where: SQL, n: number): Promise<number> => {
    if (n === 0) return 0;
    // The subquery's alias: PostgreSQL before 16 requires one.
    const r = await row<{ ms: number | null }>(db, sql`
      with d as materialized (select v.dwell_ms as ms from shops s cross join visits v${indexedBy('visits_shop_time_idx')}
        where ${where} and v.shop_id = s.id and ${isFalse('v.staff')} order by v.dwell_ms)
      select avg(ms) as ms from (select ms from d limit ${2 - (n % 2)} offset ${Math.floor((n - 1) / 2)}) as m`);
    return r?.ms ?? 0;
  };
  const scoped = shopScope(companyId, scope);
  const lo = iso(buckets[0]?.lo ?? 0);
  const hi = iso(buckets[buckets.length - 1]?.hi ?? 0);
  for (const [i, bk] of buckets.entries()) points[i]!.medianDwellMs = await median(sql`${scoped} and v.occurred_at >= ${iso(bk.lo)} and v.occurred_at < ${iso(bk.hi)}`, points[i]!.visits);
  for (const [id, m] of byShop) m.medianDwellMs = await median(sql`${scoped} and s.id = ${id} and v.occurred_at >= ${lo} and v.occurred_at < ${hi}`, m.visits);
  // One bucket, or one shop with visits: the window's median is already known.
  const only = [...byShop.values()].filter((m) => m.visits > 0);
  window.medianDwellMs = buckets.length === 1 ? points[0]!.medianDwellMs : only.length === 1 ? only[0]!.medianDwellMs : await median(sql`${scoped} and v.occurred_at >= ${lo} and v.occurred_at < ${hi}`, window.visits);
  // Visits aged out by visit_retention_days (aged.ts) count in visits and the mean dwell like the rows held; they keep
  // no attributes (their bands are unknown) and no single stays (the medians are of the visits held).
  if (await hasAged(db, companyId)) {
    for (const a of (await agedByBucket(db, companyId, scope, bounds))) {
      const r: PairRow = { i: a.i, shop: a.shop, visits: a.visits, dwell: a.dwellMs, female: 0, male: 0, a0: 0, a1: 0, a2: 0, a3: 0, a4: 0, a5: 0, a6: 0 };
      add(points[r.i]!, r);
      add(window, r);
      let m = byShop.get(r.shop);
      if (!m) byShop.set(r.shop, (m = emptyMix()));
      add(m, r);
    }
  }
  const names = await rows<{ id: string; name: string; slug: string }>(db, sql`select s.id as id, s.name as name, s.slug as slug from shops s where ${shopScope(companyId, scope)} order by ${bySlug}`);
  const shops = names.map((s): ShopMix => ({ ...s, ...close(byShop.get(s.id) ?? emptyMix()) }));
  return { points: points.map(close), shops, window: close(window) };
}
