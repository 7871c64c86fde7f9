import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import type { CompanyRow, UserRow } from '../auth/sessions.js';
import type { Db } from '../db/open.js';
import { one, returned } from '../db/query.js';
import { users, companies, businesses, idpLinks, idpRevocations } from '../db/tables.js';

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
export async function ensureBusiness(db: Db, company: CompanyRow): Promise<BusinessRow> {
  const found = await one(db.select().from(businesses).where(eq(businesses.companyId, company.id)));
  if (found) return found;
  return await returned(db.insert(businesses).values({ id: randomUUID(), companyId: company.id, name: company.name, createdAt: nowIso() }).returning());
}

/** The user a provider account is linked to, with the company. */
export async function linkedMember(db: Db, providerUid: string): Promise<(Member & { link: LinkRow }) | undefined> {
  const row = await one(db
    .select({ link: idpLinks, user: users, company: companies })
    .from(idpLinks)
    .innerJoin(users, eq(users.id, idpLinks.userId))
    .leftJoin(companies, eq(companies.id, users.companyId))
    .where(eq(idpLinks.providerUid, providerUid)));
  return row ?? undefined;
}

export async function memberByEmail(db: Db, email: string): Promise<Member | undefined> {
  return (await one(db.select({ user: users, company: companies }).from(users).leftJoin(companies, eq(companies.id, users.companyId)).where(eq(users.email, email)))) ?? undefined;
}

/** Every member (any company, active or not) with this phone number, oldest first. */
export async function membersByPhone(db: Db, phone: string): Promise<Member[]> {
  return await db
    .select({ user: users, company: companies })
    .from(users)
    .leftJoin(companies, eq(companies.id, users.companyId))
    .where(eq(users.phone, phone))
    .orderBy(asc(users.createdAt));
}

/** Links (or re-points) a provider account to a user and marks the sign-in. */
export async function link(db: Db, providerUid: string, userId: string, method: LinkMethod, signedIn: boolean): Promise<void> {
  const now = nowIso();
  await db.insert(idpLinks)
    .values({ providerUid, userId, method, createdAt: now, lastSignInAt: signedIn ? now : null })
    .onConflictDoUpdate({ target: idpLinks.providerUid, set: { userId, method, ...(signedIn ? { lastSignInAt: now } : {}) } });
}

/**
 * A phone sign-in of `userId` with this provider account. A client link (`sign_up`, `verified_email`) of the
 * account is kept (re-pointing it would lock its email sign-in out, since the email path ignores phone links);
 * otherwise the account is linked to the member with method `phone`. Returns whether it is the member's first
 * phone sign-in: no earlier phone link of the member, and the account not already linked to them.
 */
export async function linkPhoneSignIn(db: Db, providerUid: string, userId: string): Promise<boolean> {
  const existing = await one(db.select().from(idpLinks).where(eq(idpLinks.providerUid, providerUid)));
  const first = !(await hasPhoneSignIn(db, userId)) && existing?.userId !== userId;
  if (existing && existing.method !== 'phone') {
    if (existing.userId === userId) (await db.update(idpLinks).set({ lastSignInAt: nowIso() }).where(eq(idpLinks.providerUid, providerUid)));
  } else {
    await link(db, providerUid, userId, 'phone', true);
  }
  return first;
}

/** Has this member signed in by phone before (any provider account)? */
export async function hasPhoneSignIn(db: Db, userId: string): Promise<boolean> {
  return (await one(db.select({ uid: idpLinks.providerUid }).from(idpLinks).where(and(eq(idpLinks.userId, userId), eq(idpLinks.method, 'phone'))))) !== undefined;
}

/** Signing in through the service counts as signing in (Team member `last_login_at`). */
export async function markSignedIn(db: Db, userId: string): Promise<void> {
  await db.update(users).set({ lastLoginAt: nowIso() }).where(eq(users.id, userId));
}

/** Tokens of this provider account authenticated before `revokedBefore` (seconds) are refused from now on. */
export async function recordRevocation(db: Db, providerUid: string, revokedBefore: number): Promise<void> {
  const now = nowIso();
  await db.insert(idpRevocations)
    .values({ providerUid, revokedBefore, revokedAt: now })
    .onConflictDoUpdate({ target: idpRevocations.providerUid, set: { revokedBefore, revokedAt: now } });
}

export async function revokedBefore(db: Db, providerUid: string): Promise<number | undefined> {
  return (await one(db.select({ t: idpRevocations.revokedBefore }).from(idpRevocations).where(eq(idpRevocations.providerUid, providerUid))))?.t;
}
