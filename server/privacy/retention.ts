import { sql } from 'drizzle-orm';
import type { Deps } from '../context.js';
import { addDays, localToUtc, todayIn } from '../reports/calendar.js';
import { DEFAULT_TIMEZONE, canonicalTimezone } from '../shops/service.js';

/**
 * `visit_retention_days` (docs/privacy.md): a shop's visits and door crossings of a local day more than N days
 * before today (in the shop's zone) are counted into `footfall_counts` (15-minute UTC slots) and deleted, one shop
 * and local day per transaction. The raw rows are the checkpoint: a run cut short leaves whole days either counted
 * and deleted or untouched, and the next run starts at the oldest day still held.
 */

export interface AgedDay {
  shopId: string;
  day: string;
  visits: number;
  crossings: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The UTC start of the 15-minute slot of an ISO instant (`YYYY-MM-DDTHH:MM:SS.sssZ`), in SQL. */
const slotOf = (col: string) => sql.raw(`substr(${col}, 1, 14) || printf('%02d', (cast(substr(${col}, 15, 2) as integer) / 15) * 15) || ':00.000Z'`);

/** The first local day kept for a shop: days before it are aged out. */
export function firstKeptDay(tz: string, days: number, now: number): string {
  return addDays(todayIn(tz, new Date(now)), -days);
}

/** The oldest local day of the shop, before `keptFrom`, that still has visits or crossings; null when none. */
function oldestDay(deps: Deps, shopId: string, tz: string, keptFrom: string): string | null {
  const before = iso(localToUtc(tz, keptFrom));
  const db = deps.store.db;
  const v = db.get<{ t: string | null }>(sql`select min(occurred_at) as t from visits indexed by visits_shop_time_idx where shop_id = ${shopId} and occurred_at < ${before}`)?.t ?? null;
  const c = db.get<{ t: string | null }>(sql`select min(occurred_at) as t from crossings indexed by crossings_shop_time_idx where shop_id = ${shopId} and occurred_at < ${before}`)?.t ?? null;
  const t = v === null ? c : c === null ? v : v < c ? v : c;
  if (t === null) return null;
  // The local date of t: the day whose local midnight is at or before it.
  let day = todayIn(tz, new Date(Date.parse(t)));
  if (localToUtc(tz, day) > Date.parse(t)) day = addDays(day, -1);
  return day;
}

/** Counts one shop's local day into footfall_counts and deletes its visits and crossings, in one transaction. */
async function ageDay(deps: Deps, shopId: string, tz: string, day: string): Promise<AgedDay> {
  const db = deps.store.db;
  const lo = iso(localToUtc(tz, day));
  const hi = iso(localToUtc(tz, addDays(day, 1)));
  return await deps.store.tx(async () => {
    const inDay = sql`shop_id = ${shopId} and occurred_at >= ${lo} and occurred_at < ${hi}`;
    // Visits per slot, staff's left out (reports never count them).
    db.run(sql`
      insert into footfall_counts (shop_id, slot_at, day, visits, below_gate, anon, dwell_ms)
      select ${shopId}, ${slotOf('occurred_at')} as slot, ${day}, count(*), count(*) filter (where passed_gate = 0),
        count(*) filter (where customer_id is null), total(dwell_ms)
      from visits indexed by visits_shop_time_idx where ${inDay} and staff = 0 group by slot
      on conflict (shop_id, slot_at) do update set visits = visits + excluded.visits, below_gate = below_gate + excluded.below_gate,
        anon = anon + excluded.anon, dwell_ms = dwell_ms + excluded.dwell_ms`);
    // Each customer once per shop and day, in the slot of their first visit that day; new if first seen that day.
    db.run(sql`
      insert into footfall_counts (shop_id, slot_at, day, known, fresh)
      select ${shopId}, ${slotOf('f.first')} as slot, ${day}, count(*),
        count(*) filter (where c.first_seen_at >= ${lo} and c.first_seen_at < ${hi})
      from (select customer_id, min(occurred_at) as first from visits indexed by visits_shop_time_idx
            where ${inDay} and staff = 0 and customer_id is not null group by customer_id) f
        left join customers c on c.id = f.customer_id
      group by slot
      on conflict (shop_id, slot_at) do update set known = known + excluded.known, fresh = fresh + excluded.fresh`);
    // And once per shop and UTC hour, for hour buckets.
    db.run(sql`
      insert into footfall_counts (shop_id, slot_at, day, known_hour, fresh_hour)
      select ${shopId}, ${slotOf('f.first')} as slot, ${day}, count(*),
        count(*) filter (where substr(c.first_seen_at, 1, 13) = substr(f.first, 1, 13))
      from (select customer_id, min(occurred_at) as first from visits indexed by visits_shop_time_idx
            where ${inDay} and staff = 0 and customer_id is not null group by customer_id, substr(occurred_at, 1, 13)) f
        left join customers c on c.id = f.customer_id
      group by slot
      on conflict (shop_id, slot_at) do update set known_hour = known_hour + excluded.known_hour, fresh_hour = fresh_hour + excluded.fresh_hour`);
    db.run(sql`
      insert into footfall_counts (shop_id, slot_at, day, entries, exits)
      select ${shopId}, ${slotOf('occurred_at')} as slot, ${day}, count(*) filter (where direction = 'in'), count(*) filter (where direction = 'out')
      from crossings indexed by crossings_shop_time_idx where ${inDay} group by slot
      on conflict (shop_id, slot_at) do update set entries = entries + excluded.entries, exits = exits + excluded.exits`);
    const visits = db.run(sql`delete from visits where ${inDay}`).changes;
    const crossings = db.run(sql`delete from crossings where ${inDay}`).changes;
    return { shopId, day, visits, crossings };
  });
}

export interface AgeOptions {
  now: number;
  /** Called before each day; true stops the run (the next one carries on). */
  stop: () => boolean;
  /** Called after each day (the sweep yields to requests there). */
  after: (d: AgedDay) => Promise<void>;
}

/** Ages out every day of the company's shops older than `days`. Returns false if stopped early. */
export async function ageVisits(deps: Deps, companyId: string, days: number, opts: AgeOptions): Promise<boolean> {
  const shops = deps.store.db.all<{ id: string; tz: string }>(sql`select id, timezone as tz from shops where company_id = ${companyId} order by id`);
  for (const shop of shops) {
    const tz = canonicalTimezone(shop.tz) ?? DEFAULT_TIMEZONE;
    const keptFrom = firstKeptDay(tz, days, opts.now);
    for (;;) {
      const day = oldestDay(deps, shop.id, tz, keptFrom);
      if (day === null) break;
      if (opts.stop()) return false;
      await opts.after(await ageDay(deps, shop.id, tz, day));
    }
  }
  return true;
}
