import fs from 'node:fs';
import { SignJWT, importPKCS8 } from 'jose';
import { z } from 'zod';

/**
 * The identity provider (Google Identity Platform / Firebase Authentication) over its REST protocol: Identity
 * Toolkit v1 (`{base}/v1/accounts:*?key=API_KEY`) and, for revocation, `{base}/v1/projects/{id}/accounts:update`
 * with an OAuth2 access token of a service account (JWT-bearer grant at the account's `token_uri`).
 * Nothing here logs or returns passwords, codes or tokens beyond what the caller asked for.
 */

/** What the authentication service asks of an identity provider (Google, the Firebase emulator, the embedded one). */
export interface AccountProvider {
  signUp(email: string, password: string): Promise<{ idToken: string; refreshToken: string; expiresIn: string; localId: string }>;
  signInWithPassword(email: string, password: string, ip?: string): Promise<PasswordSignIn>;
  lookup(idToken: string): Promise<ProviderAccount | undefined>;
  deleteAccount(idToken: string): Promise<void>;
  sendVerificationCode(body: { phoneNumber: string; recaptchaToken?: string | undefined; playIntegrityToken?: string | undefined }): Promise<{ sessionInfo: string }>;
  signInWithPhoneNumber(sessionInfo: string, code: string): Promise<PhoneSignIn>;
  revokeSessions(uid: string, validSince: number): Promise<void>;
  deleteAccountsByUid(uids: readonly string[]): Promise<number>;
}

export interface ProviderSettings {
  projectId: string;
  /** The Firebase Auth emulator: privileged calls carry `Bearer owner` instead of a service account's token. */
  emulator?: boolean;
  apiKey: string;
  /** Identity Toolkit base, without trailing slash (https://identitytoolkit.googleapis.com). */
  baseUrl: string;
  serviceAccountFile?: string | undefined;
  timeoutMs: number;
}

/**
 * A failed provider call. `refused`: the provider answered with its error JSON (`{"error":{"message":"CODE ..."}}`),
 * `code` is the leading word of that message (INVALID_LOGIN_CREDENTIALS, WEAK_PASSWORD...). `unavailable`: no usable
 * answer (network, timeout, 5xx, something that is not the provider's JSON).
 */
export class ProviderError extends Error {
  constructor(
    readonly kind: 'refused' | 'unavailable',
    readonly code: string,
    readonly httpStatus?: number,
    /** What went wrong in words safe to show (the embedded provider's SMS gateway: "answered HTTP 500"). */
    readonly detail?: string,
  ) {
    super(kind === 'refused' ? `identity provider refused: ${code}` : `identity provider unavailable: ${code}`);
  }
}

/** 127.0.0.0/8, ::1 and localhost: the only hosts plain http may go to (tests, the provider's local emulator). */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Every provider URL (Identity Toolkit, the JWKS, the service account's token_uri) must be https, or plain http to
 * a loopback address. Over plain http a network attacker could read passwords and codes, or hand us their own
 * signing keys. Refused before any connection: `unavailable` INSECURE_URL (502, logged).
 */
export function assertSecureUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ProviderError('unavailable', 'INSECURE_URL');
  }
  if (u.protocol === 'https:' || (u.protocol === 'http:' && isLoopback(u.hostname))) return;
  throw new ProviderError('unavailable', 'INSECURE_URL');
}

const TokenReply = z.object({
  idToken: z.string().min(1),
  refreshToken: z.string().min(1),
  expiresIn: z.string().regex(/^\d+$/),
  localId: z.string().min(1),
});
const PasswordReply = TokenReply.extend({ email: z.string().optional(), displayName: z.string().optional() });
const PhoneReply = TokenReply.extend({ phoneNumber: z.string().optional(), isNewUser: z.boolean().optional() });
const SendCodeReply = z.object({ sessionInfo: z.string().min(1) });
const LookupReply = z.object({
  users: z
    .array(
      z.object({
        localId: z.string(),
        email: z.string().optional(),
        emailVerified: z.boolean().optional(),
        phoneNumber: z.string().optional(),
        disabled: z.boolean().optional(),
        validSince: z.string().optional(),
      }),
    )
    .default([]),
});
const OAuthReply = z.object({ access_token: z.string().min(1), expires_in: z.number().int().positive().optional() });

/** accounts:batchDelete: the accounts that could not be deleted, if any. */
const BatchDeleteReply = z.object({ errors: z.array(z.object({ index: z.number().optional(), localId: z.string().optional(), message: z.string().optional() })).optional() });

