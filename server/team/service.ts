import { randomUUID } from 'node:crypto';
import { and, asc, count, eq, gt, isNull, ne } from 'drizzle-orm';
import { revokeUserSessions, type CompanyRow, type UserRow } from '../auth/sessions.js';
import type { Keys } from '../crypto/keys.js';
import type { Db } from '../db/open.js';
import type { Role, TenantRole } from '../policy.js';
import { generateInvitationCode, normaliseCode } from './codes.js';
import { endProviderSessions } from '../idp/tokens.js';
import { one, returned, changes } from '../db/query.js';
import { users, companies, invitations } from '../db/tables.js';

export type InvitationRow = typeof invitations.$inferSelect;

const nowIso = () => new Date().toISOString();

// ---- Members ------------------------------------------------------------------------------------------

/** Every member of the company, active or not, oldest first. */
export async function listMembers(db: Db, companyId: string): Promise<UserRow[]> {
  return await db.select().from(users).where(eq(users.companyId, companyId)).orderBy(asc(users.createdAt), asc(users.email));
}

/** A member of this company by uuid (already resolved by the reference resolver). */
export async function findMember(db: Db, companyId: string, id: string): Promise<UserRow | undefined> {
  return await one(db
    .select()
    .from(users)
    .where(and(eq(users.id, id), eq(users.companyId, companyId))));
}

/** The role of a signed-in member as it is now (undefined if the account is gone or inactive). */
export async function roleNow(db: Db, userId: string): Promise<Role | undefined> {
  return (await one(db
    .select({ role: users.role })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.active, true)))))?.role;
}

/** Any account on the platform with this address (merchant of any company, or platform admin). */
export async function accountExists(db: Db, email: string): Promise<boolean> {
  return (await one(db.select({ id: users.id }).from(users).where(eq(users.email, email)))) !== undefined;
}

/** Active owners of the company other than `exceptId`. Read it inside the transaction that writes. */
export async function otherActiveOwners(db: Db, companyId: string, exceptId: string): Promise<number> {
  const row = await one(db
    .select({ n: count() })
    .from(users)
    .where(and(eq(users.companyId, companyId), eq(users.role, 'owner'), eq(users.active, true), ne(users.id, exceptId))));
  return row?.n ?? 0;
}

export interface NewMember {
  email: string;
  fullName: string;
  role: TenantRole;
  passwordHash: string;
  /** E.164 or none. */
  phone?: string | null;
}

/** Inserts a member. Call inside a transaction, after accountExists. */
export async function insertMember(db: Db, companyId: string, m: NewMember, lastLoginAt: string | null = null): Promise<UserRow> {
  return await returned(db
    .insert(users)
    .values({ id: randomUUID(), companyId, email: m.email, fullName: m.fullName, role: m.role, passwordHash: m.passwordHash, phone: m.phone ?? null, active: true, lastLoginAt, createdAt: nowIso() })
    .returning());
}

/** Another active member of the company already has this phone number (it signs them in: it must name one person). */
export async function phoneTaken(db: Db, companyId: string, phone: string, exceptId?: string): Promise<boolean> {
  return (
    (await one(db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.companyId, companyId), eq(users.phone, phone), eq(users.active, true), exceptId ? ne(users.id, exceptId) : undefined)))) !== undefined
  );
}

/** Replaces the password and revokes every live session of the member. Returns how many were revoked. */
export async function resetPassword(db: Db, userId: string, passwordHash: string): Promise<number> {
  await db.update(users).set({ passwordHash }).where(eq(users.id, userId));
  await endProviderSessions(db, userId); // the same account on /auth's embedded provider (docs/auth-service.md)
  return await revokeUserSessions(db, userId, 'password_reset');
}

export interface MemberChange {
  role?: TenantRole | undefined;
  active?: boolean | undefined;
  /** null clears it; undefined leaves it. */
  phone?: string | null | undefined;
}

/**
 * Applies a role/active/phone change. Deactivation revokes every live session in the same transaction;
 * reactivation restores none (they stay revoked). Returns the updated row and how many sessions ended.
 */
