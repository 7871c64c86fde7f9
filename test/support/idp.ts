import { createHash, generateKeyPairSync, randomBytes, randomInt, randomUUID, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, jwtVerify, type JWTPayload } from 'jose';

/**
 * A loopback stand-in for Google Identity Platform / Firebase Authentication, speaking its REST protocol for tests
 * (the real one cannot be reached here): Identity Toolkit v1 accounts:signUp, signInWithPassword, lookup, delete,
 * sendVerificationCode, signInWithPhoneNumber, update (validSince) and batchDelete (both with a service account's OAuth2 token), the
 * Secure Token refresh (`/v1/token`), an OAuth2 JWT-bearer token endpoint (`/token`) and the JWKS (`/jwks`).
 * Errors are the provider's: `{"error":{"code":400,"message":"INVALID_LOGIN_CREDENTIALS","errors":[...]}}`.
 * ID tokens are real RS256 JWTs signed with a key pair made at start. "SMS" codes are recorded in `sms`.
 */

export interface IdpAccount {
  localId: string;
  email?: string;
  password?: string;
  emailVerified: boolean;
  phoneNumber?: string;
  disabled: boolean;
  /** Seconds: tokens authenticated before this are revoked (accounts:update validSince). */
  validSince: number;
  createdAt: number;
}

export interface IdpCall {
  path: string;
  body: Record<string, unknown>;
  authorization?: string;
}

export interface TokenOptions {
  /** Claims to set or override (null removes one). */
  claims?: Record<string, unknown>;
  /** Sign with a key the provider never published (a forgery). */
  foreignKey?: boolean;
  kid?: string;
  alg?: string;
  /** `firebase.sign_in_provider`; by default `phone` for an account with a phone and no email, else `password`. */
  signInProvider?: 'phone' | 'password';
}

export interface StandIn {
  url: string;
  projectId: string;
  apiKey: string;
  accounts: Map<string, IdpAccount>;
  /** Every text message "sent": the code the user would receive. */
  sms: { phoneNumber: string; code: string; sessionInfo: string }[];
  /** accounts:update calls that set validSince. */
  revocations: { localId: string; validSince: number }[];
  calls: IdpCall[];
  /** How many times the JWKS was asked for (failed answers included). */
  jwksFetches: number;
  /**
   * Email enumeration protection (on for projects made since September 2023): a wrong password and an unknown
   * address are both INVALID_LOGIN_CREDENTIALS. Off: EMAIL_NOT_FOUND and INVALID_PASSWORD, as older projects answer.
   */
  enumerationProtection: boolean;
  /** When true, the JWKS URL answers 503. */
  jwksFailing: boolean;
  /** When true, every connection is dropped (the provider is down). */
  down: boolean;
  /** Runs inside accounts:signUp after the account exists and before the reply; `'drop'` drops the connection instead of answering (the reply is lost). */
  beforeSignUpReply?: (account: IdpAccount) => Promise<void | 'drop'>;
  /** The FOOTFALL_IDP_* settings pointing at this stand-in (write the service-account file first). */
  config(dir: string): Record<string, string | number>;
  /** A service-account JSON file whose token_uri is this stand-in; returns its path. */
  writeServiceAccount(dir: string): string;
  /** An ID token for an account, as the provider would issue it (options make bad ones). */
  idToken(account: IdpAccount, opts?: TokenOptions, authTime?: number): Promise<string>;
  /** Creates a phone account as the on-device SDK flow would, and returns its ID token. */
  phoneSignIn(phoneNumber: string): Promise<{ account: IdpAccount; idToken: string }>;
  byEmail(email: string): IdpAccount | undefined;
  /** Every OAuth2 access token issued so far stops working (revoked, or the key behind it was deleted). */
  revokeAccessTokens(): void;
  /** The user clicked the verification link. */
  verifyEmail(email: string): void;
  close(): Promise<void>;
}

const now = () => Math.floor(Date.now() / 1000);
/** A route's "status" for: drop the connection without answering. */
const DROP = -1;