export type PasswordSignIn = z.infer<typeof PasswordReply>;
export type PhoneSignIn = z.infer<typeof PhoneReply>;
export type ProviderAccount = z.infer<typeof LookupReply>['users'][number];

const ServiceAccount = z.object({
  client_email: z.string().min(1),
  private_key: z.string().min(1),
  private_key_id: z.string().optional(),
  token_uri: z.url(),
});
type ServiceAccount = z.infer<typeof ServiceAccount>;

/** The scopes the Admin SDKs ask for; accounts:update needs identitytoolkit or cloud-platform. */
const scopes = ['https://www.googleapis.com/auth/cloud-platform', 'https://www.googleapis.com/auth/identitytoolkit'].join(' ');

export class IdentityProvider implements AccountProvider {
  private account?: ServiceAccount;
  private access?: { token: string; until: number };

  constructor(readonly settings: ProviderSettings) {}

  signUp(email: string, password: string) {
    return this.call('accounts:signUp', { email, password, returnSecureToken: true }, TokenReply);
  }

  signInWithPassword(email: string, password: string): Promise<PasswordSignIn> {
    return this.call('accounts:signInWithPassword', { email, password, returnSecureToken: true }, PasswordReply);
  }

  /** The provider account an ID token belongs to (emailVerified tells whether a link by email is allowed). */
  async lookup(idToken: string): Promise<ProviderAccount | undefined> {
    return (await this.call('accounts:lookup', { idToken }, LookupReply)).users[0];
  }

  /** Deletes the account the ID token belongs to (sign-up rollback). */
  async deleteAccount(idToken: string): Promise<void> {
    await this.call('accounts:delete', { idToken }, z.unknown());
  }

  sendVerificationCode(body: { phoneNumber: string; recaptchaToken?: string | undefined; playIntegrityToken?: string | undefined }) {
    return this.call('accounts:sendVerificationCode', body, SendCodeReply);
  }

  signInWithPhoneNumber(sessionInfo: string, code: string): Promise<PhoneSignIn> {
    return this.call('accounts:signInWithPhoneNumber', { sessionInfo, code }, PhoneReply);
  }

  /**
   * Revokes every session of the account: refresh tokens and ID tokens authenticated before `validSince`
   * (seconds) stop working at the provider. Needs the service account.
   */
  async revokeSessions(uid: string, validSince: number): Promise<void> {
    const { baseUrl, projectId } = this.settings;
    await this.asServiceAccount((token) =>
      this.post(`${baseUrl}/v1/projects/${encodeURIComponent(projectId)}/accounts:update`, { localId: uid, validSince: String(validSince) }, z.unknown(), {
        Authorization: `Bearer ${token}`,
      }),
    );
  }

  /**
   * A call with the service account's access token. A 401 means the provider no longer takes the cached token
   * (revoked, its key deleted): it is dropped and the call made once more with a fresh one, instead of failing
   * every call until the cached token would have expired.
   */
  private async asServiceAccount<T>(call: (token: string) => Promise<T>): Promise<T> {
    if (this.settings.emulator) return call('owner'); // the emulator's (and the Admin SDK's) convention
    const token = await this.accessToken();
    try {
      return await call(token);
    } catch (err) {
      if (!(err instanceof ProviderError && err.httpStatus === 401)) throw err;
      this.access = undefined;
      return call(await this.accessToken());
    }
  }

  /**
   * Deletes accounts by uid (company deletion), with the service account: `accounts:batchDelete`, at most 1000 a
   * call, `force` so that enabled accounts go too. An account that is already gone is not an error.
   */
  async deleteAccountsByUid(uids: readonly string[]): Promise<number> {
    const { baseUrl, projectId } = this.settings;
    let deleted = 0;
    for (let i = 0; i < uids.length; i += 1000) {
      const localIds = uids.slice(i, i + 1000);
      const reply = await this.asServiceAccount((token) =>
        this.post(`${baseUrl}/v1/projects/${encodeURIComponent(projectId)}/accounts:batchDelete`, { localIds, force: true }, BatchDeleteReply, {
          Authorization: `Bearer ${token}`,
        }),
      );
      const failed = (reply.errors ?? []).filter((e) => !/USER_NOT_FOUND/i.test(e.message ?? ''));
      if (failed.length > 0) throw new ProviderError('refused', /^[A-Z0-9_]+/.exec(failed[0]!.message ?? '')?.[0] ?? 'BATCH_DELETE_FAILED');
      deleted += localIds.length - (reply.errors?.length ?? 0);
    }
    return deleted;
  }

