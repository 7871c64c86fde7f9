import { createHash, randomBytes } from 'node:crypto';
import { and, eq, lt } from 'drizzle-orm';
import type { UserRow } from '../auth/sessions.js';
import type { Config } from '../config.js';
import type { Store } from '../db/open.js';
import { recordRevocation, revokedBefore } from '../auth-service/service.js';
import type { Db } from '../db/open.js';
import { IdpError } from './errors.js';
import type { SigningKeys } from './keys.js';
import { one, changes } from '../db/query.js';
import { users, idpRefreshTokens } from '../db/tables.js';

/** ID token life (seconds), as Google's. */
export const ID_TOKEN_LIFE_S = 3600;

export type SignInProvider = 'password' | 'phone';

export interface IssuedTokens {
  idToken: string;
  refreshToken: string;
  expiresIn: string;
  localId: string;
}

export interface TokenDeps {
  store: Store;
  config: Config;
  keys: SigningKeys;
  projectId: string;
}

export const issuerOf = (projectId: string) => `https://securetoken.google.com/${projectId}`;
const hash = (token: string) => createHash('sha256').update(token).digest('hex');
const nowS = () => Math.floor(Date.now() / 1000);

/**
 * An RS256 ID token with the claims a Firebase ID token carries (iss, aud, sub = user_id, auth_time, email,
 * phone_number of a phone sign-in, firebase.sign_in_provider and identities).
 */
export function signIdToken(d: TokenDeps, user: UserRow, provider: SignInProvider, phone: string | null, authTime: number): Promise<string> {
  const identities: Record<string, string[]> = { email: [user.email] };
  if (phone) identities.phone = [phone];
  const claims = {
    name: user.fullName,
    email: user.email,
    email_verified: true,
    ...(phone ? { phone_number: phone } : {}),
    auth_time: authTime,
    user_id: user.id,
    firebase: { identities, sign_in_provider: provider },
  };
  return d.keys.sign(claims, user.id, d.projectId, issuerOf(d.projectId), ID_TOKEN_LIFE_S);
}

async function newRefresh(d: TokenDeps, uid: string, provider: SignInProvider, phone: string | null, authTime: number): Promise<string> {
  const token = `ff1.${randomBytes(32).toString('base64url')}`;
  const now = Date.now();
  await d.store.db
    .insert(idpRefreshTokens)
    .values({ tokenHash: hash(token), uid, signInProvider: provider, phone, authTime, createdAt: new Date(now).toISOString(), expiresAt: new Date(now + d.config.FOOTFALL_REFRESH_TOKEN_TTL_S * 1000).toISOString() });
  return token;
}

/**
 * A new sign-in: tokens with auth_time now. After a sign-out in this same second (revoked_before = now + 1), the new
 * sign-in's auth_time is that instant, so it is not refused with the tokens it revoked.
 */
export async function signIn(d: TokenDeps, user: UserRow, provider: SignInProvider, phone: string | null): Promise<IssuedTokens> {
  const authTime = Math.max(nowS(), (await revokedBefore(d.store.db, user.id)) ?? 0);
  const idToken = await signIdToken(d, user, provider, phone, authTime);
  const refreshToken = await d.store.tx(async () => await newRefresh(d, user.id, provider, phone, authTime));
  return { idToken, refreshToken, expiresIn: String(ID_TOKEN_LIFE_S), localId: user.id };
}

/**
 * Secure Token's refresh grant: the refresh token is replaced by a new one (rotation; the old one is dead from now
 * on) and a new ID token carries the original auth_time. Refused: unknown or already used (INVALID_REFRESH_TOKEN),
 * past its life or signed out since (TOKEN_EXPIRED), its user gone (USER_NOT_FOUND).
 */
export async function refresh(d: TokenDeps, refreshToken: string): Promise<IssuedTokens> {
  const rotated = await d.store.tx(async () => {
    // Inside the body: on PostgreSQL store.db is the transaction's connection only there.
    const db = d.store.db;
    const row = await one(db.select().from(idpRefreshTokens).where(eq(idpRefreshTokens.tokenHash, hash(refreshToken))));
    if (!row) throw new IdpError('INVALID_REFRESH_TOKEN');
    await db.delete(idpRefreshTokens).where(eq(idpRefreshTokens.tokenHash, row.tokenHash));
    if (Date.parse(row.expiresAt) <= Date.now()) throw new IdpError('TOKEN_EXPIRED');
    const before = await revokedBefore(db, row.uid);
    if (before !== undefined && row.authTime < before) throw new IdpError('TOKEN_EXPIRED');
    const user = await one(db.select().from(users).where(eq(users.id, row.uid)));
    if (!user) throw new IdpError('USER_NOT_FOUND');
    return { row, user, token: await newRefresh(d, row.uid, row.signInProvider, row.phone, row.authTime) };
  });
  const idToken = await signIdToken(d, rotated.user, rotated.row.signInProvider, rotated.row.phone, rotated.row.authTime);
  return { idToken, refreshToken: rotated.token, expiresIn: String(ID_TOKEN_LIFE_S), localId: rotated.user.id };
}

/** Sign-out: every refresh token of the account dies. Call inside a transaction. */
export async function revokeRefreshTokens(store: Store, uid: string): Promise<number> {
  return changes(await store.db.delete(idpRefreshTokens).where(eq(idpRefreshTokens.uid, uid)));
}

/**
 * A password reset or a deactivation on head office (/api) ends the member's embedded-provider sessions too, as it
 * ends their /api sessions: refresh tokens die, and ID tokens issued before are refused. Nothing when the member has
 * none (e.g. in `google` mode, whose accounts are Google's). Call inside the caller's transaction.
 */
export async function endProviderSessions(db: Db, uid: string): Promise<number> {
  const ended = changes(await db.delete(idpRefreshTokens).where(eq(idpRefreshTokens.uid, uid)));
  if (ended > 0) await recordRevocation(db, uid, nowS() + 1);
  return ended;
}

/** Drops refresh tokens past their life. */
export async function pruneRefreshTokens(store: Store): Promise<number> {
  return changes(await store.db.delete(idpRefreshTokens).where(and(lt(idpRefreshTokens.expiresAt, new Date().toISOString()))));
}
