import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ProviderError, assertSecureUrl } from './provider.js';

/** Clock skew allowed on exp, iat and auth_time (seconds). */
export const LEEWAY_S = 30;
/** Without a Cache-Control max-age, the keys are kept this long (seconds). */
const DEFAULT_KEYS_MAX_AGE_S = 300;
/** A token naming a key we do not have refetches the keys, at most this often (ms), counted from the last attempt. */
const REFETCH_COOLDOWN_MS = 30_000;
/** With no keys at all, a failed fetch is tried again at most this often (ms); meanwhile its error is answered. */
const RETRY_AFTER_FAILURE_MS = 5_000;

/** The claims of a verified provider ID token that the service reads. */
export interface IdClaims {
  uid: string;
  authTime: number;
  exp: number;
  email?: string | undefined;
  emailVerified: boolean;
  phone?: string | undefined;
  /** `phone` for a phone sign-in (the staff path); `password` etc. for the rest (the client path). */
  signInProvider?: string | undefined;
}

/** Why a token was refused; the routes turn it into 401 UNAUTHENTICATED with this reason. */
export class BadToken extends Error {
  constructor(readonly reason: 'token_missing' | 'token_invalid' | 'token_expired' | 'token_revoked') {
    super(reason);
  }
}

/**
 * The provider's public keys (a JWKS), cached as long as its Cache-Control max-age says. A token naming an unknown
 * key refetches them, at most every 30 s after the last attempt, failed ones included, so that tokens with made-up
 * `kid`s cannot make us hammer the JWKS URL. When a refetch fails, the keys in hand are still used. With no keys
 * at all, a failed fetch is tried again at most every 5 s (meanwhile: the same 502).
 */
export class ProviderKeys {
  private keys?: JWTVerifyGetKey;
  private until = 0;
  private attemptedAt = -Infinity;
  private lastError?: ProviderError;
  private pending?: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}

  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (!this.keys || Date.now() >= this.until) await this.refresh();
    try {
      return await this.keys!(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || Date.now() - this.attemptedAt < REFETCH_COOLDOWN_MS) throw err;
      await this.refresh();
      return this.keys!(header, token);
    }
  };

  private refresh(): Promise<void> {
    if (this.pending) return this.pending;
    if (!this.keys && this.lastError && Date.now() - this.attemptedAt < RETRY_AFTER_FAILURE_MS) return Promise.reject(this.lastError);
    this.attemptedAt = Date.now();
    this.pending = this.fetchKeys()
      .then(
        () => {
          this.lastError = undefined;
        },
        (err: unknown) => {
          this.lastError = err instanceof ProviderError ? err : new ProviderError('unavailable', 'KEYS_UNREACHABLE');
          if (!this.keys) throw this.lastError;
          this.until = Date.now() + REFETCH_COOLDOWN_MS; // try again later, meanwhile the old keys
        },
      )
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }

  private async fetchKeys(): Promise<void> {
    assertSecureUrl(this.url);
    let res: Response;
    try {
      res = await fetch(this.url, { signal: AbortSignal.timeout(this.timeoutMs), redirect: 'error' });
    } catch {
      throw new ProviderError('unavailable', 'KEYS_UNREACHABLE');
    }
    if (!res.ok) throw new ProviderError('unavailable', `KEYS_HTTP_${res.status}`, res.status);
    let jwks: JSONWebKeySet;
    try {
      jwks = (await res.json()) as JSONWebKeySet;
      if (!Array.isArray(jwks?.keys)) throw new Error('no keys');
      this.keys = createLocalJWKSet(jwks);
    } catch {
      throw new ProviderError('unavailable', 'KEYS_UNREADABLE');
    }
    const maxAge = /(?:^|,)\s*max-age\s*=\s*(\d+)/i.exec(res.headers.get('cache-control') ?? '')?.[1];
    this.until = Date.now() + (maxAge !== undefined ? Number(maxAge) : DEFAULT_KEYS_MAX_AGE_S) * 1000;
  }
}

/**
 * Verifies a provider ID token as the provider documents for third-party libraries: RS256 with a `kid` among the
 * provider's keys, `iss` https://securetoken.google.com/<project>, `aud` the project, `exp` in the future,
 * `iat` and `auth_time` in the past (LEEWAY_S either way), a non-empty `sub` of at most 128 characters.
 * Revocation (sign-out) is checked by the caller against our own table.
 */
export async function verifyIdToken(token: string, projectId: string, keys: { getKey: JWTVerifyGetKey }): Promise<IdClaims> {
  if (token.length > 8192) throw new BadToken('token_invalid');
  let header;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw new BadToken('token_invalid');
  }
  if (header.alg !== 'RS256' || typeof header.kid !== 'string' || header.kid === '') throw new BadToken('token_invalid');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, keys.getKey, {
      algorithms: ['RS256'],
      issuer: `https://securetoken.google.com/${projectId}`,
      audience: projectId,
      clockTolerance: LEEWAY_S,
      requiredClaims: ['exp', 'iat', 'sub'],
    }));
  } catch (err) {
    if (err instanceof ProviderError) throw err; // the keys could not be fetched: not the caller's fault
    if (err instanceof errors.JWTExpired) throw new BadToken('token_expired');
    throw new BadToken('token_invalid');
  }
  return claimsOf(payload);
}

/**
 * A token of the Firebase Auth emulator (FOOTFALL_IDP=emulator only): unsigned (`alg: none`), so only its claims
 * are checked, as verifyIdToken does: `iss` and `aud` this project, `exp` in the future, `iat` and `auth_time` in
 * the past. Anything signed is refused here: no production token is taken on the emulator's word.
 */
export function verifyEmulatorToken(token: string, projectId: string): IdClaims {
  if (token.length > 8192) throw new BadToken('token_invalid');
  let payload: JWTPayload;
  try {
    if (decodeProtectedHeader(token).alg !== 'none') throw new Error('signed');
    payload = decodeJwt(token);
  } catch {
    throw new BadToken('token_invalid');
  }
  const now = Math.floor(Date.now() / 1000);
  if (payload.iss !== `https://securetoken.google.com/${projectId}` || payload.aud !== projectId) throw new BadToken('token_invalid');
  if (typeof payload.exp !== 'number') throw new BadToken('token_invalid');
  if (payload.exp < now - LEEWAY_S) throw new BadToken('token_expired');
  return claimsOf(payload);
}

function claimsOf(payload: JWTPayload): IdClaims {
  const now = Math.floor(Date.now() / 1000);
  const authTime = payload.auth_time;
  const sub = payload.sub;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > 128) throw new BadToken('token_invalid');
  if (typeof payload.iat !== 'number' || payload.iat > now + LEEWAY_S) throw new BadToken('token_invalid');
  if (typeof authTime !== 'number' || authTime > now + LEEWAY_S) throw new BadToken('token_invalid');
  const firebase = (payload.firebase ?? {}) as { sign_in_provider?: unknown };
  return {
    uid: sub,
    authTime,
    exp: payload.exp!,
    email: typeof payload.email === 'string' ? payload.email.toLowerCase() : undefined,
    emailVerified: payload.email_verified === true,
    phone: typeof payload.phone_number === 'string' ? payload.phone_number : undefined,
    signInProvider: typeof firebase.sign_in_provider === 'string' ? firebase.sign_in_provider : undefined,
  };
}
