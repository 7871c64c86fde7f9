import { and, asc, eq, inArray } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { addDays, localToUtc, mondayOf, todayIn } from '../reports/calendar.js';
import { conversionReport, footfallReport } from '../reports/service.js';
import { DEFAULT_TIMEZONE, canonicalTimezone } from '../shops/service.js';
import { one } from '../db/query.js';
import { users, companies, shops, reportSubscriptions } from '../db/tables.js';

export type Frequency = 'daily' | 'weekly' | 'off';

/** A member's frequency: their choice, else weekly for owners and managers and none for staff. */
export async function frequencyOf(db: Db, user: { id: string; role: string }): Promise<Frequency> {
  const row = await one(db.select({ f: reportSubscriptions.frequency }).from(reportSubscriptions).where(eq(reportSubscriptions.userId, user.id)));
  return row?.f ?? (user.role === 'owner' || user.role === 'manager' ? 'weekly' : 'off');
}

export async function setFrequency(db: Db, user: { id: string; companyId: string }, frequency: Frequency): Promise<void> {
  const at = new Date().toISOString();
  await db.insert(reportSubscriptions)
    .values({ userId: user.id, companyId: user.companyId, frequency, updatedAt: at })
    .onConflictDoUpdate({ target: reportSubscriptions.userId, set: { frequency, updatedAt: at } });
}

/** The company's zone for its e-mails: the zone of its first shop (as reports default to), else the spec's default. */
export async function companyZone(db: Db, companyId: string): Promise<string> {
  const first = await one(db.select({ tz: shops.timezone }).from(shops).where(eq(shops.companyId, companyId)).orderBy(asc(shops.createdAt), asc(shops.slug)));
  return (first && canonicalTimezone(first.tz)) ?? DEFAULT_TIMEZONE;
}

export interface Period {
  kind: 'daily' | 'weekly';
  from: string;
  to: string;
  /** The period before, of the same length. */
  prevFrom: string;
  prevTo: string;
}

/**
 * The periods due at `now` in `zone` once the local clock has reached `hour`: yesterday (daily), and on Mondays the
 * week before (weekly). Local wall time, so a DST change moves the UTC instant, not the local hour.
 */
export function duePeriods(zone: string, hour: number, now: number): Period[] {
  const today = todayIn(zone, new Date(now));
  if (now < localToUtc(zone, today, hour)) return [];
  const yesterday = addDays(today, -1);
  const out: Period[] = [{ kind: 'daily', from: yesterday, to: yesterday, prevFrom: addDays(yesterday, -1), prevTo: addDays(yesterday, -1) }];
  if (mondayOf(today) === today) {
    const from = addDays(today, -7);
    out.push({ kind: 'weekly', from, to: addDays(today, -1), prevFrom: addDays(from, -7), prevTo: addDays(from, -1) });
  }
  return out;
}

/** Active members of active companies with shops who want this kind and have not had this period yet. */
export async function recipientsDue(db: Db, companyId: string, p: Period): Promise<{ id: string; email: string; fullName: string }[]> {
  const members = await db
    .select({ id: users.id, email: users.email, fullName: users.fullName, role: users.role, sub: reportSubscriptions })
    .from(users)
    .innerJoin(companies, eq(companies.id, users.companyId))
    .leftJoin(reportSubscriptions, eq(reportSubscriptions.userId, users.id))
    .where(and(eq(users.companyId, companyId), eq(users.active, true), eq(companies.active, true), inArray(users.role, ['staff', 'manager', 'owner'])));
  return members
    .filter((m) => (m.sub?.frequency ?? (m.role === 'staff' ? 'off' : 'weekly')) === p.kind)
    .filter((m) => (p.kind === 'daily' ? m.sub?.lastDaily : m.sub?.lastWeekly) !== p.from)
    .map(({ id, email, fullName }) => ({ id, email, fullName }));
}

/** Records the period as sent to the member (a member without a row gets one with the frequency they received). */
export async function markSent(db: Db, user: { id: string }, companyId: string, p: Period): Promise<void> {
  const at = new Date().toISOString();
  const set = p.kind === 'daily' ? { lastDaily: p.from } : { lastWeekly: p.from };
  await db.insert(reportSubscriptions)
    .values({ userId: user.id, companyId, frequency: p.kind, updatedAt: at, ...set })
    .onConflictDoUpdate({ target: reportSubscriptions.userId, set });
}

/** The figures of one e-mail: the period against the one before, shops ranked by visitors. */
export async function digestFigures(db: Db, companyId: string, zone: string, p: Period) {
  const q = (from: string, to: string, siteId: string | null = null) => ({ from, to, siteId, region: null, tz: zone, bucket: p.kind === 'daily' ? ('hour' as const) : ('day' as const) });
  const now = await footfallReport(db, companyId, q(p.from, p.to));
  const before = await footfallReport(db, companyId, q(p.prevFrom, p.prevTo));
  const conv = await conversionReport(db, companyId, q(p.from, p.to));
  const convBefore = await conversionReport(db, companyId, q(p.prevFrom, p.prevTo));
  const list = await db.select({ id: shops.id, name: shops.name }).from(shops).where(eq(shops.companyId, companyId));
  const ranking: { name: string; visitors: number }[] = [];
  for (const s of list) ranking.push({ name: s.name, visitors: (await footfallReport(db, companyId, q(p.from, p.to, s.id))).total });
  ranking.sort((a, b) => b.visitors - a.visitors || a.name.localeCompare(b.name));
  return { now, before, conv, convBefore, ranking };
}
