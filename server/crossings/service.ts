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

/**
 * Entries, exits and occupancy of one shop between two instants (its local day so far), in one range scan of
 * crossings_shop_time_idx (which covers every column read). Occupancy is the count of people inside walked in time
 * order, never below zero: an exit while it is 0 leaves it 0. That walk ends at S - min(0, lowest S_k), where S_k is
 * the running sum of +1 (in) and -1 (out) after k crossings and S the last one, so it is one window function and a
 * min. Same instant: entries first, then in arrival order (seq: the index order, so the scan needs no sort).
 */
export function shopDay(db: Db, shopId: string, lo: string, hi: string): { entries: number; exits: number; occupancy: number } {
  const r = db.get<{ entries: number; exits: number; low: number | null }>(sql`
    select count(*) filter (where direction = 'in') as entries, count(*) filter (where direction = 'out') as exits, min(run) as low
    from (
      select direction, sum(case direction when 'in' then 1 else -1 end)
        over (order by occurred_at, direction, seq rows unbounded preceding) as run
      from crossings indexed by crossings_shop_time_idx
      where shop_id = ${shopId} and occurred_at >= ${lo} and occurred_at < ${hi})`);
  const entries = r?.entries ?? 0;
  const exits = r?.exits ?? 0;
  const low = Math.min(0, r?.low ?? 0);
  return { entries, exits, occupancy: entries - exits - low };
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