  private call<T>(method: string, body: unknown, reply: z.ZodType<T>): Promise<T> {
    const { baseUrl, apiKey } = this.settings;
    return this.post(`${baseUrl}/v1/${method}?key=${encodeURIComponent(apiKey)}`, body, reply);
  }

  private async post<T>(url: string, body: unknown, reply: z.ZodType<T>, headers: Record<string, string> = {}): Promise<T> {
    const json = await this.send(url, { 'Content-Type': 'application/json', ...headers }, JSON.stringify(body));
    const parsed = reply.safeParse(json);
    if (!parsed.success) throw new ProviderError('unavailable', 'UNEXPECTED_REPLY');
    return parsed.data;
  }

  /** One request; the provider's error JSON becomes a `refused` ProviderError, anything else `unavailable`. */
  private async send(url: string, headers: Record<string, string>, body: string): Promise<unknown> {
    assertSecureUrl(url);
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.settings.timeoutMs), redirect: 'error' });
    } catch (err) {
      const timeout = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new ProviderError('unavailable', timeout ? 'TIMEOUT' : 'NETWORK');
    }
    const text = await res.text().catch(() => '');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      throw new ProviderError('unavailable', `HTTP_${res.status}`, res.status);
    }
    if (res.ok) return json;
    if (res.status >= 500) throw new ProviderError('unavailable', `HTTP_${res.status}`, res.status);
    throw new ProviderError('refused', errorCode(json) ?? `HTTP_${res.status}`, res.status);
  }

  /** An OAuth2 access token of the service account, cached until a minute before it expires. */
  private async accessToken(): Promise<string> {
    if (this.access && Date.now() < this.access.until) return this.access.token;
    const account = this.serviceAccount();
    let assertion: string;
    try {
      const key = await importPKCS8(account.private_key, 'RS256');
      const now = Math.floor(Date.now() / 1000);
      assertion = await new SignJWT({ scope: scopes })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.private_key_id ? { kid: account.private_key_id } : {}) })
        .setIssuer(account.client_email)
        .setAudience(account.token_uri)
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(key);
    } catch {
      throw new ProviderError('unavailable', 'SERVICE_ACCOUNT_KEY_UNUSABLE');
    }
    const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();
    const json = await this.send(account.token_uri, { 'Content-Type': 'application/x-www-form-urlencoded' }, form).catch((err: unknown) => {
      // Refused (invalid_grant: say the key was rotated): read the file again next time, so a new key needs no restart.
      if (err instanceof ProviderError && err.kind === 'refused') this.account = undefined;
      throw err;
    });
    const parsed = OAuthReply.safeParse(json);
    if (!parsed.success) throw new ProviderError('unavailable', 'UNEXPECTED_REPLY');
    const life = parsed.data.expires_in ?? 3600;
    this.access = { token: parsed.data.access_token, until: Date.now() + Math.max(0, life - 60) * 1000 };
    return this.access.token;
  }

  /** Read on first use (and again after a failure), so a fixed file works without a restart. */
  private serviceAccount(): ServiceAccount {
    if (this.account) return this.account;
    let parsed;
    try {
      parsed = ServiceAccount.safeParse(JSON.parse(fs.readFileSync(this.settings.serviceAccountFile ?? '', 'utf8')));
    } catch {
      throw new ProviderError('unavailable', 'SERVICE_ACCOUNT_FILE_UNREADABLE');
    }
    if (!parsed.success) throw new ProviderError('unavailable', 'SERVICE_ACCOUNT_FILE_INVALID');
    this.account = parsed.data;
    return this.account;
  }
}

/**
 * "WEAK_PASSWORD : Password should be at least 6 characters" -> WEAK_PASSWORD; OAuth's `{ error: "invalid_grant" }`
 * too; a message in prose ("Request had invalid authentication credentials...") -> its `status` (UNAUTHENTICATED).
 * Only a code word ever comes out (it reaches the client as details.providerCode), never the provider's text.
 */
function errorCode(json: unknown): string | undefined {
  const e = (json as { error?: unknown } | null)?.error;
  const word = (v: unknown, anyCase: boolean) => {
    if (typeof v !== 'string') return undefined;
    const m = (anyCase ? /^([a-z][a-z0-9_]{0,63})(?=$|[\s:])/i : /^([A-Z][A-Z0-9_]{0,63})(?=$|[\s:])/).exec(v.trim());
    return m?.[1]?.toUpperCase();
  };
  if (typeof e === 'string') return word(e, true);
  const err = e as { message?: unknown; status?: unknown } | undefined;
  return word(err?.message, false) ?? word(err?.status, false);
}
