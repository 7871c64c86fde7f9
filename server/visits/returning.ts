import { offsetAt } from '../reports/calendar.js';

/**
 * "Returning" has one meaning across the product (docs/visits-and-customers.md, "New and returning"): the footfall
 * report's. A person counts as new in a bucket when their first visit ever is in it and as returning when they were
 * seen on a visit before it. An arrival is `returning` when its customer was first seen before the local day (in
 * its shop's time zone) of this visit: exactly how the report's day buckets, and so the console's overview of today,
 * count that person on that day. A customer's second visit on their first day is therefore not "returning" (the
 * report says "new" for that day), and `is_new_visitor` marks only their first visit ever.
 */

const QUARTER_HOUR = 900_000;
/** Offsets by zone and quarter hour (every zone's offset and transition is a multiple of 15 minutes). */
const offsets = new Map<string, number>();

function localDay(tz: string, ms: number): number {
  const q = Math.floor(ms / QUARTER_HOUR);
  const key = `${tz} ${q}`;
  let o = offsets.get(key);
  if (o === undefined) {
    if (offsets.size >= 20_000) offsets.clear();
    o = offsetAt(tz, q * QUARTER_HOUR);
    offsets.set(key, o);
  }
  return Math.floor((ms + o) / 86_400_000);
}

/** Whether a visit at `occurredAt` in zone `tz` is returning, given its customer's first visit ever. */
export function isReturning(tz: string, occurredAt: string, firstSeenAt: string | null): boolean {
  if (firstSeenAt === null) return false;
  const first = Date.parse(firstSeenAt);
  const at = Date.parse(occurredAt);
  if (!(first < at)) return false;
  try {
    return localDay(tz, first) < localDay(tz, at);
  } catch {
    // A zone this runtime does not know (stored before a tzdata change): UTC days.
    return Math.floor(first / 86_400_000) < Math.floor(at / 86_400_000);
  }
}
