import type { Actor } from '../context.js';
import type { CompanyRow, IssuedSession, SessionRow, UserRow } from './sessions.js';

/** The spec's User, from whichever source knows the person. client_id and client_name are empty strings for the platform admin. */
function userJson(u: { id: string; email: string; fullName: string; role: UserRow['role']; companyId: string | null; companyName: string }) {
  return { id: u.id, email: u.email, full_name: u.fullName, role: u.role, client_id: u.companyId ?? '', client_name: u.companyName };
}

export function presentUser(user: UserRow, company: CompanyRow | null) {
  return userJson({ ...user, companyName: company?.name ?? '' });
}

export function presentActor(actor: Actor) {
  // userJson's fields, written out: an object spread here was a tenth of a GET /api/auth/me's own time.
  return { id: actor.userId, email: actor.email, full_name: actor.fullName, role: actor.role, client_id: actor.companyId ?? '', client_name: actor.companyName };
}

/** Session envelope (login, refresh, register). expires_at is the access token's expiry. */
export function presentEnvelope(issued: IssuedSession, user: UserRow, company: CompanyRow | null) {
  return {
    access_token: issued.accessToken,
    refresh_token: issued.refreshToken,
    expires_at: issued.session.accessExpiresAt,
    user: presentUser(user, company),
  };
}

/** Device session. expires_at: when the device is signed out if it stops refreshing. */
export function presentDeviceSession(session: SessionRow, currentId: string) {
  return {
    id: session.id,
    device: session.device,
    created_at: session.createdAt,
    last_used_at: session.lastUsedAt,
    expires_at: session.expiresAt,
    current: session.id === currentId,
  };
}
