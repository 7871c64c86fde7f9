import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import type { Bucket } from './calendar.js';

/**
 * Entries, exits and the capture rate of the footfall report (docs/reports.md, "Entries, exits and capture rate").
 * Crossings are counted per bucket and shop through crossings_shop_time_idx (shop_id, occurred_at, direction:
 * covering), like visits through visits_shop_time_idx, over the same UTC bucket bounds, so a crossing and a visit at
 * the same instant always land in the same bucket.
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

const iso = (ms: number) => new Date(ms).toISOString();

function shopScope(companyId: string, siteId: string | null): SQL {
  return siteId ? sql`s.company_id = ${companyId} and s.id = ${siteId}` : sql`s.company_id = ${companyId}`;
}

/** Per bucket (same order as `buckets`): entries, exits and capture rate of the scope. */
export function doorCounts(db: Db, companyId: string, siteId: string | null, buckets: readonly Bucket[]): DoorCounts[] {
  const bounds = JSON.stringify(buckets.map((b) => [iso(b.lo), iso(b.hi)]));
  const b = sql`b as (select cast(key as integer) as i, value ->> 0 as lo, value ->> 1 as hi from json_each(${bounds}))`;
  const scope = shopScope(companyId, siteId);
  const crossed = db.all<{ i: number; shop: string; entries: number; exits: number }>(sql`
    with ${b}
    select b.i as i, s.id as shop, count(*) filter (where x.direction = 'in') as entries, count(*) filter (where x.direction = 'out') as exits
    from b cross join shops s cross join crossings x indexed by crossings_shop_time_idx
    where ${scope} and x.shop_id = s.id and x.occurred_at >= b.lo and x.occurred_at < b.hi
    group by b.i, s.id`);
  const out = buckets.map((): DoorCounts & { identified: number } => ({ entries: 0, exits: 0, captureRate: null, identified: 0 }));
  const withEntries = new Set<string>();
  for (const r of crossed) {
    const o = out[r.i]!;
    o.entries += r.entries;
    o.exits += r.exits;
    if (r.entries > 0) withEntries.add(`${r.i}\u0000${r.shop}`);
  }
  if (withEntries.size > 0) {
    const identified = db.all<{ i: number; shop: string; n: number }>(sql`
      with ${b}
      select b.i as i, s.id as shop, count(*) as n
      from b cross join shops s cross join visits v indexed by visits_shop_time_idx
      where ${scope} and v.shop_id = s.id and v.staff = 0 and v.customer_id is not null and v.occurred_at >= b.lo and v.occurred_at < b.hi
      group by b.i, s.id`);
    for (const r of identified) if (withEntries.has(`${r.i}\u0000${r.shop}`)) out[r.i]!.identified += r.n;
  }
  return out.map(({ entries, exits, identified }) => ({ entries, exits, captureRate: entries === 0 ? null : Math.min(1, identified / entries) }));
}
