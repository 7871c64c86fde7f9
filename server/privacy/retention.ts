import { sql, type SQL } from 'drizzle-orm';
import type { Deps } from '../context.js';
import { bySql, onPostgres, row, rows, run, indexedBy, isFalse } from '../db/raw.js';
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

/**
 * The UTC start of the 15-minute slot of an instant, in SQL: SQLite cuts its ISO text
 * (`YYYY-MM-DDTHH:MM:SS.sssZ`), PostgreSQL bins its timestamptz (slots from a UTC midnight, whole hours in UTC).
 */
const slotOf = (col: string) =>
  bySql(
    sql.raw(`substr(${col}, 1, 14) || printf('%02d', (cast(substr(${col}, 15, 2) as integer) / 15) * 15) || ':00.000Z'`),
    sql.raw(`date_bin('15 minutes', ${col}, timestamptz '2000-01-01 00:00:00+00')`),
  );
/** The UTC hour of an instant, to compare or group by: SQLite's ISO text to the hour, PostgreSQL's time cut to it in UTC. */
const hourOf = (col: string) => bySql(sql.raw(`substr(${col}, 1, 13)`), sql.raw(`date_trunc('hour', ${col}, 'UTC')`));
/** The table with SQLite's `indexed by` hint (measured: its planner would pick another index). */
const hinted = (table: 'visits' | 'crossings'): SQL => sql`${sql.raw(table)}${indexedBy(`${table}_shop_time_idx`)}`;

/** The first local day kept for a shop: days before it are aged out. */
export function firstKeptDay(tz: string, days: number, now: number): string {
  return addDays(todayIn(tz, new Date(now)), -days);
}

/** The oldest local day of the shop, before `keptFrom`, that still has visits or crossings; null when none. */
async function oldestDay(deps: Deps, shopId: string, tz: string, keptFrom: string): Promise<string | null> {
  const before = iso(localToUtc(tz, keptFrom));
  const db = deps.store.db;
  const v = (await row<{ t: string | null }>(db, sql`select min(occurred_at) as t from ${hinted('visits')} where shop_id = ${shopId} and occurred_at < ${before}`))?.t ?? null;
  const c = (await row<{ t: string | null }>(db, sql`select min(occurred_at) as t from ${hinted('crossings')} where shop_id = ${shopId} and occurred_at < ${before}`))?.t ?? null;
  const t = v === null ? c : c === null ? v : v < c ? v : c;
  if (t === null) return null;
  // The local date of t: the day whose local midnight is at or before it.
  let day = todayIn(tz, new Date(Date.parse(t)));
  if (localToUtc(tz, day) > Date.parse(t)) day = addDays(day, -1);
  return day;
}

