import Router from '@koa/router';
import { z } from 'zod';
import { audit, writeAudit } from '../audit/service.js';
import { deviceLabel } from '../auth/device.js';
import { generatePassword, hashPassword } from '../auth/passwords.js';
import { presentEnvelope } from '../auth/presenter.js';
import { createSession, type CompanyRow, type UserRow } from '../auth/sessions.js';
import type { Config } from '../config.js';
import { actorOf, tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { HttpError, badRequest, conflict, unauthorized } from '../http/errors.js';
import { bodyOf, queryOf, transaction, validate } from '../http/pipeline.js';
import type { Role } from '../policy.js';
import { personRef } from '../references/people.js';
import { isUuid, resolve } from '../references/resolver.js';
import { assertLeavesAnOwner, assertMayChange, assertMayGrant, assertMayResetPassword, assertStillAllowed, teamPolicy } from './policy.js';
import { maskPhone, memberPhone } from './phone.js';
import { presentInvitation, presentInvitationPreview, presentMember, presentNewInvitation, presentNewMember } from './presenter.js';
import {
  accountExists,
  applyChange,
  createInvitation,
  findByCode,
  findMember,
  findPendingInvitation,
  insertMember,
  listMembers,
  listPendingInvitations,
  markRedeemed,
  otherActiveOwners,
  pendingInvitationFor,
  phoneTaken,
  resetPassword,
  roleNow,
  withdrawInvitation,
  withdrawInvitationsFor,
  type InvitationRow,
} from './service.js';

const text = (what = 'a string') => z.string({ error: (i) => (i.input === undefined ? 'is required' : `must be ${what}`) });
const email = text('an email address').trim().toLowerCase().pipe(z.email('must be an email address'));
const fullName = text().trim().min(1, 'is required').max(200, 'must be at most 200 characters');
/** `admin` parses so that the policy can refuse it with 403 (spec: admin refused everywhere). */
const role = z.enum(['staff', 'manager', 'owner', 'admin'], { error: 'must be staff, manager or owner' });
const password = text().max(1024, 'must be at most 1024 characters');
const device = text().max(200).optional();
const mustNotSend = (what: string) => z.never({ error: `must not be sent: the invitation sets the ${what}` }).optional();

/** Optional E.164 phone (staff phone sign-in); null or omitted: none. */
const phone = memberPhone.nullable().optional();

export const AddMemberBody = z.object({ email, full_name: fullName, role: role.default('staff'), password: password.optional(), phone });
export const PasswordBody = z.object({ password: password.optional() });
export const PatchMemberBody = z.object({ role: role.optional(), active: z.boolean({ error: 'must be true or false' }).optional(), phone });
export const InviteBody = z.object({
  email,
  full_name: fullName,
  role: role.default('staff'),
  expires_in_days: z.number({ error: 'must be a whole number of days' }).int('must be a whole number of days').min(1, 'must be at least 1 day').optional(),
});
export const InvitationQuery = z.object({ code: text().trim().min(1, 'is required').max(200) });
export const RegisterBody = z.object({
  code: text().trim().min(1, 'is required').max(200),
  full_name: fullName,
  password,
  device,
  email: mustNotSend('email address'),
  role: mustNotSend('role'),
});

const invalidCode = () =>
  new HttpError(404, 'invalid_code', 'This invitation code is not valid: it may be mistyped, expired, already used or withdrawn. Ask the person who invited you for a new one.');
const hasAccount = (address: string) => conflict(`${address} already has an account.`);
const phoneInUse = () => conflict('Another active member of this company already has that phone number: phone sign-in must name one person.');
const phoneDetail = (p: string | null | undefined) => (p ? maskPhone(p) : null);
const suspended = () => new HttpError(403, 'forbidden', 'This company is suspended. Contact your Footfall platform administrator.');

/** Supplied password (>= the minimum) or, when empty or omitted, a generated one. */
function chosenPassword(config: Config, supplied: string | undefined): { password: string; generated: boolean } {
  if (!supplied) return { password: generatePassword(), generated: true };
  const min = config.FOOTFALL_PASSWORD_MIN_LENGTH;
  if (supplied.length < min) throw badRequest(`password: must be at least ${min} characters (or leave it empty to have one generated)`);
  return { password: supplied, generated: false };
}

/** The actor's role as it is in the database now; call inside the write's transaction. */
async function actorRoleNow(ctx: Ctx): Promise<Role> {
  const current = await roleNow(ctx.deps.store.db, actorOf(ctx).userId);
  if (!current) throw unauthorized('Your session has ended. Sign in again.');
  return current;
}

/** The member a path `{id}` names (uuid or email), in the caller's company; 404 otherwise. */
async function memberOr404(ctx: Ctx): Promise<UserRow> {
  const companyId = tenantOf(ctx);
  const db = ctx.deps.store.db;
  const id = await resolve(db, personRef, companyId, String(ctx.params.id), 'path');
  const member = await findMember(db, companyId, id);
  if (!member) throw new HttpError(404, 'not_found', `Person "${String(ctx.params.id)}" was not found.`);
  return member;
}

/** A found code is still refused when the company is suspended or the address got an account meanwhile. */
async function assertRedeemable(ctx: Ctx, found: { invitation: InvitationRow; company: CompanyRow }): Promise<void> {
  if (!found.company.active) throw suspended();
  if (await accountExists(ctx.deps.store.db, found.invitation.email)) throw hasAccount(found.invitation.email);
}

/**
 * Team (members and invitations) and the two unauthenticated invitation routes under /api/auth.
 * Paths are written in full because the router serves both prefixes.
 */
export function teamRoutes(): AppRouter {
  const r: AppRouter = new Router();

  r.get('/api/team', auth(teamPolicy.list), async (ctx) => {
    ctx.body = (await listMembers(ctx.deps.store.db, tenantOf(ctx))).map(presentMember);
  });

  r.post('/api/team/members', auth(teamPolicy.addMember), validate({ body: AddMemberBody }), async (ctx) => {
    const body = bodyOf(ctx, AddMemberBody);
    const { store, config } = ctx.deps;
    const companyId = tenantOf(ctx);
    assertMayGrant(actorOf(ctx).role, body.role, 'add');
    const { password: plain, generated } = chosenPassword(config, body.password);
    if (await accountExists(store.db, body.email)) throw hasAccount(body.email);
    const passwordHash = await hashPassword(plain);
    const member = await store.tx(async () => {
      const actorRole = await actorRoleNow(ctx);
      assertStillAllowed(actorRole, teamPolicy.addMember);
      assertMayGrant(actorRole, body.role, 'add');
      if (await accountExists(store.db, body.email)) throw hasAccount(body.email);
      if (body.phone && (await phoneTaken(store.db, companyId, body.phone))) throw phoneInUse();
      const made = await insertMember(store.db, companyId, { email: body.email, fullName: body.full_name, role: body.role, passwordHash, phone: body.phone ?? null });
      const withdrawn = await withdrawInvitationsFor(store.db, companyId, body.email);
      await audit(ctx, {
        action: 'team.member.create',
        target: made.id,
        detail: { email: made.email, role: made.role, password: generated ? 'generated' : 'supplied', phone: phoneDetail(made.phone), invitations_withdrawn: withdrawn },
      });
      return made;
    });
    ctx.status = 201;
    ctx.body = presentNewMember(member, plain);
  });

  r.post('/api/team/invitations', auth(teamPolicy.invite), validate({ body: InviteBody }), transaction(async (ctx) => {
    const body = bodyOf(ctx, InviteBody);
    const { store, config, keys } = ctx.deps;
    const max = config.FOOTFALL_INVITATION_DAYS_MAX;
    const days = body.expires_in_days ?? config.FOOTFALL_INVITATION_DAYS_DEFAULT;
    if (days > max) throw badRequest(`expires_in_days: must be at most ${max} (days)`);
    const companyId = tenantOf(ctx);
    const actor = actorOf(ctx);
    const actorRole = await actorRoleNow(ctx);
    assertStillAllowed(actorRole, teamPolicy.invite);
    assertMayGrant(actorRole, body.role, 'invite');
    if (await accountExists(store.db, body.email)) throw hasAccount(body.email);
    const open = await pendingInvitationFor(store.db, companyId, body.email);
    if (open) {
      throw new HttpError(409, 'conflict', `${body.email} already has a pending invitation (expires ${open.expiresAt}). Withdraw it first to send a new one.`, { invitation_id: open.id });
    }
    const { invitation, code } = await createInvitation(store.db, keys, companyId, {
          email: body.email,
          fullName: body.full_name,
          role: body.role,
          days,
          invitedBy: { id: actor.userId, email: actor.email },
        });
    await audit(ctx, { action: 'team.invitation.create', target: invitation.id, detail: { email: invitation.email, role: invitation.role, expires_at: invitation.expiresAt } });
    ctx.status = 201;
    ctx.body = presentNewInvitation(invitation, code);
  }));

  r.get('/api/team/invitations', auth(teamPolicy.listInvitations), async (ctx) => {
    ctx.body = (await listPendingInvitations(ctx.deps.store.db, tenantOf(ctx))).map(presentInvitation);
  });

  r.delete('/api/team/invitations/:id', auth(teamPolicy.withdrawInvitation), transaction(async (ctx) => {
    const db = ctx.deps.store.db;
    assertStillAllowed(await actorRoleNow(ctx), teamPolicy.withdrawInvitation);
    const id = String(ctx.params.id);
    const invitation = isUuid(id) ? (await findPendingInvitation(db, tenantOf(ctx), id.toLowerCase())) : undefined;
    if (!invitation) throw new HttpError(404, 'not_found', 'There is no pending invitation with that id.');
    await withdrawInvitation(db, invitation.id);
    await audit(ctx, { action: 'team.invitation.withdraw', target: invitation.id, detail: { email: invitation.email } });
    ctx.status = 204;
  }));

  r.post('/api/team/:id/password', auth(teamPolicy.resetPassword), validate({ body: PasswordBody }), async (ctx) => {
    const body = bodyOf(ctx, PasswordBody);
    const { store, config } = ctx.deps;
    const target = await memberOr404(ctx);
    assertMayResetPassword(actorOf(ctx).role, target.role);
    const { password: plain, generated } = chosenPassword(config, body.password);
    const passwordHash = await hashPassword(plain);
    await store.tx(async () => {
      const member = await memberOr404(ctx);
      const actorRole = await actorRoleNow(ctx);
      assertStillAllowed(actorRole, teamPolicy.resetPassword);
      assertMayResetPassword(actorRole, member.role);
      const revoked = await resetPassword(store.db, member.id, passwordHash);
      await audit(ctx, { action: 'team.member.password', target: member.id, detail: { email: member.email, password: generated ? 'generated' : 'supplied', sessions_revoked: revoked } });
    });
    ctx.body = { password: plain };
  });

  r.patch('/api/team/:id', auth(teamPolicy.editMember), validate({ body: PatchMemberBody }), transaction(async (ctx) => {
    const body = bodyOf(ctx, PatchMemberBody);
    const db = ctx.deps.store.db;
    const target = await memberOr404(ctx);
    const actorRole = await actorRoleNow(ctx);
    assertStillAllowed(actorRole, teamPolicy.editMember);
    if (body.role !== undefined) assertMayGrant(actorRole, body.role, 'promote');
    const after = { role: body.role ?? target.role, active: body.active ?? target.active };
    // Impossible for anyone comes first: a change that leaves no active owner is 409 whoever asks.
    assertLeavesAnOwner(target, after, await otherActiveOwners(db, tenantOf(ctx), target.id));
    assertMayChange(actorRole, target.role);
    const phoneAfter = body.phone === undefined ? target.phone : body.phone;
    if (after.active && phoneAfter && (await phoneTaken(db, tenantOf(ctx), phoneAfter, target.id))) throw phoneInUse();
    const { member, revoked } = await applyChange(db, target, { role: body.role, active: body.active, phone: body.phone });
    if (member !== target) {
      await audit(ctx, {
        action: 'team.member.update',
        target: member.id,
        detail: {
          email: member.email,
          from: { role: target.role, active: target.active, phone: phoneDetail(target.phone) },
          to: { role: member.role, active: member.active, phone: phoneDetail(member.phone) },
          sessions_revoked: revoked,
        },
      });
    }
    ctx.body = presentMember(member);
  }));

  r.get('/api/auth/invitation', validate({ query: InvitationQuery }), async (ctx) => {
    const { code } = queryOf(ctx, InvitationQuery);
    const found = await findByCode(ctx.deps.store.db, ctx.deps.keys, code);
    if (!found) throw invalidCode();
    await assertRedeemable(ctx, found);
    ctx.body = presentInvitationPreview(found.invitation, found.company.name);
  });

  r.post('/api/auth/register', validate({ body: RegisterBody }), async (ctx) => {
    const body = bodyOf(ctx, RegisterBody);
    const { store, config, keys } = ctx.deps;
    const min = config.FOOTFALL_PASSWORD_MIN_LENGTH;
    if (body.password.length < min) throw badRequest(`password: must be at least ${min} characters`);
    // Look the code up before paying for argon2, so wrong codes are cheap to refuse.
    const first = await findByCode(store.db, keys, body.code);
    if (!first) throw invalidCode();
    await assertRedeemable(ctx, first);
    const passwordHash = await hashPassword(body.password);
    const device = deviceLabel(body.device, ctx.get('User-Agent'));
    const { issued, user, company } = await store.tx(async () => {
      const found = await findByCode(store.db, keys, body.code);
      if (!found) throw invalidCode();
      await assertRedeemable(ctx, found);
      const { invitation } = found;
      const made = await insertMember(store.db, invitation.companyId, { email: invitation.email, fullName: body.full_name, role: invitation.role, passwordHash }, new Date().toISOString());
      if (!(await markRedeemed(store.db, invitation.id, made.id))) throw invalidCode();
      await writeAudit(store, {
        action: 'team.invitation.redeem',
        companyId: invitation.companyId,
        target: invitation.id,
        actorId: made.id,
        actorEmail: made.email,
        requestId: ctx.state.requestId,
        detail: { user_id: made.id, role: made.role, invited_by: invitation.invitedByEmail },
      });
      return { issued: await createSession(store.db, config, made, device), user: made, company: found.company };
    });
    ctx.status = 201;
    ctx.body = presentEnvelope(issued, user, company);
  });

  return r;
}
