import type { Actor } from '../context.js';
import type { CompanyRow, IssuedSession, SessionRow, UserRow } from './sessions.js';

/** The spec's User. client_id and client_name are empty strings for the platform admin. */
export function presentUser(user: UserRow, company: CompanyRow | null) {
  return {
    id: user.id,
    email: user.email,
    full_name: user.fullName,
    role: user.role,
    client_id: user.companyId ?? '',
    client_name: company?.name ?? '',
  };
}

export function presentActor(actor: Actor) {
  return {
    id: actor.userId,
    email: actor.email,
    full_name: actor.fullName,
    role: actor.role,
    client_id: actor.companyId ?? '',
    client_name: actor.companyName,
  };
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
