import type { UserRow } from '../auth/sessions.js';
import type { IssuedTokens } from './tokens.js';

/** The one place that shapes the embedded provider's JSON: Identity Toolkit v1 and Secure Token replies. */

const ms = (iso: string | null | undefined) => (iso ? String(Date.parse(iso)) : undefined);

function providerUserInfo(user: UserRow) {
  const info: Record<string, string>[] = [{ providerId: 'password', email: user.email, federatedId: user.email, rawId: user.email, displayName: user.fullName }];
  if (user.phone) info.push({ providerId: 'phone', phoneNumber: user.phone, rawId: user.phone });
  return info;
}

/** accounts:lookup's user. The password hash is never in it (Google sends a placeholder; nothing here). */
export function presentAccount(user: UserRow, validSince: number | undefined) {
  return {
    localId: user.id,
    email: user.email,
    emailVerified: true,
    displayName: user.fullName,
    ...(user.phone ? { phoneNumber: user.phone } : {}),
    providerUserInfo: providerUserInfo(user),
    ...(validSince !== undefined ? { validSince: String(validSince) } : {}),
    disabled: false,
    createdAt: ms(user.createdAt),
    ...(user.lastLoginAt ? { lastLoginAt: ms(user.lastLoginAt), lastRefreshAt: user.lastLoginAt } : {}),
  };
}

export const presentLookup = (user: UserRow, validSince: number | undefined) => ({ kind: 'identitytoolkit#GetAccountInfoResponse', users: [presentAccount(user, validSince)] });

export function presentPasswordSignIn(t: IssuedTokens & { email: string; displayName: string }) {
  return { kind: 'identitytoolkit#VerifyPasswordResponse', localId: t.localId, email: t.email, displayName: t.displayName, idToken: t.idToken, registered: true, refreshToken: t.refreshToken, expiresIn: t.expiresIn };
}

export function presentPhoneSignIn(t: IssuedTokens & { phoneNumber: string }) {
  return { idToken: t.idToken, refreshToken: t.refreshToken, expiresIn: t.expiresIn, localId: t.localId, isNewUser: false, phoneNumber: t.phoneNumber };
}

export const presentSendCode = (sessionInfo: string) => ({ sessionInfo });

export function presentUpdate(user: UserRow, tokens: IssuedTokens | undefined) {
  return {
    kind: 'identitytoolkit#SetAccountInfoResponse',
    localId: user.id,
    email: user.email,
    displayName: user.fullName,
    emailVerified: true,
    providerUserInfo: providerUserInfo(user),
    ...(tokens ? { idToken: tokens.idToken, refreshToken: tokens.refreshToken, expiresIn: tokens.expiresIn } : {}),
  };
}

/** Secure Token's refresh grant answer: snake_case, `access_token` and `id_token` the same ID token. */
export function presentTokenGrant(t: IssuedTokens, projectId: string) {
  return { access_token: t.idToken, expires_in: t.expiresIn, token_type: 'Bearer', refresh_token: t.refreshToken, id_token: t.idToken, user_id: t.localId, project_id: projectId };
}
