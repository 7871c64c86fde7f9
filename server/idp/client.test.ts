import fs from 'node:fs';
import { signInWithEmailAndPassword, updatePassword } from 'firebase/auth';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type Reply, type RequestOpts } from '../../test/support/harness.js';
import { authCall, capturedLog, firebaseClient, jwtParts, type FirebaseClient } from '../../test/support/firebase-client.js';
import { loadConfig } from '../config.js';
import { KEY_FILE } from './keys.js';
import { responseChecker, type ResponseChecker } from '../../test/support/openapi-check.js';

/**
 * The embedded provider (the default, nothing configured) with the real Firebase JS SDK: /auth sign-up, the SDK's
 * password sign-in, refresh through Secure Token, /auth/session, sign-out, and what is refused after it.
 */
let seq = 0;
const json = (r: Response): Promise<any> => r.json();
const address = (tag: string) => `${tag}-${process.pid}-${++seq}@embedded.test`;

describe('embedded identity provider: client (email) path with the Firebase SDK', () => {
  let h: Harness;
  let checker: ResponseChecker;
  const { log, lines } = capturedLog();
  const clients: FirebaseClient[] = [];
  const client = () => {
    const c = firebaseClient(h.url, 'footfall');
    clients.push(c);
    return c;
  };

  const call = <T = any>(method: string, p: string, opts: RequestOpts = {}): Promise<Reply<T>> => authCall<T>(h, method, p, opts);
  const toolkit = async (op: string, body: unknown, key = 'any-key') => {
    const res = await fetch(`${h.url}/identitytoolkit.googleapis.com/v1/accounts:${op}?key=${key}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    // Not through the harness, so checked against the OpenAPI document here (server/idp/openapi.ts).
    checker.check({ method: 'POST', path: `/identitytoolkit.googleapis.com/v1/accounts:${op}`, status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.clone().json() });
    return res;
  };

  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 3 }, { log });
    checker = responseChecker((await h.request('GET', '/api/openapi.json')).body);
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await h?.close();
  });

  it('is the default: the key file is made in the data dir (0600) and its public keys are published', async () => {
    expect(loadConfig({}).idpMode).toBe('embedded');
    const st = fs.statSync(`${h.dataDir}/${KEY_FILE}`);
    expect(st.mode & 0o777).toBe(0o600);
    const jwks = await json(await fetch(`${h.url}/.well-known/jwks.json`));
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
    expect(jwks.keys[0].d).toBeUndefined(); // never the private part
    expect(lines.some((l) => l.msg === 'identity provider: embedded (head office signs its own ID tokens)' && l.level === 30)).toBe(true);
  });

  it('sign-up on /auth, SDK sign-in, refresh, /auth/session, sign-out; then the old ID token and the refresh are refused', async () => {
    const email = address('owner');
    const password = 'a-good-password';
    const up = await call('POST', '/auth/client/sign-up', { body: { companyName: 'Embedded Teas', email, password } });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    expect(up.body.refreshToken).toMatch(/^ff1\./);
    expect(up.body.expiresInSeconds).toBe(3600);

    const { auth } = client();
    const cred = await signInWithEmailAndPassword(auth, email, password);
    expect(cred.user.uid).toBe(up.body.user.id); // one person, one account: the provider uid is the user's id
    expect(cred.user.email).toBe(email);
    const first = await cred.user.getIdToken();
    const { header, claims } = jwtParts(first);
    expect(header).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
    expect(claims).toMatchObject({ iss: 'https://securetoken.google.com/footfall', aud: 'footfall', sub: cred.user.uid, email, firebase: { sign_in_provider: 'password' } });
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    // Anyone can check the token with the published keys.
    await jwtVerify(first, createRemoteJWKSet(new URL(`${h.url}/.well-known/jwks.json`)), { issuer: 'https://securetoken.google.com/footfall', audience: 'footfall' });

    const refreshBefore = cred.user.refreshToken;
    await new Promise((r) => setTimeout(r, 1100)); // a new iat, so the refreshed token differs
    const refreshed = await cred.user.getIdToken(true); // Secure Token refresh grant
    expect(refreshed).not.toBe(first);
    expect(cred.user.refreshToken).not.toBe(refreshBefore); // rotated
    expect(jwtParts(refreshed).claims.auth_time).toBe(claims.auth_time);
    // The rotated-out refresh token is dead.
    const reuse = await fetch(`${h.url}/securetoken.googleapis.com/v1/token?key=k`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(refreshBefore)}` });
    expect(reuse.status).toBe(400);
    expect((await json(reuse)).error.message).toBe('INVALID_REFRESH_TOKEN');
    // One refresh token sent twice at once (two app instances, or two head-office processes): one rotation wins.
    const current = cred.user.refreshToken;
    const grant = () => fetch(`${h.url}/securetoken.googleapis.com/v1/token?key=k`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(current)}` });
    const twice = await Promise.all([grant(), grant(), grant()]);
    expect(twice.map((r) => r.status).sort()).toEqual([200, 400, 400]);

    const session = await call('GET', '/auth/session', { token: refreshed });
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({ allowed: true, kind: 'client', role: 'owner', tenant: up.body.tenant, business: up.body.business });

    const out = await call('POST', '/auth/client/sign-out', { token: refreshed });
    expect(out.status).toBe(200);
    expect(out.body.signedOut).toBe(true);
    for (const t of [refreshed, first]) {
      const r = await call('GET', '/auth/session', { token: t });
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ code: 'UNAUTHENTICATED', details: { reason: 'token_revoked' } });
    }
    // Sign-out deleted the refresh tokens: the SDK's refresh is refused (INVALID_REFRESH_TOKEN).
    await expect(cred.user.getIdToken(true)).rejects.toMatchObject({ code: 'auth/invalid-refresh-token' });
    // Refusals are logged at info with the reason and never the token.
    const refused = lines.filter((l) => l.msg === 'ID token refused');
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(refused.every((l) => l.level === 30 && l.reason === 'token_revoked')).toBe(true);
    expect(JSON.stringify(lines)).not.toContain(first.split('.')[1]!);

    // A new sign-in right after works (even within the same second as the sign-out).
    const again = await signInWithEmailAndPassword(client().auth, email, password);
    expect((await call('GET', '/auth/session', { token: await again.user.getIdToken() })).status).toBe(200);
  });

  it('one account: the /auth password works on /api/auth/login, and an /api password on /auth and the SDK', async () => {
    const email = address('both');
    expect((await call('POST', '/auth/client/sign-up', { body: { companyName: 'Both Ways', email, password: 'sign-up-password' } })).status).toBe(201);
    expect((await h.request('POST', '/api/auth/login', { body: { email, password: 'sign-up-password' } })).status).toBe(200);

    const c = await h.company();
    const viaAuth = await call('POST', '/auth/client/sign-in', { body: { email: c.ownerEmail, password: c.ownerPassword } });
    expect(viaAuth.status, JSON.stringify(viaAuth.body)).toBe(200);
    expect(viaAuth.body.user.id).toBe(c.owner.user.id);
    const sdk = await signInWithEmailAndPassword(client().auth, c.ownerEmail, c.ownerPassword);
    expect(sdk.user.uid).toBe(c.owner.user.id);

    // A password changed through the SDK (accounts:update) is the one /api checks from then on.
    await updatePassword(sdk.user, 'changed-through-sdk');
    expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } })).status).toBe(401);
    expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: 'changed-through-sdk' } })).status).toBe(200);
  });

  it('a password reset on head office (/api/team) ends the SDK session too: refresh refused, earlier ID tokens refused', async () => {
    const c = await h.company();
    const r = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { full_name: 'Reset Me', role: 'staff', email: address('reset'), password: 'first-password' } });
    expect(r.status).toBe(201);
    const cred = await signInWithEmailAndPassword(client().auth, r.body.email, 'first-password');
    const token = await cred.user.getIdToken();
    expect((await call('GET', '/auth/session', { token })).status).toBe(200);
    const reset = await h.request('POST', `/api/team/${r.body.id}/password`, { token: c.ownerToken, body: { password: 'second-password' } });
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    expect((await call('GET', '/auth/session', { token })).body.details.reason).toBe('token_revoked');
    await expect(cred.user.getIdToken(true)).rejects.toMatchObject({ code: 'auth/invalid-refresh-token' });
    await expect(signInWithEmailAndPassword(client().auth, r.body.email, 'first-password')).rejects.toMatchObject({ code: 'auth/invalid-credential' });
    expect((await signInWithEmailAndPassword(client().auth, r.body.email, 'second-password')).user.uid).toBe(r.body.id);
  });

  it('the same login limits: failures on /api lock the SDK and /auth sign-in of that account', async () => {
    const c = await h.company();
    for (let i = 0; i < 3; i++) expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: 'wrong-password' } })).status).toBe(401);
    await expect(signInWithEmailAndPassword(client().auth, c.ownerEmail, c.ownerPassword)).rejects.toMatchObject({ code: 'auth/too-many-requests' });
    const r = await call('POST', '/auth/client/sign-in', { body: { email: c.ownerEmail, password: c.ownerPassword } });
    expect(r.status).toBe(429);
    expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } })).status).toBe(429);
  });

  it("Identity Toolkit's errors and error shape on the provider paths", async () => {
    const c = await h.company();
    const wrong = await toolkit('signInWithPassword', { email: c.ownerEmail, password: 'nope', returnSecureToken: true });
    expect(wrong.status).toBe(400);
    expect(await json(wrong)).toEqual({ error: { code: 400, message: 'INVALID_LOGIN_CREDENTIALS', errors: [{ message: 'INVALID_LOGIN_CREDENTIALS', domain: 'global', reason: 'invalid' }], status: 'INVALID_ARGUMENT' } });
    await expect(signInWithEmailAndPassword(client().auth, address('nobody'), 'whatever-pw')).rejects.toMatchObject({ code: 'auth/invalid-credential' });
    const cases: [string, unknown, string][] = [
      ['signInWithPassword', { password: 'x' }, 'MISSING_EMAIL'],
      ['signInWithPassword', { email: 'not-an-email', password: 'x' }, 'INVALID_EMAIL'],
      ['signInWithPassword', { email: c.ownerEmail }, 'MISSING_PASSWORD'],
      ['signUp', { email: address('sdk'), password: 'a-good-password' }, 'ADMIN_ONLY_OPERATION'],
      ['signUp', {}, 'OPERATION_NOT_ALLOWED'],
      ['lookup', {}, 'MISSING_ID_TOKEN'],
      ['lookup', { idToken: 'not.a.token' }, 'INVALID_ID_TOKEN'],
      ['delete', { idToken: 'x' }, 'ADMIN_ONLY_OPERATION'],
      ['sendVerificationCode', {}, 'MISSING_PHONE_NUMBER'],
      ['sendVerificationCode', { phoneNumber: '12' }, 'INVALID_PHONE_NUMBER'],
      ['signInWithPhoneNumber', { code: '123456' }, 'MISSING_SESSION_INFO'],
      ['signInWithPhoneNumber', { sessionInfo: 'made-up', code: '123456' }, 'INVALID_SESSION_INFO'],
    ];
    for (const [op, body, code] of cases) {
      const r = await toolkit(op, body);
      const j = await json(r);
      expect(r.status, op).toBe(400);
      expect(j.error.message.split(' : ')[0], `${op} ${JSON.stringify(body)}`).toBe(code);
      expect(j.error.errors[0].message).toBe(j.error.message);
    }
    const bad = await fetch(`${h.url}/identitytoolkit.googleapis.com/v1/accounts:lookup?key=k`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{nope' });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.message).toMatch(/^INVALID_JSON_PAYLOAD/);
    const unknown = await toolkit('createAuthUri', {});
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe(404);
    const grant = await fetch(`${h.url}/securetoken.googleapis.com/v1/token?key=k`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'grant_type=password' });
    expect((await json(grant)).error.message).toBe('INVALID_GRANT_TYPE');
  });

  it("an unsigned (emulator-style) token naming head office's project is refused outside emulator mode", async () => {
    const c = await h.company();
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: 'https://securetoken.google.com/footfall', aud: 'footfall', sub: c.owner.user.id, user_id: c.owner.user.id, email: c.ownerEmail, email_verified: true, iat: now, auth_time: now, exp: now + 3600, firebase: { sign_in_provider: 'password' } };
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    const r = await call('GET', '/auth/session', { token: unsigned });
    expect(r.status).toBe(401);
    expect(r.body.details.reason).toBe('token_invalid');
    expect((await toolkit('lookup', { idToken: unsigned })).status).toBe(400);
  });

  it('FOOTFALL_IDP_API_KEY: only that key is accepted', async () => {
    const k = await startHarness({ FOOTFALL_IDP: 'embedded', FOOTFALL_IDP_API_KEY: 'the-lan-key' });
    try {
      const c = await k.company();
      const path = `/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword`;
      const body = JSON.stringify({ email: c.ownerEmail, password: c.ownerPassword, returnSecureToken: true });
      const wrong = await fetch(`${k.url}${path}?key=other`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      expect(wrong.status).toBe(400);
      expect((await json(wrong)).error.message).toBe('API key not valid. Please pass a valid API key.');
      const sdk = firebaseClient(k.url, 'footfall', 'the-lan-key');
      clients.push(sdk);
      const right = await signInWithEmailAndPassword(sdk.auth, c.ownerEmail, c.ownerPassword);
      expect(right.user.uid).toBe(c.owner.user.id);
    } finally {
      await k.close();
    }
  });
});
