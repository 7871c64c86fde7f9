import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { and, eq, isNull, lt } from 'drizzle-orm';
import type { Logger } from 'pino';
import { bookAttempt, clearFailures } from '../auth/login-limits.js';
import { hashPassword, verifyPassword } from '../auth/passwords.js';
import type { UserRow } from '../auth/sessions.js';
import { BadToken, verifyIdToken, type IdClaims } from '../auth-service/id-tokens.js';
import { pickStaff } from '../auth-service/policy.js';
import { membersByPhone, recordRevocation, revokedBefore } from '../auth-service/service.js';
import { maskPhone } from '../team/phone.js';
import { IdpError, adminOnly, invalidCredentials, tooManyAttempts } from './errors.js';
import { sendSms } from './sms.js';
import { refresh, revokeRefreshTokens, signIn, type IssuedTokens, type TokenDeps } from './tokens.js';
import { one, changes } from '../db/query.js';
import { users, idpCodes } from '../db/tables.js';

/** One-time code: 6 digits, 10 minutes. */
export const CODE_DIGITS = 6;
export const CODE_LIFE_MS = 10 * 60_000;

export interface EmbeddedDeps extends TokenDeps {
  log: Logger;
}

const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
/** The key the /auth limits and the code rows use for a sessionInfo (never the value itself). */
export const sessionKey = (sessionInfo: string) => sha256(sessionInfo).slice(0, 32);

/**
 * The embedded identity provider (docs/auth-service.md): Identity Toolkit's account operations over head office's
 * own users. An account is a users row: its id is the provider uid (localId), its email and argon2id hash are the
 * ones /api/auth/login checks, and a phone sign-in is the team member whose record holds that number.
 */
export class EmbeddedIdp {
  constructor(readonly d: EmbeddedDeps) {}

  get projectId(): string {
    return this.d.projectId;
  }

  /** Email and password, with /api's login limits (the same rows: failures anywhere count everywhere). */
  async signInWithPassword(email: string, password: string, ip: string): Promise<IssuedTokens & { email: string; displayName: string }> {
    const { store, config } = this.d;
    const address = email.trim().toLowerCase();
    const attempt = await store.tx(async () => await bookAttempt(store.db, config, address, ip));
    if (attempt === undefined) throw tooManyAttempts('Access to this account has been temporarily disabled due to many failed login attempts.');
    const user = await one(store.db.select().from(users).where(eq(users.email, address)));
    if (!(await verifyPassword(user?.passwordHash, password)) || !user) throw invalidCredentials();
    await store.tx(async () => await clearFailures(store.db, address));
    const tokens = await signIn(this.d, user, 'password', null);
    return { ...tokens, email: user.email, displayName: user.fullName };
  }

  /** Verifies one of our ID tokens: signature and claims, then sign-out (revocation). */
  async verify(idToken: string): Promise<IdClaims> {
    const claims = await verifyIdToken(idToken, this.d.projectId, this.d.keys);
    const before = await revokedBefore(this.d.store.db, claims.uid);
    if (before !== undefined && claims.authTime < before) throw new BadToken('token_revoked');
    return claims;
  }

  /** The account of an ID token, as accounts:lookup and accounts:update need it. */
  async accountOf(idToken: string | undefined): Promise<{ user: UserRow; claims: IdClaims }> {
    if (!idToken) throw new IdpError('MISSING_ID_TOKEN');
    let claims: IdClaims;
    try {
      claims = await this.verify(idToken);
    } catch (err) {
      if (err instanceof BadToken) {
        this.d.log.info({ reason: err.reason, route: 'identitytoolkit', idp: 'embedded' }, 'ID token refused');
        throw new IdpError(err.reason === 'token_expired' || err.reason === 'token_revoked' ? 'TOKEN_EXPIRED' : 'INVALID_ID_TOKEN');
      }
      throw err;
    }
    const user = await one(this.d.store.db.select().from(users).where(eq(users.id, claims.uid)));
    if (!user) throw new IdpError('USER_NOT_FOUND');
    return { user, claims };
  }

  /**
   * accounts:update with an ID token: the display name (the team record's full name) and the password (at least
   * FOOTFALL_PASSWORD_MIN_LENGTH; signs out every other session, as Google does, and returns fresh tokens). Email
   * and phone belong to the team record and change on head office.
   */
  async update(idToken: string | undefined, change: { displayName?: string | undefined; password?: string | undefined; email?: string | undefined; phoneNumber?: string | undefined }) {
    const { user, claims } = await this.accountOf(idToken);
    if (change.email !== undefined || change.phoneNumber !== undefined) throw adminOnly('email and phone number belong to the team record; a manager changes them on head office');
    const { store, config } = this.d;
    let fullName = user.fullName;
    if (change.displayName !== undefined) {
      fullName = change.displayName.trim();
      if (fullName.length < 1 || fullName.length > 200) throw new IdpError('INVALID_DISPLAY_NAME', 'must be 1 to 200 characters');
    }
    let passwordHash: string | undefined;
    if (change.password !== undefined) {
      if (change.password.length < config.FOOTFALL_PASSWORD_MIN_LENGTH) throw new IdpError('WEAK_PASSWORD', `Password should be at least ${config.FOOTFALL_PASSWORD_MIN_LENGTH} characters`);
      passwordHash = await hashPassword(change.password);
    }
    await store.tx(async () => {
      (await store.db.update(users).set({ fullName, ...(passwordHash ? { passwordHash } : {}) }).where(eq(users.id, user.id)));
      if (passwordHash) await this.revoke(user.id);
    });
    const updated = { ...user, fullName };
    const tokens = passwordHash ? await signIn(this.d, updated, claims.signInProvider === 'phone' ? 'phone' : 'password', claims.phone ?? null) : undefined;
    return { user: updated, tokens };
  }

