import type Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { bySql, onPostgres, rows, amongIds } from '../db/raw.js';
import { addDays, localToUtc, todayIn } from '../reports/calendar.js';
import { DEFAULT_TIMEZONE, canonicalTimezone } from '../shops/service.js';

/** A shop's day so far (docs/body-counting.md): null fields when no camera of the shop has a counting line. */
export interface ShopToday {
  occupancy: number | null;
  entriesToday: number | null;
  exitsToday: number | null;
}

export const NO_LINE: ShopToday = { occupancy: null, entriesToday: null, exitsToday: null };

/** The shops (of these) with a present camera that counts at a line (role `door` or `both`, enabled or not). */
export async function shopsWithLine(db: Db, shopIds: readonly string[]): Promise<Set<string>> {
  if (shopIds.length === 0) return new Set();
  // tuning is JSON text on SQLite, jsonb on PostgreSQL. The alias is quoted: PostgreSQL folds unquoted names to lower case.
  const lined = await rows<{ shopId: string }>(db, sql`
    select distinct shop_id as "shopId" from cameras
    where ${amongIds(sql`shop_id`, shopIds)} and deleted_at is null and ${bySql(
      sql`json_type(tuning, '$.line') = 'object' and coalesce(json_extract(tuning, '$.role'), 'door') != 'faces'`,
      sql`jsonb_typeof(tuning -> 'line') = 'object' and coalesce(tuning ->> 'role', 'door') != 'faces'`,
    )}`);
  return new Set(lined.map((r) => r.shopId));
}

interface Day {
  entries: number;
  exits: number;
  occupancy: number;
}

/** A shop's day as last walked: its range, how many crossings it held, and the last one's key in index order. */
interface Walked extends Day {
  lo: string;
  hi: string;
  count: number;
  last: Row | null;
}

type Row = [occurredAt: string, direction: string, seq: number];

function prepare(sqlite: Database.Database) {
  const range = 'from crossings indexed by crossings_shop_time_idx where shop_id = ? and occurred_at >= ? and occurred_at < ?';
  return {
    count: sqlite.prepare<[string, string, string], number>(`select count(*) ${range}`).pluck(),
    directions: sqlite.prepare<[string, string, string], string>(`select direction ${range} order by occurred_at, direction, seq`).pluck(),
    last: sqlite.prepare<[string, string, string], Row>(`select occurred_at, direction, seq ${range} order by occurred_at desc, direction desc, seq desc limit 1`).raw(),
    after: sqlite
      .prepare<[string, string, string, string, string, number], Row>(
        `select occurred_at, direction, seq ${range} and (occurred_at, direction, seq) > (?, ?, ?) order by occurred_at, direction, seq`,
      )
      .raw(),
    walked: new Map<string, Walked>(),
  };
}
const prepared = new WeakMap<Database.Database, ReturnType<typeof prepare>>();

function walk(day: Day, directions: Iterable<string>): void {
  for (const d of directions) {
    if (d === 'in') {
      day.entries++;
      day.occupancy++;
    } else {
      day.exits++;
      if (day.occupancy > 0) day.occupancy--;
    }
  }
}

const dayOf = (w: Walked): Day => ({ entries: w.entries, exits: w.exits, occupancy: w.occupancy });

/**
 * The rule that continues a kept walk, on both stores: the same day's range, and either as many crossings as last
 * time (the same answer) or the crossings after the last one walked (`after`, read only then) are all the day's new
 * ones, walked on from where it stopped. Undefined: the day is walked again from midnight (walkedFromMidnight).
 */
function continued(before: Walked | undefined, lo: string, hi: string, count: number, after: (last: Row) => Row[]): Day | undefined {
  if (!before || before.lo !== lo || before.hi !== hi) return undefined;
  if (before.count === count) return dayOf(before);
  if (!before.last) return undefined;
  const rows = after(before.last);
  if (before.count + rows.length !== count) return undefined;
  walk(
    before,
    rows.map((r) => r[1]),
  );
  before.count = count;
  before.last = rows.at(-1) ?? before.last;
  return dayOf(before);
}

/** A day walked from midnight: its crossings' directions in order, and the last one's key. */
function walkedFromMidnight(lo: string, hi: string, directions: string[], last: Row | null): Walked {
  const day: Walked = { lo, hi, count: directions.length, last, entries: 0, exits: 0, occupancy: 0 };
  walk(day, directions);
  return day;
}

/**
 * Entries, exits and occupancy of one shop between two instants (its local day): the day's crossings in time order
 * (covering range scans of crossings_shop_time_idx (shop_id, occurred_at, direction), no sort), walked here: +1 per
 * entry, -1 per exit, never below zero (an exit while it is 0 leaves it 0). Same instant: entries first, then in
 * arrival order (seq, the rowid every index ends with).
 *
 * The console polls this, so each shop's walk is kept (per database connection) and continued: the day's crossings
 * are counted (the index range, no rows read); the same count as last time: the same answer; otherwise the crossings
 * after the last one walked are read and, if they are all the new ones (crossings are only ever added, and each one
 * after the last key in index order extends the walk), walked on from where it stopped. One that arrived late, with
 * an earlier time, makes the counts differ, and the day is walked again from midnight. Exact whoever wrote the rows.
 */
