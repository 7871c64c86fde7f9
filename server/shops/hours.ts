import { z } from 'zod';
import { addDays, localToUtc, todayIn, wallAt } from '../reports/calendar.js';

/**
 * Opening hours of a shop (docs/operations.md, "Opening hours"): per weekday, the periods the shop is open, as local
 * wall time in the shop's zone. A weekday without periods is closed. A period closes after it opens on the same day;
 * "24:00" closes at midnight. Periods of a day do not overlap and are kept in order.
 */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];
export interface Period {
  open: string;
  close: string;
}
export type OpeningHours = Record<Weekday, Period[]>;

const clock = z.string().regex(/^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$/, 'must be a time as HH:MM, from 00:00 to 24:00');
const PeriodInput = z.object({ open: clock, close: clock }).strict();

/** The write shape: every weekday optional (omitted: closed), at most four periods a day. */
export const OpeningHoursInput = z
  .object(Object.fromEntries(WEEKDAYS.map((d) => [d, z.array(PeriodInput).max(4, 'at most 4 periods a day').optional()])) as Record<Weekday, z.ZodOptional<z.ZodArray<typeof PeriodInput>>>)
  .strict()
  .superRefine((v, ctx) => {
    for (const d of WEEKDAYS) {
      const periods = [...(v[d] ?? [])].sort((a, b) => minutes(a.open) - minutes(b.open));
      periods.forEach((p, i) => {
        if (minutes(p.close) <= minutes(p.open)) ctx.addIssue({ code: 'custom', path: [d, i], message: `closes (${p.close}) before it opens (${p.open}); a period ends on the day it starts` });
        const prev = periods[i - 1];
        if (prev && minutes(p.open) < minutes(prev.close)) ctx.addIssue({ code: 'custom', path: [d, i], message: `${p.open}-${p.close} overlaps ${prev.open}-${prev.close}` });
      });
    }
  })
  .transform((v): OpeningHours => Object.fromEntries(WEEKDAYS.map((d) => [d, [...(v[d] ?? [])].sort((a, b) => minutes(a.open) - minutes(b.open))])) as OpeningHours);

export function minutes(hhmm: string): number {
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** Monday 0 ... Sunday 6 of a YYYY-MM-DD date. */
function weekdayOf(date: string): number {
  return (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7;
}

/** Whether the shop is open at instant t. */
export function isOpenAt(hours: OpeningHours, tz: string, t: number): boolean {
  const wall = wallAt(tz, Math.floor(t / 1000) * 1000);
  const d = new Date(wall);
  const day = WEEKDAYS[(d.getUTCDay() + 6) % 7]!;
  const m = d.getUTCHours() * 60 + d.getUTCMinutes();
  return hours[day].some((p) => m >= minutes(p.open) && m < minutes(p.close));
}

/** The open periods as UTC instants [lo, hi) that overlap [lo, hi). A period in a skipped or repeated hour follows the clock. */
export function openIntervals(hours: OpeningHours, tz: string, lo: number, hi: number): [number, number][] {
  const out: [number, number][] = [];
  let date = addDays(todayIn(tz, new Date(lo)), -1);
  const last = todayIn(tz, new Date(hi));
  for (; date <= last; date = addDays(date, 1)) {
    for (const p of hours[WEEKDAYS[weekdayOf(date)]!]) {
      const a = Math.max(lo, localToUtc(tz, date, minutes(p.open) / 60));
      const b = Math.min(hi, localToUtc(tz, date, minutes(p.close) / 60));
      if (b > a) out.push([a, b]);
    }
  }
  return out;
}

/** Hours open within [lo, hi). */
export function openHoursBetween(hours: OpeningHours, tz: string, lo: number, hi: number): number {
  return openIntervals(hours, tz, lo, hi).reduce((n, [a, b]) => n + (b - a), 0) / 3_600_000;
}