  /** Sign-out: refresh tokens die and ID tokens authenticated before the next second are refused. In a transaction. */
  async revoke(uid: string, validSince = Math.floor(Date.now() / 1000) + 1): Promise<void> {
    await revokeRefreshTokens(this.d.store, uid);
    await recordRevocation(this.d.store.db, uid, validSince);
  }

  /**
   * Sends a code to a phone number that is exactly one active member's. For any other number nothing is sent
   * (no text to strangers, and the answer does not tell which numbers are members) but a sessionInfo is still
   * returned, which no code will ever match. The caller applies the send limits.
   */
  async sendVerificationCode(phone: string): Promise<string> {
    const { store, log, keys } = this.d;
    const sessionInfo = randomBytes(32).toString('base64url');
    const id = sha256(sessionInfo);
    const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
    const pick = pickStaff(await membersByPhone(store.db, phone));
    const send = 'member' in pick;
    const mac = createHmac('sha256', keys.codeKey).update(`${id}:${send ? code : randomBytes(16).toString('hex')}`).digest('hex');
    const now = Date.now();
    await store.tx(async () => {
      (await store.db.delete(idpCodes).where(lt(idpCodes.expiresAt, now - CODE_LIFE_MS)));
      (await store.db.insert(idpCodes).values({ id, phone, codeMac: mac, expiresAt: now + CODE_LIFE_MS, createdAt: new Date(now).toISOString() }));
    });
    if (!send) {
      log.info({ phone: maskPhone(phone), reason: pick.refusal.reason }, 'verification code not sent: the number is not exactly one active member');
      return sessionInfo;
    }
    try {
      await sendSms(this.d.config, log, phone, `Your Footfall sign-in code is ${code}. It expires in 10 minutes. Do not share it.`);
    } catch (err) {
      await store.tx(async () => await store.db.delete(idpCodes).where(eq(idpCodes.id, id)));
      throw err;
    }
    return sessionInfo;
  }

  /**
   * The code of a sessionInfo: the attempt is counted (and committed) before the comparison, at most
   * FOOTFALL_IDP_CODE_MAX_ATTEMPTS; a right code is used up. Unknown or used: INVALID_SESSION_INFO; past its
   * 10 minutes: SESSION_EXPIRED; wrong: INVALID_CODE.
   */
  async signInWithPhoneNumber(sessionInfo: string, code: string): Promise<IssuedTokens & { phoneNumber: string }> {
    const { store, config, keys } = this.d;
    const id = sha256(sessionInfo);
    const row = await store.tx(async () => {
      const r = await one(store.db.select().from(idpCodes).where(eq(idpCodes.id, id)));
      if (!r || r.usedAt) throw new IdpError('INVALID_SESSION_INFO');
      if (r.expiresAt <= Date.now()) throw new IdpError('SESSION_EXPIRED');
      if (r.attempts >= config.FOOTFALL_IDP_CODE_MAX_ATTEMPTS) throw tooManyAttempts('Too many wrong codes for this verification. Start again to get a new code.');
      await store.db.update(idpCodes).set({ attempts: r.attempts + 1 }).where(eq(idpCodes.id, id));
      return r;
    });
    const mac = createHmac('sha256', keys.codeKey).update(`${id}:${code}`).digest();
    if (!timingSafeEqual(mac, Buffer.from(row.codeMac, 'hex'))) throw new IdpError('INVALID_CODE');
    const used = await store.tx(async () => changes(await store.db.update(idpCodes).set({ usedAt: new Date().toISOString() }).where(and(eq(idpCodes.id, id), isNull(idpCodes.usedAt)))));
    if (used !== 1) throw new IdpError('INVALID_SESSION_INFO');
    const pick = pickStaff(await membersByPhone(store.db, row.phone));
    if (!('member' in pick)) throw new IdpError('USER_DISABLED', 'this number is not exactly one active team member any more');
    const tokens = await signIn(this.d, pick.member.user, 'phone', row.phone);
    return { ...tokens, phoneNumber: row.phone };
  }

  /** Tokens of a sign-in head office has just checked itself (the owner made by /auth/client/sign-up). */
  tokensFor(user: UserRow, provider: 'password'): Promise<IssuedTokens> {
    return signIn(this.d, user, provider, null);
  }

  refresh(refreshToken: string): Promise<IssuedTokens> {
    return refresh(this.d, refreshToken);
  }
}