export function shopDay(db: Db, shopId: string, lo: string, hi: string): Day {
  const sqlite = (db as unknown as { $client: Database.Database }).$client;
  let q = prepared.get(sqlite);
  if (!q) prepared.set(sqlite, (q = prepare(sqlite)));
  const kept = continued(q.walked.get(shopId), lo, hi, q.count.get(shopId, lo, hi) ?? 0, (last) => q.after.all(shopId, lo, hi, ...last));
  if (kept) return kept;
  const day = walkedFromMidnight(lo, hi, q.directions.all(shopId, lo, hi), q.last.get(shopId, lo, hi) ?? null);
  q.walked.set(shopId, day);
  return dayOf(day);
}

/**
 * shopDay on PostgreSQL: the same walk, kept and continued by the same rule (continued), read with two statements of
 * its own (each one statement, so one snapshot): the day's count together with the crossings after the last one
 * walked, and the whole day in order. Kept per database object (the pool's; a transaction's own connection keeps its
 * own).
 */
const pgWalks = new WeakMap<Db, Map<string, Walked>>();

interface PgRow {
  total: number;
  occurredAt: string | null;
  direction: string | null;
  seq: number | null;
}

async function shopDayPg(db: Db, shopId: string, lo: string, hi: string): Promise<Day> {
  let walked = pgWalks.get(db);
  if (!walked) pgWalks.set(db, (walked = new Map()));
  const range = sql`from crossings where shop_id = ${shopId} and occurred_at >= ${lo} and occurred_at < ${hi}`;
  const before = walked.get(shopId);
  if (before && before.lo === lo && before.hi === hi && before.last) {
    const [at, direction, seq] = before.last;
    const found = await rows<PgRow>(db, sql`
      select n.total, r.occurred_at as "occurredAt", r.direction, r.seq
      from (select count(*) as total ${range}) n
      left join lateral (select occurred_at, direction, seq ${range} and (occurred_at, direction, seq) > (${at}::timestamptz, ${direction}, ${seq})
                         order by occurred_at, direction, seq) r on true`);
    const after = found.filter((r) => r.occurredAt !== null).map((r): Row => [r.occurredAt!, r.direction!, r.seq!]);
    const kept = continued(before, lo, hi, found[0]?.total ?? 0, () => after);
    if (kept) return kept;
  }
  const all = await rows<{ occurredAt: string; direction: string; seq: number }>(db, sql`select occurred_at as "occurredAt", direction, seq ${range} order by occurred_at, direction, seq`);
  const end = all.at(-1);
  const day = walkedFromMidnight(
    lo,
    hi,
    all.map((r) => r.direction),
    end ? [end.occurredAt, end.direction, end.seq] : null,
  );
  walked.set(shopId, day);
  return dayOf(day);
}

/** A shop's zone as the calendar computes with it (canonicalTimezone builds an Intl formatter: kept per name). */
const zones = new Map<string, string>();
function zoneOf(name: string): string {
  let z = zones.get(name);
  if (z === undefined) zones.set(name, (z = canonicalTimezone(name) ?? DEFAULT_TIMEZONE));
  return z;
}

/** The zones' current local days (midnight to midnight, UTC ISO), computed again only when `now` leaves one. */
const days = new Map<string, { lo: string; hi: string; loMs: number; hiMs: number }>();
function localDay(tz: string, now: Date): { lo: string; hi: string } {
  const t = now.getTime();
  const kept = days.get(tz);
  if (kept && t >= kept.loMs && t < kept.hiMs) return kept;
  const today = todayIn(tz, now);
  const loMs = localToUtc(tz, today);
  const hiMs = localToUtc(tz, addDays(today, 1));
  const day = { lo: new Date(loMs).toISOString(), hi: new Date(hiMs).toISOString(), loMs, hiMs };
  days.set(tz, day);
  return day;
}

/** Forgets the kept walks of this connection (the benchmark's cold polls). */
export function forgetDays(db: Db): void {
  if (onPostgres) return void pgWalks.get(db)?.clear();
  prepared.get((db as unknown as { $client: Database.Database }).$client)?.walked.clear();
}

/** Today (from the shop's local midnight, in its timezone) for each shop; NO_LINE for a shop without a line. */
export async function shopsToday(db: Db, shops: readonly { id: string; timezone: string }[], now: Date = new Date()): Promise<Map<string, ShopToday>> {
  const lined = await shopsWithLine(
      db,
      shops.map((s) => s.id),
    );
  const out = new Map<string, ShopToday>();
  for (const s of shops) {
    if (!lined.has(s.id)) {
      out.set(s.id, NO_LINE);
      continue;
    }
    const { lo, hi } = localDay(zoneOf(s.timezone), now);
    // SQLite's walk answers at once from its prepared statements (the console's hot poll); PostgreSQL's is awaited.
    const d = onPostgres ? await shopDayPg(db, s.id, lo, hi) : shopDay(db, s.id, lo, hi);
    out.set(s.id, { occupancy: d.occupancy, entriesToday: d.entries, exitsToday: d.exits });
  }
  return out;
}
