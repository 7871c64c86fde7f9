import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { rows, indexedBy, isFalse } from '../db/raw.js';
import { agedByBucket, hasAged } from './aged.js';
import type { Bucket } from './calendar.js';
import { boundsJson, bucketTable, jsonValues, visitBuckets } from './sql.js';

/**
 * Entries, exits and the capture rate of the footfall report (docs/reports.md, "Entries, exits and capture rate").
 * Crossings are counted per bucket and shop on crossings_shop_direction_time_idx (shop_id, direction, occurred_at),
 * like visits through visits_shop_time_idx, over the same UTC bucket bounds, so a crossing and a visit at the same
 * instant always land in the same bucket.
 *
 * Capture rate: identified visits (visits with a customer, staff's left out, as the report counts visitors) over
 * entries, summed over the shops that had entries in the bucket (a shop without a counting line adds neither), at
 * most 1; null without entries.
 */

export interface DoorCounts {
  entries: number;
  exits: number;
  /** 0..1; null without entries. */
  captureRate: number | null;
}

/** The shops a report covers: one shop, one region's, or the whole company's. */
export interface Scope {
  siteId: string | null;
  /** null: any region; '' (never a stored region): the shops without one. */
  region: string | null;
}

export function shopScope(companyId: string, scope: Scope): SQL {
  const site = scope.siteId ? sql` and s.id = ${scope.siteId}` : sql``;
  const region = scope.region === null ? sql`` : scope.region === '' ? sql` and s.region is null` : sql` and s.region = ${scope.region}`;
  return sql`s.company_id = ${companyId}${site}${region}`;
}


/**
 * Per bucket (same order as `buckets`) and over the window they partition: entries, exits and capture rate of the
 * scope. Entries and exits are two counted index ranges per bucket and shop (crossings_shop_direction_time_idx);
 * identified visits are read only for the shops with entries in the window.
 */
export async function doorCounts(db: Db, companyId: string, where: Scope, buckets: readonly Bucket[]): Promise<{ points: DoorCounts[]; total: DoorCounts }> {
  const bounds = boundsJson(buckets);
  const b = bucketTable(bounds);
  const scope = shopScope(companyId, where);
  const side = (direction: 'in' | 'out') =>
    sql`(select count(*) from crossings x${indexedBy('crossings_shop_direction_time_idx')}
         where x.shop_id = s.id and x.direction = ${direction} and x.occurred_at >= b.lo and x.occurred_at < b.hi)`;
  // The subquery's alias: PostgreSQL before 16 requires one.
  const crossed = await rows<{ i: number; shop: string; entries: number; exits: number }>(db, sql`
    with ${b}
    select * from (select b.i as i, s.id as shop, ${side('in')} as entries, ${side('out')} as exits from b cross join shops s where ${scope}) as t
    where entries > 0 or exits > 0`);
  // Aged days (visit_retention_days, aged.ts): their entries and exits, and their identified visits, per bucket and shop.
  const aged = (await hasAged(db, companyId)) ? (await agedByBucket(db, companyId, where, bounds)) : [];
  for (const a of aged) if (a.entries > 0 || a.exits > 0) crossed.push({ i: a.i, shop: a.shop, entries: a.entries, exits: a.exits });
  const points = buckets.map(() => ({ entries: 0, exits: 0, identified: 0 }));
  const total = { entries: 0, exits: 0, identified: 0 };
  const entered = new Map<string, Set<number>>();
  for (const r of crossed) {
    const p = points[r.i]!;
    p.entries += r.entries;
    p.exits += r.exits;
    total.entries += r.entries;
    total.exits += r.exits;
    if (r.entries > 0) {
      const set = entered.get(r.shop) ?? new Set<number>();
      set.add(r.i);
      entered.set(r.shop, set);
    }
  }
  if (entered.size > 0) {
    const per = visitBuckets(buckets);
    const identified = await rows<{ i: number; shop: string; n: number }>(db, sql`
      ${per.with}
      select ${per.i} as i, s.id as shop, count(*) as n
      from ${per.join}shops s cross join visits v${indexedBy('visits_shop_time_idx')}
      where ${scope} and s.id in (${jsonValues(JSON.stringify([...entered.keys()]))})
        and v.shop_id = s.id and ${isFalse('v.staff')} and v.customer_id is not null and ${per.within}
      group by ${per.group}, s.id`);
    const agedIdentified = aged.filter((a) => entered.has(a.shop)).map((a) => ({ i: a.i, shop: a.shop, n: a.visits - a.anon }));
    for (const r of [...identified, ...agedIdentified]) {
      total.identified += r.n; // the shop had entries in the window
      if (entered.get(r.shop)!.has(r.i)) points[r.i]!.identified += r.n;
    }
  }
  const rate = (c: { entries: number; exits: number; identified: number }): DoorCounts => ({
    entries: c.entries,
    exits: c.exits,
    captureRate: c.entries === 0 ? null : Math.min(1, c.identified / c.entries),
  });
  return { points: points.map(rate), total: rate(total) };
}