/** Counts one shop's local day into footfall_counts and deletes its visits and crossings, in one transaction. */
async function ageDay(deps: Deps, shopId: string, tz: string, day: string): Promise<AgedDay> {
  const lo = iso(localToUtc(tz, day));
  const hi = iso(localToUtc(tz, addDays(day, 1)));
  // PostgreSQL types a parameter in an insert's select list as text, which a date column refuses: cast it.
  const dayValue = bySql(sql`${day}`, sql`${day}::date`);
  return await deps.store.tx(async () => {
    // Inside the body: on PostgreSQL store.db is the transaction's connection only there.
    const db = deps.store.db;
    // PostgreSQL: several head-office processes may sweep at once, and two ageing one shop's day side by side would
    // both count its rows (the upserts add) before either deletes them. A lock per shop, held to the commit, puts the
    // second after the first, whose rows are then gone. (SQLite has one writer: its transactions never overlap.)
    if (onPostgres) await run(db, sql`select pg_advisory_xact_lock(hashtext(${`footfall.retention:${shopId}`}))`);
    const inDay = sql`shop_id = ${shopId} and occurred_at >= ${lo} and occurred_at < ${hi}`;
    const notStaff = isFalse('staff');
    // Visits per slot, staff's left out (reports never count them). SQLite's total() is a sum that is 0 for no rows.
    // The upserts name footfall_counts' own columns (PostgreSQL finds a bare `visits` ambiguous; SQLite accepts both).
    await run(db, sql`
      insert into footfall_counts (shop_id, slot_at, day, visits, below_gate, anon, dwell_ms)
      select ${shopId}, ${slotOf('occurred_at')} as slot, ${dayValue}, count(*), count(*) filter (where ${isFalse('passed_gate')}),
        count(*) filter (where customer_id is null), ${bySql(sql`total(dwell_ms)`, sql`coalesce(sum(dwell_ms), 0)`)}
      from ${hinted('visits')} where ${inDay} and ${notStaff} group by slot
      on conflict (shop_id, slot_at) do update set visits = footfall_counts.visits + excluded.visits, below_gate = footfall_counts.below_gate + excluded.below_gate,
        anon = footfall_counts.anon + excluded.anon, dwell_ms = footfall_counts.dwell_ms + excluded.dwell_ms`);
    // Each customer once per shop and day, in the slot of their first visit that day; new if first seen that day.
    await run(db, sql`
      insert into footfall_counts (shop_id, slot_at, day, known, fresh)
      select ${shopId}, ${slotOf('f.first')} as slot, ${dayValue}, count(*),
        count(*) filter (where c.first_seen_at >= ${lo} and c.first_seen_at < ${hi})
      from (select customer_id, min(occurred_at) as first from ${hinted('visits')}
            where ${inDay} and ${notStaff} and customer_id is not null group by customer_id) f
        left join customers c on c.id = f.customer_id
      group by slot
      on conflict (shop_id, slot_at) do update set known = footfall_counts.known + excluded.known, fresh = footfall_counts.fresh + excluded.fresh`);
    // And once per shop and UTC hour, for hour buckets.
    await run(db, sql`
      insert into footfall_counts (shop_id, slot_at, day, known_hour, fresh_hour)
      select ${shopId}, ${slotOf('f.first')} as slot, ${dayValue}, count(*),
        count(*) filter (where ${hourOf('c.first_seen_at')} = ${hourOf('f.first')})
      from (select customer_id, min(occurred_at) as first from ${hinted('visits')}
            where ${inDay} and ${notStaff} and customer_id is not null group by customer_id, ${hourOf('occurred_at')}) f
        left join customers c on c.id = f.customer_id
      group by slot
      on conflict (shop_id, slot_at) do update set known_hour = footfall_counts.known_hour + excluded.known_hour, fresh_hour = footfall_counts.fresh_hour + excluded.fresh_hour`);
    await run(db, sql`
      insert into footfall_counts (shop_id, slot_at, day, entries, exits)
      select ${shopId}, ${slotOf('occurred_at')} as slot, ${dayValue}, count(*) filter (where direction = 'in'), count(*) filter (where direction = 'out')
      from ${hinted('crossings')} where ${inDay} group by slot
      on conflict (shop_id, slot_at) do update set entries = footfall_counts.entries + excluded.entries, exits = footfall_counts.exits + excluded.exits`);
    const visits = await run(db, sql`delete from visits where ${inDay}`);
    const crossings = await run(db, sql`delete from crossings where ${inDay}`);
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
  const shops = await rows<{ id: string; tz: string }>(deps.store.db, sql`select id, timezone as tz from shops where company_id = ${companyId} order by id`);
  for (const shop of shops) {
    const tz = canonicalTimezone(shop.tz) ?? DEFAULT_TIMEZONE;
    const keptFrom = firstKeptDay(tz, days, opts.now);
    for (;;) {
      const day = await oldestDay(deps, shop.id, tz, keptFrom);
      if (day === null) break;
      if (opts.stop()) return false;
      await opts.after(await ageDay(deps, shop.id, tz, day));
    }
  }
  return true;
}
