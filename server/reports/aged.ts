import { sql } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { row, rows } from '../db/raw.js';
import { shopScope, type Scope } from './door.js';
import { bucketTable } from './sql.js';

/**
 * What reports count from `footfall_counts`: the visits and crossings aged out by `visit_retention_days`
 * (server/privacy/retention.ts, docs/privacy.md). Those rows are gone from `visits` and `crossings`, so each figure
 * is the sum of what is counted from the rows held and of these counts; the two never overlap. Slots are 15 minutes
 * of UTC, so every bucket bound (local midnight or hour, in any zone) is a slot bound.
 */

export interface AgedCounts {
  visits: number;
  belowGate: number;
  anon: number;
  dwellMs: number;
  /** Customers counted once per shop and local day (the linkage to who they were is gone). */
  known: number;
  fresh: number;
  /** Counted once per shop and UTC hour instead (hour buckets). */
  knownHour: number;
  freshHour: number;
  entries: number;
  exits: number;
}

// Mixed-case names quoted: PostgreSQL folds unquoted ones to lower case.
const sums = sql`sum(f.visits) as visits, sum(f.below_gate) as "belowGate", sum(f.anon) as anon, sum(f.dwell_ms) as "dwellMs",
  sum(f.known) as known, sum(f.fresh) as fresh, sum(f.known_hour) as "knownHour", sum(f.fresh_hour) as "freshHour", sum(f.entries) as entries, sum(f.exits) as exits`;

/** Per shop of the scope over [lo, hi): only shops with aged counts in it. */
export async function agedBySite(db: Db, companyId: string, scope: Scope, lo: string, hi: string): Promise<(AgedCounts & { id: string; name: string; slug: string })[]> {
  // Grouped by the key: PostgreSQL takes the shop's other columns from it, as SQLite does.
  return await rows(db, sql`
    select s.id as id, s.name as name, s.slug as slug, ${sums}
    from shops s join footfall_counts f on f.shop_id = s.id
    where ${shopScope(companyId, scope)} and f.slot_at >= ${lo} and f.slot_at < ${hi}
    group by s.id`);
}

/** Per bucket (its index in the bounds JSON, as service.ts and door.ts build it) and shop: only pairs with counts. */
export async function agedByBucket(db: Db, companyId: string, scope: Scope, bounds: string): Promise<(AgedCounts & { i: number; shop: string })[]> {
  return await rows(db, sql`
    with ${bucketTable(bounds)}
    select b.i as i, s.id as shop, ${sums}
    from b cross join shops s join footfall_counts f on f.shop_id = s.id and f.slot_at >= b.lo and f.slot_at < b.hi
    where ${shopScope(companyId, scope)}
    group by b.i, s.id`);
}

/** Whether the company has any aged counts (most have none: reports then skip the extra queries). */
export async function hasAged(db: Db, companyId: string): Promise<boolean> {
  // A row or none, rather than exists(), which is 0/1 on SQLite and a boolean on PostgreSQL.
  return (await row(db, sql`select 1 as n from shops s join footfall_counts f on f.shop_id = s.id where s.company_id = ${companyId} limit 1`)) !== undefined;
}
