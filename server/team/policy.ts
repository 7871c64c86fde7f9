import { conflict, forbidden } from '../http/errors.js';
import { atLeast, rule, type Role, type Rule, type TenantRole } from '../policy.js';

/**
 * Team rules (spec: Team, Member and Invitation states). The route-level rules go to auth(); the finer
 * decisions below are called by the handlers, inside the write's transaction, with the actor's role as it is
 * in the database at that moment (not as it was when the request arrived).
 */
export const teamPolicy = {
  list: rule('staff', 'see the team'),
  addMember: rule('manager', 'add members'),
  resetPassword: rule('manager', "reset a member's password"),
  editMember: rule('manager', "change a member's role or deactivate them"),
  invite: rule('manager', 'invite people'),
  listInvitations: rule('manager', 'see invitations'),
  withdrawInvitation: rule('manager', 'withdraw invitations'),
};

/** What the actor is doing with a role: the 403 message names it. */
export type Granting = 'add' | 'invite' | 'promote';

const grantingOwner: Record<Granting, string> = {
  add: 'Only an owner can add an owner.',
  invite: 'Only an owner can invite an owner.',
  promote: 'Only an owner can make someone an owner.',
};

/**
 * May `actorRole` give `role` to someone? `admin` is refused to everyone (it is the platform administrator's,
 * never a company member's); `owner` only by an owner (so a manager can neither add, invite nor promote one).
 */
export function assertMayGrant(actorRole: Role, role: Role, doing: Granting): asserts role is TenantRole {
  if (role === 'admin') {
    throw forbidden('No one can give a company member the admin role: it belongs to the platform administrator. Choose staff, manager or owner.');
  }
  if (role === 'owner' && !atLeast(actorRole, 'owner')) throw forbidden(grantingOwner[doing]);
}

/** The actor still holds the route's role (they may have been demoted since the request's auth step). */
export function assertStillAllowed(actorRole: Role, r: Rule): void {
  if (r.least === 'any' || r.least === 'admin') return;
  if (!atLeast(actorRole, r.least)) throw forbidden(r.message);
}

/** Only an owner may change an owner's role or active flag (a manager could otherwise lock owners out). */
export function assertMayChange(actorRole: Role, targetRole: Role): void {
  if (targetRole === 'owner' && !atLeast(actorRole, 'owner')) throw forbidden("Only an owner can change an owner's role or deactivate them.");
}

/** Only an owner may reset an owner's password (the new password is handed to whoever asks). */
export function assertMayResetPassword(actorRole: Role, targetRole: Role): void {
  if (targetRole === 'owner' && !atLeast(actorRole, 'owner')) throw forbidden("Only an owner can reset an owner's password.");
}

export interface MemberState {
  role: Role;
  active: boolean;
}

const isActiveOwner = (m: MemberState) => m.role === 'owner' && m.active;

/**
 * 409 last_owner when a change would leave the company with no active owner. `otherActiveOwners` counts the
 * company's active owners other than the target and must be read in the same transaction as the write.
 */
export function assertLeavesAnOwner(before: MemberState, after: MemberState, otherActiveOwners: number): void {
  if (isActiveOwner(before) && !isActiveOwner(after) && otherActiveOwners === 0) {
    throw conflict(
      'This would leave the company with no active owner. Make another member an owner first, then change this one.',
      'last_owner',
    );
  }
}
