import type Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { addDays, localToUtc, todayIn } from '../reports/calendar.js';
import { DEFAULT_TIMEZONE, canonicalTimezone } from '../shops/service.js';

/** A shop's day so far (docs/body-counting.md): null fields when no camera of the shop has a counting line. */
export interface ShopToday {
  occupancy: number | null;
  entriesToday: number | null;
  exitsToday: number | null;
}

export const NO_LINE: ShopToday = { occupancy: null, entriesToday: null, exitsToday: null };

/** The shops (of these) with a present camera whose tuning has a counting line (enabled or not). */
export function shopsWithLine(db: Db, shopIds: readonly string[]): Set<string> {
  if (shopIds.length === 0) return new Set();
  const rows = db.all<{ shopId: string }>(sql`
    select distinct shop_id as shopId from cameras
    where shop_id in (select value from json_each(${JSON.stringify(shopIds)}))
      and deleted_at is null and json_type(tuning, '$.line') = 'object'`);
  return new Set(rows.map((r) => r.shopId));
}

type Walk = Database.Statement<[string, string, string], string>;
const walks = new WeakMap<Database.Database, Walk>();

/**
 * Entries, exits and occupancy of one shop between two instants (its local day so far): the day's directions in time
 * order from one covering range scan of crossings_shop_time_idx (shop_id, occurred_at, direction; plan: SEARCH ...
 * USING COVERING INDEX, no sort), walked here: +1 per entry, -1 per exit, never below zero (an exit while it is 0
 * leaves it 0). Same instant: entries first, then in arrival order (seq, the rowid every index ends with). Walking in
 * JavaScript over the plucked column is about four times faster than the same walk as a SQL window function
 * (docs/benchmarks.md, "Occupancy and door counts").
 */
export function shopDay(db: Db, shopId: string, lo: string, hi: string): { entries: number; exits: number; occupancy: number } {
  const sqlite = (db as unknown as { $client: Database.Database }).$client;
  let walk = walks.get(sqlite);
  if (!walk) {
    walk = sqlite
      .prepare<[string, string, string], string>(
        'select direction from crossings indexed by crossings_shop_time_idx where shop_id = ? and occurred_at >= ? and occurred_at < ? order by occurred_at, direction, seq',
      )
      .pluck();
    walks.set(sqlite, walk);
  }
  let entries = 0;
  let exits = 0;
  let occupancy = 0;
  for (const d of walk.all(shopId, lo, hi)) {
    if (d === 'in') {
      entries++;
      occupancy++;
    } else {
      exits++;
      if (occupancy > 0) occupancy--;
    }
  }
  return { entries, exits, occupancy };
}

/** Today (from the shop's local midnight, in its timezone) for each shop; NO_LINE for a shop without a line. */
export function shopsToday(db: Db, shops: readonly { id: string; timezone: string }[], now: Date = new Date()): Map<string, ShopToday> {
  const lined = shopsWithLine(
    db,
    shops.map((s) => s.id),
  );
  const out = new Map<string, ShopToday>();
  for (const s of shops) {
    if (!lined.has(s.id)) {
      out.set(s.id, NO_LINE);
      continue;
    }
    const tz = canonicalTimezone(s.timezone) ?? DEFAULT_TIMEZONE;
    const today = todayIn(tz, now);
    const lo = new Date(localToUtc(tz, today)).toISOString();
    const hi = new Date(localToUtc(tz, addDays(today, 1))).toISOString();
    const d = shopDay(db, s.id, lo, hi);
    out.set(s.id, { occupancy: d.occupancy, entriesToday: d.entries, exitsToday: d.exits });
  }
  return out;
}