export async function startIdp(projectId = 'footfall-test'): Promise<StandIn> {
  const apiKey = `AIza${randomBytes(16).toString('hex')}`;
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const foreign = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomBytes(20).toString('hex');
  const jwk = { ...(await exportJWK(signing.publicKey)), kid, alg: 'RS256', use: 'sig' };
  // The service account whose private key head office signs its OAuth assertion with.
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const saEmail = `footfall-auth@${projectId}.iam.gserviceaccount.com`;
  const saKeyId = randomBytes(20).toString('hex');
  const accessTokens = new Set<string>();
  const refreshTokens = new Map<string, { localId: string; authTime: number; signInProvider: 'phone' | 'password' }>();
  const sessions = new Map<string, { phoneNumber: string; code: string; expires: number }>();
  let url = '';

  const s: StandIn = {
    url: '',
    projectId,
    apiKey,
    accounts: new Map(),
    sms: [],
    revocations: [],
    calls: [],
    jwksFetches: 0,
    jwksFailing: false,
    enumerationProtection: true,
    down: false,
    config(dir) {
      return {
        FOOTFALL_IDP_PROJECT_ID: projectId,
        FOOTFALL_IDP_API_KEY: apiKey,
        FOOTFALL_IDP_BASE_URL: url,
        FOOTFALL_IDP_JWKS_URL: `${url}/jwks`,
        FOOTFALL_IDP_SERVICE_ACCOUNT_FILE: s.writeServiceAccount(dir),
        FOOTFALL_IDP_TIMEOUT_MS: 3000,
      };
    },
    writeServiceAccount(dir) {
      const file = path.join(dir, 'idp-service-account.json');
      const json = {
        type: 'service_account',
        project_id: projectId,
        private_key_id: saKeyId,
        private_key: sa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: saEmail,
        client_id: '100000000000000000000',
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: `${url}/token`,
      };
      fs.writeFileSync(file, JSON.stringify(json, null, 2), { mode: 0o600 });
      return file;
    },
    idToken: (account, opts = {}, authTime = now()) => sign(account, authTime, opts),
    async phoneSignIn(phoneNumber) {
      const account = phoneAccount(phoneNumber);
      return { account, idToken: await sign(account, now(), { signInProvider: 'phone' }) };
    },
    byEmail: (email) => [...s.accounts.values()].find((a) => a.email === email.toLowerCase()),
    revokeAccessTokens: () => accessTokens.clear(),
    verifyEmail(email) {
      const a = s.byEmail(email);
      if (!a) throw new Error(`no account ${email}`);
      a.emailVerified = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  function phoneAccount(phoneNumber: string): IdpAccount {
    const found = [...s.accounts.values()].find((a) => a.phoneNumber === phoneNumber);
    if (found) return found;
    const account: IdpAccount = { localId: randomId(), phoneNumber, emailVerified: false, disabled: false, validSince: 0, createdAt: Date.now() };
    s.accounts.set(account.localId, account);
    return account;
  }

  /**
   * The claims Firebase puts in an ID token. `sign_in_provider` is how this session signed in (an account with both
   * an email and a phone says `password` after a password sign-in and `phone` after a phone sign-in).
   */
  async function sign(account: IdpAccount, authTime: number, opts: TokenOptions = {}): Promise<string> {
    const t = now();
    const provider = opts.signInProvider ?? (account.phoneNumber && !account.email ? 'phone' : 'password');
    const claims: Record<string, unknown> = {
      iss: `https://securetoken.google.com/${projectId}`,
      aud: projectId,
      auth_time: authTime,
      user_id: account.localId,
      sub: account.localId,
      iat: t,
      exp: t + 3600,
      ...(account.email ? { email: account.email, email_verified: account.emailVerified } : {}),
      ...(account.phoneNumber ? { phone_number: account.phoneNumber } : {}),
      firebase: {
        identities: provider === 'phone' ? { phone: [account.phoneNumber] } : { email: [account.email] },
        sign_in_provider: provider,
      },
    };
    for (const [k, v] of Object.entries(opts.claims ?? {})) {
      if (v === null) delete claims[k];
      else claims[k] = v;
    }
    const key: KeyObject = opts.foreignKey ? foreign.privateKey : signing.privateKey;
    return new SignJWT(claims as JWTPayload).setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: opts.kid ?? kid, typ: 'JWT' }).sign(key);
  }

  function tokens(account: IdpAccount, signInProvider: 'phone' | 'password', authTime = now()) {
    const refreshToken = `AMf-${randomBytes(48).toString('base64url')}`;
    refreshTokens.set(refreshToken, { localId: account.localId, authTime, signInProvider });
    return sign(account, authTime, { signInProvider }).then((idToken) => ({ idToken, refreshToken, expiresIn: '3600', localId: account.localId }));
  }

  /** An ID token this provider issued and still honours; else the provider's error code. */
  async function accountOf(idToken: unknown): Promise<IdpAccount | string> {
    if (typeof idToken !== 'string' || !idToken) return 'MISSING_ID_TOKEN';
    try {
      const { payload } = await jwtVerify(idToken, signing.publicKey, { issuer: `https://securetoken.google.com/${projectId}`, audience: projectId });
      const account = s.accounts.get(String(payload.sub));
      if (!account) return 'USER_NOT_FOUND';
      if (Number(payload.auth_time) < account.validSince) return 'TOKEN_EXPIRED';
      return account;
    } catch (err) {
      return (err as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'TOKEN_EXPIRED' : 'INVALID_ID_TOKEN';
    }
  }

  const routes: Record<string, (body: Record<string, unknown>, req: http.IncomingMessage) => Promise<[number, unknown]>> = {
    async 'accounts:signUp'(b) {
      const email = typeof b.email === 'string' ? b.email.toLowerCase() : '';
      if (!email) return fail('MISSING_EMAIL');
      if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) return fail('INVALID_EMAIL');
      if (typeof b.password !== 'string' || !b.password) return fail('MISSING_PASSWORD');
      if (b.password.length < 6) return fail('WEAK_PASSWORD : Password should be at least 6 characters');
      if (s.byEmail(email)) return fail('EMAIL_EXISTS');
      const account: IdpAccount = { localId: randomId(), email, password: b.password, emailVerified: false, disabled: false, validSince: 0, createdAt: Date.now() };
      s.accounts.set(account.localId, account);
      if ((await s.beforeSignUpReply?.(account)) === 'drop') return [DROP, null];
      return [200, { kind: 'identitytoolkit#SignupNewUserResponse', email, ...(await tokens(account, 'password')) }];
    },
    async 'accounts:signInWithPassword'(b) {
      const account = typeof b.email === 'string' ? s.byEmail(b.email) : undefined;
      if (!account || account.password !== b.password) {
        if (s.enumerationProtection) return fail('INVALID_LOGIN_CREDENTIALS');
        return fail(account ? 'INVALID_PASSWORD : The password is invalid or the user does not have a password.' : 'EMAIL_NOT_FOUND : There is no user record corresponding to this identifier.');
      }
      if (account.disabled) return fail('USER_DISABLED : The user account has been disabled by an administrator.');
      return [200, { kind: 'identitytoolkit#VerifyPasswordResponse', email: account.email, displayName: '', registered: true, ...(await tokens(account, 'password')) }];
    },
    async 'accounts:lookup'(b) {
      const account = await accountOf(b.idToken);
      if (typeof account === 'string') return fail(account);
      const user = {
        localId: account.localId,
        ...(account.email ? { email: account.email, emailVerified: account.emailVerified, passwordHash: 'UkVEQUNURUQ=', passwordUpdatedAt: account.createdAt } : {}),
        ...(account.phoneNumber ? { phoneNumber: account.phoneNumber } : {}),
        providerUserInfo: [],
        validSince: String(account.validSince),
        disabled: account.disabled,
        createdAt: String(account.createdAt),
        lastLoginAt: String(Date.now()),
      };
      return [200, { kind: 'identitytoolkit#GetAccountInfoResponse', users: [user] }];
    },
    async 'accounts:delete'(b) {
      const account = await accountOf(b.idToken);
      if (typeof account === 'string') return fail(account);
      s.accounts.delete(account.localId);
      return [200, { kind: 'identitytoolkit#DeleteAccountResponse' }];
    },
    async 'accounts:sendVerificationCode'(b) {
      const phoneNumber = typeof b.phoneNumber === 'string' ? b.phoneNumber : '';
      if (!phoneNumber) return fail('MISSING_PHONE_NUMBER');
      if (!/^\+[1-9]\d{7,14}$/.test(phoneNumber)) return fail('INVALID_PHONE_NUMBER : Invalid format.');
      const attestation = b.recaptchaToken ?? b.playIntegrityToken ?? b.safetyNetToken ?? b.iosReceipt;
      if (attestation === undefined) return fail('MISSING_CLIENT_IDENTIFIER : This request is missing a valid app identifier.');
      if (attestation === 'refused') return fail('CAPTCHA_CHECK_FAILED : Recaptcha verification failed - DUPE');
      const sessionInfo = randomBytes(96).toString('base64url');
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      sessions.set(sessionInfo, { phoneNumber, code, expires: Date.now() + 5 * 60_000 });
      s.sms.push({ phoneNumber, code, sessionInfo });
      return [200, { sessionInfo }];
    },
    async 'accounts:signInWithPhoneNumber'(b) {
      const session = typeof b.sessionInfo === 'string' ? sessions.get(b.sessionInfo) : undefined;
      if (!b.sessionInfo) return fail('MISSING_SESSION_INFO');
      if (!session) return fail('INVALID_SESSION_INFO');
      if (session.expires < Date.now()) return fail('SESSION_EXPIRED');
      if (!b.code) return fail('MISSING_CODE');
      if (b.code !== session.code) return fail('INVALID_CODE');
      sessions.delete(String(b.sessionInfo));
      const existed = [...s.accounts.values()].some((a) => a.phoneNumber === session.phoneNumber);
      const account = phoneAccount(session.phoneNumber);
      return [200, { ...(await tokens(account, 'phone')), isNewUser: !existed, phoneNumber: session.phoneNumber }];
    },
    async 'accounts:batchDelete'(b, req) {
      if (!admin(req)) return unauthenticated();
      const localIds = Array.isArray(b.localIds) ? b.localIds.filter((x): x is string => typeof x === 'string') : [];
      if (localIds.length === 0 || localIds.length > 1000) return fail('INVALID_ARGUMENT');
      const errors: { index: number; localId: string; message: string }[] = [];
      localIds.forEach((localId, index) => {
        const account = s.accounts.get(localId);
        if (!account) errors.push({ index, localId, message: 'USER_NOT_FOUND' });
        else if (!account.disabled && b.force !== true) errors.push({ index, localId, message: 'NOT_DISABLED : Disable the account before batch deletion.' });
        else s.accounts.delete(localId);
      });
      return [200, errors.length ? { errors } : {}];
    },
    async 'accounts:update'(b, req) {
      if (!admin(req)) return unauthenticated();
      const account = typeof b.localId === 'string' ? s.accounts.get(b.localId) : undefined;
      if (!account) return fail('USER_NOT_FOUND');
      if (b.validSince !== undefined) {
        const validSince = Number(b.validSince);
        if (!Number.isInteger(validSince)) return fail('INVALID_ARGUMENT');
        account.validSince = validSince;
        s.revocations.push({ localId: account.localId, validSince });
      }
      return [200, { kind: 'identitytoolkit#SetAccountInfoResponse', localId: account.localId }];
    },
  };

  /** Does the request carry an OAuth2 access token of the service account? */
  function admin(req: http.IncomingMessage): boolean {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    return bearer !== undefined && accessTokens.has(bearer);
  }

  function unauthenticated(): [number, unknown] {
    return [401, { error: { code: 401, message: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.', status: 'UNAUTHENTICATED' } }];
  }

  function fail(message: string, code = 400): [number, unknown] {
    return [code, { error: { code, message, errors: [{ message, domain: 'global', reason: 'invalid' }] } }];
  }

  async function handle(req: http.IncomingMessage, raw: string): Promise<[number, unknown, Record<string, string>?]> {
    const u = new URL(req.url ?? '/', url);
    if (req.method === 'GET' && u.pathname === '/jwks') {
      s.jwksFetches++;
      if (s.jwksFailing) return [503, { error: { code: 503, message: 'Service Unavailable' } }];
      return [200, { keys: [jwk] }, { 'Cache-Control': 'public, max-age=19800, must-revalidate, no-transform' }];
    }
    if (req.method !== 'POST') return [404, { error: { code: 404, message: 'Not Found' } }];
    if (u.pathname === '/token') return oauth(new URLSearchParams(raw));
    let body: Record<string, unknown> = {};
    const form = (req.headers['content-type'] ?? '').includes('x-www-form-urlencoded');
    try {
      body = form ? Object.fromEntries(new URLSearchParams(raw)) : raw ? JSON.parse(raw) : {};
    } catch {
      return [400, { error: { code: 400, message: 'Invalid JSON payload received.', status: 'INVALID_ARGUMENT' } }];
    }
    s.calls.push({ path: u.pathname, body, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
    if (u.pathname === '/v1/token') return refresh(u, body);
    const m = /^\/v1\/(?:projects\/([^/]+)\/)?(accounts:\w+)$/.exec(u.pathname);
    const route = m ? routes[m[2]!] : undefined;
    if (!route) return [404, { error: { code: 404, message: 'Not Found' } }];
    if (m![1] !== undefined && m![1] !== projectId) return fail('PROJECT_NOT_FOUND');
    if (m![1] === undefined && u.searchParams.get('key') !== apiKey) {
      return [400, { error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } }];
    }
    return route(body, req);
  }

  /** Secure Token service: a refresh token for a fresh ID token, unless revoked (validSince) meanwhile. */
  async function refresh(u: URL, b: Record<string, unknown>): Promise<[number, unknown]> {
    if (u.searchParams.get('key') !== apiKey) return fail('API_KEY_INVALID');
    if (b.grant_type !== 'refresh_token') return fail('INVALID_GRANT_TYPE');
    const held = typeof b.refresh_token === 'string' ? refreshTokens.get(b.refresh_token) : undefined;
    if (!held) return fail('INVALID_REFRESH_TOKEN');
    const account = s.accounts.get(held.localId);
    if (!account) return fail('USER_NOT_FOUND');
    if (held.authTime < account.validSince) return fail('TOKEN_EXPIRED');
    const idToken = await sign(account, held.authTime, { signInProvider: held.signInProvider });
    return [200, { access_token: idToken, expires_in: '3600', token_type: 'Bearer', refresh_token: b.refresh_token, id_token: idToken, user_id: account.localId, project_id: '0' }];
  }

  /** OAuth2 JWT-bearer grant (RFC 7523), as Google's token endpoint answers it. */
  async function oauth(form: URLSearchParams): Promise<[number, unknown]> {
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      return [400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' + String(form.get('grant_type')) }];
    }
    try {
      const { payload, protectedHeader } = await jwtVerify(form.get('assertion') ?? '', sa.publicKey, { issuer: saEmail, audience: `${url}/token`, algorithms: ['RS256'] });
      if (protectedHeader.kid !== saKeyId || typeof payload.scope !== 'string' || !payload.scope.includes('https://www.googleapis.com/auth/')) throw new Error('scope');
    } catch {
      return [400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }];
    }
    const token = `ya29.${randomBytes(32).toString('base64url')}`;
    accessTokens.add(token);
    return [200, { access_token: token, expires_in: 3599, token_type: 'Bearer' }];
  }

  const server = http.createServer((req, res) => {
    if (s.down) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, Buffer.concat(chunks).toString('utf8'))
        .then(([status, json, headers]) => {
          if (status === DROP) {
            req.socket.destroy();
            return;
          }
          res.writeHead(status, { 'Content-Type': 'application/json; charset=UTF-8', ...headers });
          res.end(JSON.stringify(json));
        })
        .catch((err: unknown) => {
          res.writeHead(500, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ error: { code: 500, message: String(err) } }));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.url = url;
  return s;
}

/** Provider uids look like Firebase's: 28 characters. */
function randomId(): string {
  return createHash('sha256').update(randomUUID()).digest('base64url').replace(/[-_]/g, 'x').slice(0, 28);
}
