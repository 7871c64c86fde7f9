/**
 * Local calendar arithmetic for reports (docs/reports.md): dates as `YYYY-MM-DD` strings, local wall times turned
 * into UTC instants with Intl (DST-correct, no time-zone library), and the buckets of a window.
 */

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export type BucketKind = 'hour' | 'day' | 'week' | 'month';

/** One point of a report: its label (local wall time, no offset) and its UTC range [lo, hi) in epoch ms. */
export interface Bucket {
  label: string;
  lo: number;
  hi: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Dates (no time zone: a date is a label; arithmetic goes through UTC midnight, which has no DST).

const datePattern = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * The last year a report date may be in: a window's arithmetic goes up to a month past `to` (the end of its last
 * month bucket), and that must still be a four-digit `YYYY-MM-DD` date (year 10000 is not one).
 */
export const LAST_YEAR = 9998;

/** A real calendar date as YYYY-MM-DD (2026-02-30 is not), from 1970 to the end of LAST_YEAR. */
export function isDate(v: string): boolean {
  const m = datePattern.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() >= 1970 && d.getUTCFullYear() <= LAST_YEAR && d.toISOString().slice(0, 10) === v;
}

function dateMs(date: string): number {
  const m = datePattern.exec(date);
  if (!m) throw new Error(`not a date: ${date}`);
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
}

function msDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function addDays(date: string, days: number): string {
  return msDate(dateMs(date) + days * DAY_MS);
}

/** Whole days from a to b (b - a). */
export function daysBetween(a: string, b: string): number {
  return Math.round((dateMs(b) - dateMs(a)) / DAY_MS);
}

/** The Monday of the ISO week holding the date. */
export function mondayOf(date: string): string {
  const weekday = (new Date(dateMs(date)).getUTCDay() + 6) % 7; // Monday 0 ... Sunday 6
  return addDays(date, -weekday);
}

/** The first day of the month holding the date, moved by `months`. */
export function monthStart(date: string, months = 0): string {
  const d = new Date(dateMs(date));
  return msDate(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1));
}

// ---------------------------------------------------------------------------------------------------------------
// Zones.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  return f;
}

/** The local wall time at instant t (whole seconds), as epoch ms of the same fields read as UTC. */
export function wallAt(tz: string, t: number): number {
  const p: Record<string, number> = {};
  for (const part of formatter(tz).formatToParts(new Date(t))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour! % 24, p.minute!, p.second!);
}

/** The zone's offset from UTC at instant t, in ms. */
export function offsetAt(tz: string, t: number): number {
  const s = Math.floor(t / 1000) * 1000;
  return wallAt(tz, s) - s;
}

/** Today's date in the zone. */
export function todayIn(tz: string, now: Date): string {
  return msDate(wallAt(tz, Math.floor(now.getTime() / 1000) * 1000));
}

/**
 * The first instant whose local wall time is at or after the given one (epoch ms). A wall time that happens twice
 * (clocks going back) gives the earlier instant; one that never happens (clocks going forward) gives the instant the
 * clocks jumped, which is when that local hour or day really starts.
 */
export function localToUtc(tz: string, date: string, hour = 0): number {
  const wall = dateMs(date) + hour * HOUR_MS;
  // The answer lies within [wall - 14 h, wall + 12 h]; the offsets at both ends cover one transition in between.
  const offsets = [...new Set([offsetAt(tz, wall - 14 * HOUR_MS), offsetAt(tz, wall), offsetAt(tz, wall + 12 * HOUR_MS)])];
  const exact = offsets.map((o) => wall - o).filter((t) => wallAt(tz, t) === wall);
  if (exact.length > 0) return Math.min(...exact);
  // A gap: search the jump between the two candidate instants, to the second.
  let lo = (wall - Math.max(...offsets)) / 1000;
  let hi = (wall - Math.min(...offsets)) / 1000;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallAt(tz, mid * 1000) >= wall) hi = mid;
    else lo = mid;
  }
  return hi * 1000;
}

// ---------------------------------------------------------------------------------------------------------------
// Buckets.

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * The buckets of the window [from 00:00, the day after `to` 00:00) in the zone, in order, empty ones included:
 * - hour: one per local wall-clock hour (`YYYY-MM-DDTHH:00`). An hour the clocks skip has no bucket; an hour they
 *   repeat is one bucket of two hours.
 * - day: `YYYY-MM-DD`.
 * - week: ISO weeks from Monday, labelled by the Monday's date; the first and last weeks are cut to the window.
 * - month: `YYYY-MM`; the first and last months are cut to the window.
 */
export function bucketsOf(tz: string, from: string, to: string, kind: BucketKind): Bucket[] {
  const start = new Map<string, number>();
  const dayStart = (date: string) => {
    let t = start.get(date);
    if (t === undefined) start.set(date, (t = localToUtc(tz, date)));
    return t;
  };
  const end = addDays(to, 1);
  const out: Bucket[] = [];
  const push = (label: string, lo: number, hi: number) => {
    if (hi > lo) out.push({ label, lo, hi });
  };
  switch (kind) {
    case 'hour':
      for (let d = from; d < end; d = addDays(d, 1)) {
        const next = dayStart(addDays(d, 1));
        let lo = dayStart(d);
        for (let h = 0; h < 24; h++) {
          const hi = h === 23 ? next : Math.min(next, localToUtc(tz, d, h + 1));
          push(`${d}T${pad(h)}:00`, lo, hi);
          lo = Math.max(lo, hi);
        }
      }
      break;
    case 'day':
      for (let d = from; d < end; d = addDays(d, 1)) push(d, dayStart(d), dayStart(addDays(d, 1)));
      break;
    case 'week':
      for (let m = mondayOf(from); m < end; m = addDays(m, 7)) {
        const next = addDays(m, 7);
        push(m, dayStart(m < from ? from : m), dayStart(next > end ? end : next));
      }
      break;
    case 'month':
      for (let m = monthStart(from); m < end; m = monthStart(m, 1)) {
        const next = monthStart(m, 1);
        push(m.slice(0, 7), dayStart(m < from ? from : m), dayStart(next > end ? end : next));
      }
      break;
  }
  return out;
}

/** The window's UTC range [lo, hi): local midnight of `from` to local midnight after `to`. */
export function windowOf(tz: string, from: string, to: string): { lo: number; hi: number } {
  return { lo: localToUtc(tz, from), hi: localToUtc(tz, addDays(to, 1)) };
}

/** The last day of the month holding the date. */
function monthEnd(date: string): string {
  return addDays(monthStart(date, 1), -1);
}

/**
 * The period a report is compared with (docs/reports.md, "Compared with the period before"): the same length just
 * before the window. Whole calendar months (from the 1st to a month's last day) compare with as many whole months
 * before (March with February, a year of months with the year before); any other window with as many days just
 * before, so whole ISO weeks (Monday to Sunday) compare with whole weeks, weekday for weekday.
 */
export function previousWindow(from: string, to: string): { from: string; to: string } {
  if (from === monthStart(from) && to === monthEnd(to)) {
    const a = dateMs(from);
    const b = dateMs(to);
    const months = (new Date(b).getUTCFullYear() - new Date(a).getUTCFullYear()) * 12 + new Date(b).getUTCMonth() - new Date(a).getUTCMonth() + 1;
    return { from: monthStart(from, -months), to: addDays(from, -1) };
  }
  const days = daysBetween(from, to) + 1;
  return { from: addDays(from, -days), to: addDays(from, -1) };
}
