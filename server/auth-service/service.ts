import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import { users } from '../auth/schema.js';
import type { CompanyRow, UserRow } from '../auth/sessions.js';
import { companies } from '../clients/schema.js';
import type { Db } from '../db/open.js';
import { businesses, idpLinks, idpRevocations } from './schema.js';

/** Queries and writes of the authentication service. Writers must be called inside a transaction. */

export type BusinessRow = typeof businesses.$inferSelect;
export type LinkRow = typeof idpLinks.$inferSelect;
export type LinkMethod = LinkRow['method'];

export interface Member {
  user: UserRow;
  company: CompanyRow | null;
}

const nowIso = () => new Date().toISOString();

/** The company's business; made on first use for companies that existed before the service (one per company). */
export function ensureBusiness(db: Db, company: CompanyRow): BusinessRow {
  const found = db.select().from(businesses).where(eq(businesses.companyId, company.id)).get();
  if (found) return found;
  return db.insert(businesses).values({ id: randomUUID(), companyId: company.id, name: company.name, createdAt: nowIso() }).returning().get();
}

/** The user a provider account is linked to, with the company. */
export function linkedMember(db: Db, providerUid: string): (Member & { link: LinkRow }) | undefined {
  const row = db
    .select({ link: idpLinks, user: users, company: companies })
    .from(idpLinks)
    .innerJoin(users, eq(users.id, idpLinks.userId))
    .leftJoin(companies, eq(companies.id, users.companyId))
    .where(eq(idpLinks.providerUid, providerUid))
    .get();
  return row ?? undefined;
}

export function memberByEmail(db: Db, email: string): Member | undefined {
  return db.select({ user: users, company: companies }).from(users).leftJoin(companies, eq(companies.id, users.companyId)).where(eq(users.email, email)).get() ?? undefined;
}

/** Every member (any company, active or not) with this phone number, oldest first. */
export function membersByPhone(db: Db, phone: string): Member[] {
  return db
    .select({ user: users, company: companies })
    .from(users)
    .leftJoin(companies, eq(companies.id, users.companyId))
    .where(eq(users.phone, phone))
    .orderBy(asc(users.createdAt))
    .all();
}

/** Links (or re-points) a provider account to a user and marks the sign-in. */
export function link(db: Db, providerUid: string, userId: string, method: LinkMethod, signedIn: boolean): void {
  const now = nowIso();
  db.insert(idpLinks)
    .values({ providerUid, userId, method, createdAt: now, lastSignInAt: signedIn ? now : null })
    .onConflictDoUpdate({ target: idpLinks.providerUid, set: { userId, method, ...(signedIn ? { lastSignInAt: now } : {}) } })
    .run();
}

/**
 * A phone sign-in of `userId` with this provider account. A client link (`sign_up`, `verified_email`) of the
 * account is kept (re-pointing it would lock its email sign-in out, since the email path ignores phone links);
 * otherwise the account is linked to the member with method `phone`. Returns whether it is the member's first
 * phone sign-in: no earlier phone link of the member, and the account not already linked to them.
 */
export function linkPhoneSignIn(db: Db, providerUid: string, userId: string): boolean {
  const existing = db.select().from(idpLinks).where(eq(idpLinks.providerUid, providerUid)).get();
  const first = !hasPhoneSignIn(db, userId) && existing?.userId !== userId;
  if (existing && existing.method !== 'phone') {
    if (existing.userId === userId) db.update(idpLinks).set({ lastSignInAt: nowIso() }).where(eq(idpLinks.providerUid, providerUid)).run();
  } else {
    link(db, providerUid, userId, 'phone', true);
  }
  return first;
}

/** Has this member signed in by phone before (any provider account)? */
export function hasPhoneSignIn(db: Db, userId: string): boolean {
  return db.select({ uid: idpLinks.providerUid }).from(idpLinks).where(and(eq(idpLinks.userId, userId), eq(idpLinks.method, 'phone'))).get() !== undefined;
}

/** Signing in through the service counts as signing in (Team member `last_login_at`). */
export function markSignedIn(db: Db, userId: string): void {
  db.update(users).set({ lastLoginAt: nowIso() }).where(eq(users.id, userId)).run();
}

/** Tokens of this provider account authenticated before `revokedBefore` (seconds) are refused from now on. */
export function recordRevocation(db: Db, providerUid: string, revokedBefore: number): void {
  const now = nowIso();
  db.insert(idpRevocations)
    .values({ providerUid, revokedBefore, revokedAt: now })
    .onConflictDoUpdate({ target: idpRevocations.providerUid, set: { revokedBefore, revokedAt: now } })
    .run();
}

export function revokedBefore(db: Db, providerUid: string): number | undefined {
  return db.select({ t: idpRevocations.revokedBefore }).from(idpRevocations).where(eq(idpRevocations.providerUid, providerUid)).get()?.t;
}
