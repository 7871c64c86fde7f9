import type { UserRow } from '../auth/sessions.js';
import type { InvitationRow } from './service.js';

/** Team member. last_login_at is an empty string when the member has never signed in; phone is null when none. */
export function presentMember(user: UserRow) {
  return {
    id: user.id,
    email: user.email,
    full_name: user.fullName,
    role: user.role,
    active: user.active,
    last_login_at: user.lastLoginAt ?? '',
    created_at: user.createdAt,
    phone: user.phone ?? null,
  };
}

/** Team member as created: the password, generated or supplied, is in this response and nowhere else. */
export function presentNewMember(user: UserRow, password: string) {
  return { ...presentMember(user), password };
}

/** Invitation. invited_by is the inviter's email as it was when they invited. */
export function presentInvitation(inv: InvitationRow) {
  return {
    id: inv.id,
    email: inv.email,
    full_name: inv.fullName,
    role: inv.role,
    invited_by: inv.invitedByEmail,
    expires_at: inv.expiresAt,
    created_at: inv.createdAt,
  };
}

/** Invitation as created: the only response that ever carries the code. */
export function presentNewInvitation(inv: InvitationRow, code: string) {
  return { ...presentInvitation(inv), code };
}

/** GET /api/auth/invitation: what the invitee sees before choosing a password. */
export function presentInvitationPreview(inv: InvitationRow, companyName: string) {
  return { client_name: companyName, email: inv.email, full_name: inv.fullName, role: inv.role };
}
