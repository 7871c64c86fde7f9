import type { Actor } from '../context.js';
import type { CompanyRow, IssuedSession, SessionRow, UserRow } from './sessions.js';

/**
 * The spec's User, from whichever source knows the person (a user row, or the request's actor: the same fields but its
 * id). client_id and client_name are empty strings for the platform admin. Id and company name come as arguments so
 * neither caller spreads an object into a new one (a spread was a tenth of a GET /api/auth/me's own time).
 */
function userJson(u: { email: string; fullName: string; role: UserRow['role']; companyId: string | null }, id: string, companyName: string) {
  return { id, email: u.email, full_name: u.fullName, role: u.role, client_id: u.companyId ?? '', client_name: companyName };
}

export function presentUser(user: UserRow, company: CompanyRow | null) {
  return userJson(user, user.id, company?.name ?? '');
}

export function presentActor(actor: Actor) {
  return userJson(actor, actor.userId, actor.companyName);
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