export async function applyChange(db: Db, member: UserRow, change: MemberChange): Promise<{ member: UserRow; revoked: number }> {
  const set: Partial<Pick<UserRow, 'role' | 'active' | 'phone'>> = {};
  if (change.role !== undefined && change.role !== member.role) set.role = change.role;
  if (change.active !== undefined && change.active !== member.active) set.active = change.active;
  if (change.phone !== undefined && change.phone !== member.phone) set.phone = change.phone;
  if (Object.keys(set).length === 0) return { member, revoked: 0 };
  const updated = await returned(db.update(users).set(set).where(eq(users.id, member.id)).returning());
  if (set.active === false) await endProviderSessions(db, member.id);
  const revoked = set.active === false ? (await revokeUserSessions(db, member.id, 'member_deactivated')) : 0;
  return { member: updated, revoked };
}

// ---- Invitations --------------------------------------------------------------------------------------

const pending = (now: string) => and(isNull(invitations.redeemedAt), isNull(invitations.withdrawnAt), gt(invitations.expiresAt, now));

export interface NewInvitation {
  email: string;
  fullName: string;
  role: TenantRole;
  days: number;
  invitedBy: { id: string; email: string };
}

/** Creates a pending invitation. Returns the row and the code, which exists only in this return value. */
export async function createInvitation(db: Db, keys: Keys, companyId: string, input: NewInvitation): Promise<{ invitation: InvitationRow; code: string }> {
  const code = generateInvitationCode();
  const now = Date.now();
  const invitation = await returned(db
    .insert(invitations)
    .values({
      id: randomUUID(),
      companyId,
      email: input.email,
      fullName: input.fullName,
      role: input.role,
      codeHash: keys.codeHash(normaliseCode(code)),
      invitedBy: input.invitedBy.id,
      invitedByEmail: input.invitedBy.email,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + input.days * 86_400_000).toISOString(),
    })
    .returning());
  return { invitation, code };
}

/** Pending invitations of the company, oldest first. */
export async function listPendingInvitations(db: Db, companyId: string): Promise<InvitationRow[]> {
  return await db
    .select()
    .from(invitations)
    .where(and(eq(invitations.companyId, companyId), pending(nowIso())))
    .orderBy(asc(invitations.createdAt));
}

/** The company's pending invitation for this address, if any. */
export async function pendingInvitationFor(db: Db, companyId: string, email: string): Promise<InvitationRow | undefined> {
  return await one(db
    .select()
    .from(invitations)
    .where(and(eq(invitations.companyId, companyId), eq(invitations.email, email), pending(nowIso()))));
}

/** A pending invitation of the company by id; undefined for another company's, or one no longer pending. */
export async function findPendingInvitation(db: Db, companyId: string, id: string): Promise<InvitationRow | undefined> {
  return await one(db
    .select()
    .from(invitations)
    .where(and(eq(invitations.id, id), eq(invitations.companyId, companyId), pending(nowIso()))));
}

/** Pending -> withdrawn. */
export async function withdrawInvitation(db: Db, id: string): Promise<void> {
  await db.update(invitations).set({ withdrawnAt: nowIso() }).where(and(eq(invitations.id, id), pending(nowIso())));
}

/** Withdraws the company's pending invitations for an address (it just got an account). Returns how many. */
export async function withdrawInvitationsFor(db: Db, companyId: string, email: string): Promise<number> {
  return changes(await db
    .update(invitations)
    .set({ withdrawnAt: nowIso() })
    .where(and(eq(invitations.companyId, companyId), eq(invitations.email, email), pending(nowIso()))));
}

/**
 * The pending invitation a presented code names, with its company. Unknown, expired, redeemed and withdrawn
 * codes are all simply not found: the caller answers them alike.
 */
export async function findByCode(db: Db, keys: Keys, presented: string): Promise<{ invitation: InvitationRow; company: CompanyRow } | undefined> {
  const normalised = normaliseCode(presented);
  if (normalised === '') return undefined;
  return await one(db
    .select({ invitation: invitations, company: companies })
    .from(invitations)
    .innerJoin(companies, eq(companies.id, invitations.companyId))
    .where(and(eq(invitations.codeHash, keys.codeHash(normalised)), pending(nowIso()))));
}

/** Pending -> redeemed, only if still pending (returns false otherwise). Call inside the register transaction. */
export async function markRedeemed(db: Db, invitationId: string, userId: string): Promise<boolean> {
  const now = nowIso();
  return (
    changes(await db
      .update(invitations)
      .set({ redeemedAt: now, redeemedUserId: userId })
      .where(and(eq(invitations.id, invitationId), pending(now)))) === 1
  );
}
