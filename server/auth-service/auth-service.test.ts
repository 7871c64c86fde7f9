import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHarness, type Company, type Harness, type Reply, type RequestOpts } from '../../test/support/harness.js';
import { startIdp, type StandIn } from '../../test/support/idp.js';
import { capturedLog } from '../../test/support/firebase-client.js';
import { ConfigError, loadConfig, type RawConfig } from '../config.js';
import { ProviderKeys, verifyIdToken } from './id-tokens.js';
import { IdentityProvider, ProviderError, assertSecureUrl } from './provider.js';

const clientKeys = ['business', 'expiresInSeconds', 'refreshToken', 'requestId', 'sessionToken', 'tenant', 'user'];
const staffKeys = ['expiresInSeconds', 'refreshToken', 'requestId', 'requiresProfileSetup', 'sessionToken', 'staff', 'user'];
const errorKeys = ['code', 'details', 'message', 'requestId'];
const sessionKeys = ['allowed', 'business', 'expiresInSeconds', 'kind', 'message', 'reason', 'requestId', 'role', 'staff', 'tenant', 'user'];
const jwtRe = /^[\w-]+\.[\w-]+\.[\w-]+$/;

let seq = 0;
const unique = () => `${process.pid}-${++seq}`;
const address = (tag: string) => `${tag}-${unique()}@auth-service.test`;
/** A fresh UK mobile number in E.164 for each call. */
const phone = () => `+447700${String(100000 + ((process.pid * 7 + ++seq * 13) % 900000)).padStart(6, '0')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('authentication service (/auth) against the identity provider stand-in', () => {
  let h: Harness;
  let idp: StandIn;
  let dir: string;

  /** A request whose answer must carry `requestId`, equal to the X-Request-Id header. */
  async function call<T = any>(method: string, p: string, opts: RequestOpts = {}): Promise<Reply<T>> {
    const r = await h.request<T>(method, p, opts);
    if (r.status !== 204) {
      expect((r.body as { requestId?: string }).requestId).toBe(r.headers.get('x-request-id'));
      expect((r.body as { requestId?: string }).requestId).toMatch(/\S/);
    }
    return r;
  }

  function expectError(r: Reply<any>, status: number, code: string, reason?: string) {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(Object.keys(r.body).sort()).toEqual(errorKeys);
    expect(r.body.code).toBe(code);
    expect(typeof r.body.message).toBe('string');
    expect(r.body.message.length).toBeGreaterThan(0);
    expect(typeof r.body.details).toBe('object');
    if (reason) expect(r.body.details.reason).toBe(reason);
    expect(JSON.stringify(r.body)).not.toMatch(/eyJ/); // never a token in an error
  }

  const signUp = (companyName: string, email: string, password = 'a-good-password') => call('POST', '/auth/client/sign-up', { body: { companyName, email, password } });
  const signIn = (email: string, password = 'a-good-password') => call('POST', '/auth/client/sign-in', { body: { email, password } });
  const session = (token: string) => call('GET', '/auth/session', { token });

  /** A provider account made directly at the provider (as anyone holding the public API key can). */
  async function providerAccount(email: string, password: string) {
    const res = await fetch(`${idp.url}/v1/accounts:signUp?key=${idp.apiKey}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password, returnSecureToken: true }) });
    expect(res.status).toBe(200);
  }

  /** A team member added through /api by the company's owner. */
  async function member(c: Company, body: Record<string, unknown>) {
    const r = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { full_name: 'Shop Floor', role: 'staff', email: address('m'), ...body } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { id: string; email: string; phone: string | null };
  }

  beforeAll(async () => {
    idp = await startIdp();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-idp-'));
    h = await startHarness({ ...(idp.config(dir) as Partial<RawConfig>), FOOTFALL_IDP_CODE_MAX_ATTEMPTS: 3 });
  });
  afterAll(async () => {
    await h?.close();
    await idp?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('client sign-up and sign-in', () => {
    it('sign-up makes the provider account, company, business and owner; 201 with the client envelope; sign-in returns the same tenant and business', async () => {
      const email = address('owner');
      const up = await signUp('Chai Point Express', email.toUpperCase());
      expect(up.status).toBe(201);
      expect(Object.keys(up.body).sort()).toEqual(clientKeys);
      expect(up.body.sessionToken).toMatch(jwtRe);
      expect(up.body.refreshToken).toMatch(/^AMf-/);
      expect(up.body.expiresInSeconds).toBe(3600);
      expect(up.body.user).toEqual({ id: expect.any(String), email, displayName: email.split('@')[0], phone: null });
      expect(up.body.tenant).toEqual({ tenantId: expect.any(String), tenantName: 'Chai Point Express' });
      expect(up.body.business).toEqual({ businessId: expect.any(String), businessName: 'Chai Point Express' });
      const account = idp.byEmail(email)!;
      expect(account).toBeDefined();

      // Head office sees the company, its slug derived from the name, and the owner in its team.
      const companies = await h.request('GET', '/api/admin/clients', { token: await h.adminToken() });
      expect(companies.body.find((c: { id: string }) => c.id === up.body.tenant.tenantId)).toMatchObject({ name: 'Chai Point Express', slug: 'chai-point-express', users: 1, active: true });

      const inn = await signIn(email);
      expect(inn.status).toBe(200);
      expect(Object.keys(inn.body).sort()).toEqual(clientKeys);
      expect(inn.body).toMatchObject({ expiresInSeconds: 3600, user: up.body.user, tenant: up.body.tenant, business: up.body.business });
      expect(inn.body.sessionToken).toMatch(jwtRe);
      expect(inn.body.refreshToken).not.toBe(up.body.refreshToken);

      // The owner has no password usable at /api: the provider holds it (docs/auth-service.md).
      const api = await h.request('POST', '/api/auth/login', { body: { email, password: 'a-good-password' } });
      expect(api.status).toBe(401);
      expect(api.body.error).toBe('bad_credentials');
    });

    it('a second company with the same name gets its own slug (-2)', async () => {
      const a = await signUp('Twin Stores', address('twin'));
      const b = await signUp('Twin Stores', address('twin'));
      expect([a.status, b.status]).toEqual([201, 201]);
      const list = (await h.request('GET', '/api/admin/clients', { token: await h.adminToken() })).body as { id: string; slug: string }[];
      expect(list.find((c) => c.id === b.body.tenant.tenantId)!.slug).toMatch(/^twin-stores-\d+$/);
    });

    it('wrong password and unknown address: 401 UNAUTHENTICATED, no tokens', async () => {
      const email = address('wrong');
      expect((await signUp('Wrong Pw Ltd', email)).status).toBe(201);
      for (const r of [await signIn(email, 'not-the-password'), await signIn(address('nobody'))]) {
        expectError(r, 401, 'UNAUTHENTICATED', 'invalid_credentials');
        expect(r.body.details.providerCode).toBe('INVALID_LOGIN_CREDENTIALS');
      }
      // A project without email enumeration protection tells the two apart (EMAIL_NOT_FOUND, INVALID_PASSWORD);
      // the answers here must not.
      idp.enumerationProtection = false;
      try {
        const wrong = await signIn(email, 'not-the-password');
        const unknown = await signIn(address('nobody'));
        expect(idp.calls.slice(-2).map((c) => c.path)).toEqual(['/v1/accounts:signInWithPassword', '/v1/accounts:signInWithPassword']);
        for (const r of [wrong, unknown]) expectError(r, 401, 'UNAUTHENTICATED', 'invalid_credentials');
        expect(wrong.body).toEqual({ ...unknown.body, requestId: wrong.body.requestId });
        expect(wrong.body.details.providerCode).toBe('INVALID_LOGIN_CREDENTIALS');
      } finally {
        idp.enumerationProtection = true;
      }
    });

    it('provider down: 502 AUTH_PROVIDER_ERROR; works again when it is back', async () => {
      const email = address('down');
      expect((await signUp('Down Time Co', email)).status).toBe(201);
      idp.down = true;
      try {
        expectError(await signIn(email), 502, 'AUTH_PROVIDER_ERROR', 'provider_unavailable');
        expectError(await signUp('Never Made', address('down2')), 502, 'AUTH_PROVIDER_ERROR', 'provider_unavailable');
      } finally {
        idp.down = false;
      }
      expect((await signIn(email)).status).toBe(200);
    });

    it('a member whose provider account has a verified email is linked; deactivated (via /api/team) -> 403 FORBIDDEN without tokens', async () => {
      const c = await h.company('Verified Link Mart');
      const m = await member(c, { role: 'manager' });
      await providerAccount(m.email, 'member-password');
      // Unverified: anyone could have made that provider account, so it is not linked.
      const unverified = await signIn(m.email, 'member-password');
      expectError(unverified, 403, 'FORBIDDEN', 'no_account');
      idp.verifyEmail(m.email);
      const ok = await signIn(m.email, 'member-password');
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ user: { id: m.id, email: m.email, displayName: 'Shop Floor', phone: null }, tenant: { tenantId: c.id, tenantName: 'Verified Link Mart' } });
      // A company made before the service gets its business on first use, the same one every time.
      const again = await signIn(m.email, 'member-password');
      expect(again.body.business).toEqual(ok.body.business);

      const off = await h.request('PATCH', `/api/team/${m.id}`, { token: c.ownerToken, body: { active: false } });
      expect(off.status).toBe(200);
      const refused = await signIn(m.email, 'member-password');
      expectError(refused, 403, 'FORBIDDEN', 'member_inactive');
      expect(refused.body).not.toHaveProperty('sessionToken');
      // The token issued before is still a valid provider token, but the session says not allowed.
      const s = await session(ok.body.sessionToken);
      expect(s.status).toBe(200);
      expect(s.body).toMatchObject({ allowed: false, reason: 'member_inactive', role: null, tenant: null, business: null, user: null, staff: null });
    });

    it('suspended company (via /api/admin) -> 403 FORBIDDEN at sign-in; the session says not allowed', async () => {
      const email = address('susp');
      const up = await signUp('Suspended Goods', email);
      const suspend = await h.request('PATCH', `/api/admin/clients/${up.body.tenant.tenantId}`, { token: await h.adminToken(), body: { active: false } });
      expect(suspend.status).toBe(200);
      expectError(await signIn(email), 403, 'FORBIDDEN', 'company_suspended');
      expect((await session(up.body.sessionToken)).body).toMatchObject({ allowed: false, reason: 'company_suspended', kind: 'client' });
      await h.request('PATCH', `/api/admin/clients/${up.body.tenant.tenantId}`, { token: await h.adminToken(), body: { active: true } });
      expect((await signIn(email)).status).toBe(200);
    });

    it('deleting a company deletes its people\'s provider accounts first; a provider failure stops the deletion with nothing deleted', async () => {
      const admin = await h.adminToken();
      const email = address('gone');
      const up = await signUp('Closing Down Ltd', email);
      expect(up.status).toBe(201);
      const uid = idp.byEmail(email)!.localId;
      const companyId = up.body.tenant.tenantId as string;
      const slug = ((await h.request('GET', '/api/admin/clients', { token: admin })).body as { id: string; slug: string }[]).find((c) => c.id === companyId)!.slug;
      expect((await h.request('PATCH', `/api/admin/clients/${companyId}`, { token: admin, body: { active: false } })).status).toBe(200);

      idp.down = true;
      let failed;
      try {
        failed = await h.request('DELETE', `/api/admin/clients/${companyId}`, { token: admin, body: { confirm: slug } });
      } finally {
        idp.down = false;
      }
      expect(failed.status).toBe(502);
      expect(failed.body.error).toBe('identity_provider_error');
      expect(idp.accounts.has(uid)).toBe(true);
      expect(((await h.request('GET', '/api/admin/clients', { token: admin })).body as { id: string }[]).some((c) => c.id === companyId)).toBe(true);

      const deleted = await h.request('DELETE', `/api/admin/clients/${companyId}`, { token: admin, body: { confirm: slug } });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      expect(idp.accounts.has(uid)).toBe(false);
      const batch = idp.calls.filter((c) => c.path.endsWith('/accounts:batchDelete'));
      expect(batch.at(-1)?.body).toEqual({ localIds: [uid], force: true });
      expect(batch.at(-1)?.authorization).toMatch(/^Bearer /);
      expectError(await signIn(email), 401, 'UNAUTHENTICATED');
    });

    it('the platform admin is refused even with a verified provider account', async () => {
      await providerAccount(h.admin.email, 'admin-provider-pw');
      idp.verifyEmail(h.admin.email);
      expectError(await signIn(h.admin.email, 'admin-provider-pw'), 403, 'FORBIDDEN', 'platform_admin');
    });

    it('sign-up rolls back: when our transaction fails, the provider account is deleted', async () => {
      const email = address('race');
      const other = await h.company('Race Winner');
      const before = (await h.request('GET', '/api/admin/clients', { token: await h.adminToken() })).body.length;
      // While the provider makes the account, the same address gets an account here (another company adds it).
      idp.beforeSignUpReply = async () => {
        const r = await h.request('POST', '/api/team/members', { token: other.ownerToken, body: { email, full_name: 'Quick' } });
        expect(r.status).toBe(201);
      };
      let r;
      try {
        r = await signUp('Race Loser', email);
      } finally {
        idp.beforeSignUpReply = undefined;
      }
      expectError(r, 409, 'VALIDATION_ERROR', 'email_taken');
      expect(r.body.details.fields).toEqual({ email: 'already has an account' });
      expect(idp.byEmail(email)).toBeUndefined();
      expect(idp.calls.filter((c) => c.path === '/v1/accounts:delete').length).toBeGreaterThan(0);
      expect((await h.request('GET', '/api/admin/clients', { token: await h.adminToken() })).body.length).toBe(before);
    });

    it('the provider made the account but its answer was lost: a retry with the same password finishes the sign-up; another password is 409', async () => {
      const email = address('lost');
      idp.beforeSignUpReply = async () => 'drop';
      let lost;
      try {
        lost = await signUp('Lost Reply Ltd', email);
      } finally {
        idp.beforeSignUpReply = undefined;
      }
      expectError(lost, 502, 'AUTH_PROVIDER_ERROR', 'provider_unavailable');
      const account = idp.byEmail(email)!;
      expect(account).toBeDefined();
      expectError(await signUp('Lost Reply Ltd', email, 'someone-elses-guess'), 409, 'VALIDATION_ERROR', 'email_taken');
      const retry = await signUp('Lost Reply Ltd', email);
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(Object.keys(retry.body).sort()).toEqual(clientKeys);
      expect(retry.body.tenant.tenantName).toBe('Lost Reply Ltd');
      expect(idp.byEmail(email)!.localId).toBe(account.localId);
      expect((await signIn(email)).body.user).toEqual(retry.body.user);
      // Done once: the account is ours now, a further sign-up is 409 and makes nothing.
      expectError(await signUp('Lost Reply Ltd', email), 409, 'VALIDATION_ERROR', 'email_taken');
    });

    it('an address that already has an account here: 409 VALIDATION_ERROR, and nothing is made at the provider', async () => {
      const c = await h.company('Existing Co');
      const calls = idp.calls.length;
      const r = await signUp('Copycat', c.ownerEmail);
      expectError(r, 409, 'VALIDATION_ERROR', 'email_taken');
      expect(idp.calls.length).toBe(calls);
      expect(idp.byEmail(c.ownerEmail)).toBeUndefined();
      // Taken at the provider only: the provider's EMAIL_EXISTS, the same answer.
      const email = address('taken');
      await providerAccount(email, 'someone-else');
      const r2 = await signUp('Second Copy', email);
      expectError(r2, 409, 'VALIDATION_ERROR', 'email_taken');
      expect(r2.body.details.providerCode).toBe('EMAIL_EXISTS');
    });

    it('validation: missing fields, a bad email, a short password -> 400 VALIDATION_ERROR with details.fields', async () => {
      const missing = await call('POST', '/auth/client/sign-up', { body: {} });
      expectError(missing, 400, 'VALIDATION_ERROR', 'invalid_body');
      expect(missing.body.details.fields).toEqual({ companyName: 'is required', email: 'is required', password: 'is required' });
      const bad = await call('POST', '/auth/client/sign-in', { body: { email: 'not-an-address', password: 'x' } });
      expectError(bad, 400, 'VALIDATION_ERROR');
      expect(bad.body.details.fields).toEqual({ email: 'must be an email address' });
      const short = await signUp('Short Pw', address('short'), 'abc');
      expectError(short, 400, 'VALIDATION_ERROR');
      expect(short.body.details.fields).toEqual({ password: 'must be at least 8 characters' });
      const types = await call('POST', '/auth/client/sign-in', { body: { email: 5, password: true } });
      expect(types.body.details.fields).toEqual({ email: 'must be an email address', password: 'must be a string' });
      const notObject = await call('POST', '/auth/client/sign-in', { raw: '[1,2]' });
      expectError(notObject, 400, 'VALIDATION_ERROR');
      expect(notObject.body.details.fields).toEqual({ body: 'The request body must be a JSON object.' });
    });

    it('ten wrong passwords for an address, then 429 (UNAUTHENTICATED, too_many_attempts) without asking the provider', async () => {
      const email = address('limit');
      expect((await signUp('Limit Co', email)).status).toBe(201);
      for (let i = 0; i < 10; i++) expect((await signIn(email, 'wrong-password')).status).toBe(401);
      const calls = idp.calls.length;
      const r = await signIn(email);
      expectError(r, 429, 'UNAUTHENTICATED', 'too_many_attempts');
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(r.body.details.retryAfterSeconds).toBeGreaterThan(0);
      expect(idp.calls.length).toBe(calls);
    });
  });

  describe('staff phone sign-in', () => {
    let c: Company;
    beforeAll(async () => {
      c = await h.company('Phone Floor Stores');
    });

    it('device path: the ID token of a phone sign-in, for a member created with phone via /api/team/members', async () => {
      const number = phone();
      const spaced = `${number.slice(0, 3)} ${number.slice(3, 7)} ${number.slice(7)}`;
      const m = await member(c, { phone: spaced });
      expect(m.phone).toBe(number);
      const { idToken, account } = await idp.phoneSignIn(number);
      const r = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(staffKeys);
      expect(r.body).toMatchObject({ sessionToken: idToken, refreshToken: null, user: { id: m.id, phone: number }, staff: { staffId: m.id }, requiresProfileSetup: true });
      expect(r.body.expiresInSeconds).toBeGreaterThan(3500);
      expect(r.body.expiresInSeconds).toBeLessThanOrEqual(3600);
      // Second time: the member has signed in by phone before.
      const again = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: await idp.idToken(account) } });
      expect(again.body.requiresProfileSetup).toBe(false);
      // Signing in counts for the team list.
      const team = await h.request('GET', '/api/team', { token: c.ownerToken });
      expect(team.body.find((x: { id: string }) => x.id === m.id).last_login_at).not.toBe('');
    });

    it('start without an attestation token: CLIENT_IDP_SDK, no text message', async () => {
      const number = phone();
      const calls = idp.calls.length;
      const r = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number } });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['mode', 'nextStep', 'phoneNumber', 'provider', 'requestId']);
      expect(r.body).toMatchObject({ mode: 'CLIENT_IDP_SDK', provider: 'firebase', phoneNumber: number });
      expect(r.body.nextStep).toMatch(/\/auth\/staff\/phone\/verify/);
      expect(idp.calls.length).toBe(calls);
    });

    it('SMS path: start with a recaptchaToken -> sessionInfo; a wrong code is 401; the recorded code signs in', async () => {
      const number = phone();
      const m = await member(c, { phone: number });
      const start = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, recaptchaToken: 'recaptcha-from-the-app' } });
      expect(start.status, JSON.stringify(start.body)).toBe(200);
      expect(Object.keys(start.body).sort()).toEqual(['mode', 'phoneNumber', 'requestId', 'sessionInfo']);
      expect(start.body).toMatchObject({ mode: 'IDENTITY_PROVIDER_SMS', phoneNumber: number });
      const sent = idp.sms.find((x) => x.phoneNumber === number)!;
      expect(sent.sessionInfo).toBe(start.body.sessionInfo);
      expect(idp.calls.find((x) => x.path === '/v1/accounts:sendVerificationCode' && x.body.phoneNumber === number)!.body.recaptchaToken).toBe('recaptcha-from-the-app');

      const wrongCode = sent.code === '000000' ? '111111' : '000000';
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: sent.sessionInfo, code: wrongCode } }), 401, 'UNAUTHENTICATED', 'invalid_code');
      const r = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: sent.sessionInfo, code: sent.code } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(staffKeys);
      expect(r.body).toMatchObject({ refreshToken: expect.stringMatching(/^AMf-/), expiresInSeconds: 3600, user: { id: m.id, phone: number }, staff: { staffId: m.id }, requiresProfileSetup: true });
      expect(r.body.sessionToken).toMatch(jwtRe);
      // The code is spent.
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: sent.sessionInfo, code: sent.code } }), 401, 'UNAUTHENTICATED', 'session_expired');
    });

    it('SMS path: a Play Integrity token works too; a refused attestation is 401', async () => {
      const number = phone();
      await member(c, { phone: number });
      const ok = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, playIntegrityToken: 'integrity' } });
      expect(ok.body.mode).toBe('IDENTITY_PROVIDER_SMS');
      expectError(await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, recaptchaToken: 'refused' } }), 401, 'UNAUTHENTICATED', 'app_verification_failed');
    });

    it('three wrong codes for one sessionInfo, then 429 without asking the provider', async () => {
      const number = phone();
      await member(c, { phone: number });
      const start = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, recaptchaToken: 't' } });
      const sent = idp.sms.find((x) => x.sessionInfo === start.body.sessionInfo)!;
      const wrong = sent.code === '000000' ? '111111' : '000000';
      for (let i = 0; i < 3; i++) expect((await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: sent.sessionInfo, code: wrong } })).status).toBe(401);
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: sent.sessionInfo, code: sent.code } }), 429, 'UNAUTHENTICATED', 'too_many_attempts');
    });

    it('unknown phone: verify is 403 FORBIDDEN; SMS start is 403 and sends nothing', async () => {
      const number = phone();
      const { idToken } = await idp.phoneSignIn(number);
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } }), 403, 'FORBIDDEN', 'unknown_phone');
      const sms = idp.sms.length;
      expectError(await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, recaptchaToken: 't' } }), 403, 'FORBIDDEN', 'unknown_phone');
      expect(idp.sms.length).toBe(sms);
    });

    it('a deactivated member, or a phone shared by members of two companies, is 403 FORBIDDEN', async () => {
      const number = phone();
      const m = await member(c, { phone: number });
      await h.request('PATCH', `/api/team/${m.id}`, { token: c.ownerToken, body: { active: false } });
      const { idToken } = await idp.phoneSignIn(number);
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } }), 403, 'FORBIDDEN', 'member_inactive');
      const shared = phone();
      await member(c, { phone: shared });
      await member(await h.company('Other Floor'), { phone: shared });
      const t = await idp.phoneSignIn(shared);
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: t.idToken } }), 403, 'FORBIDDEN', 'ambiguous_phone');
      // SMS start proves nothing about the caller: it says no more than "not a member you can sign in as".
      const sms = idp.sms.length;
      const starts = [await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, recaptchaToken: 't' } }), await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: shared, recaptchaToken: 't' } })];
      for (const r of starts) expectError(r, 403, 'FORBIDDEN', 'unknown_phone');
      expect(starts[0]!.body.message).toBe(starts[1]!.body.message);
      expect(idp.sms.length).toBe(sms);
    });

    it('a phone link is not a client sign-in: after the member\'s number changes, the phone account given a password gets no access', async () => {
      // The member signs in by phone once (the provider account of that number is linked, method phone).
      const number = phone();
      const m = await member(c, { phone: number });
      const { idToken, account } = await idp.phoneSignIn(number);
      expect((await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } })).status).toBe(200);
      // The member gets a new number; the old one goes to someone else, who holds its provider account and links an
      // email and password to it (any account holder can, with the public API key).
      expect((await h.request('PATCH', `/api/team/${m.id}`, { token: c.ownerToken, body: { phone: phone() } })).status).toBe(200);
      const email = address('recycled');
      account.email = email;
      account.password = 'recycled-number-pw';
      expectError(await signIn(email, 'recycled-number-pw'), 403, 'FORBIDDEN', 'no_account');
      const passwordToken = await idp.idToken(account, { signInProvider: 'password' });
      expect((await session(passwordToken)).body).toMatchObject({ allowed: false, reason: 'no_account', user: null, tenant: null });
      // The phone sign-in stopped matching at once, as documented.
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: await idp.idToken(account, { signInProvider: 'phone' }) } }), 403, 'FORBIDDEN', 'unknown_phone');
    });

    it('a phone sign-in of an account that signed up keeps its client link: the email sign-in still works', async () => {
      const email = address('bothways');
      const up = await signUp('Both Ways Ltd', email);
      expect(up.status).toBe(201);
      // The owner gets an /api password and puts their own phone on their member record...
      const pw = await h.request('POST', `/api/admin/clients/${up.body.tenant.tenantId}/owner-password`, { token: await h.adminToken(), body: {} });
      expect(pw.status).toBe(200);
      const owner = await h.login(email, pw.body.password);
      const number = phone();
      expect((await h.request('PATCH', `/api/team/${up.body.user.id}`, { token: owner.access_token, body: { phone: number } })).status).toBe(200);
      // ...and links that phone to their provider account (SDK linkWithPhoneNumber), then signs in by phone.
      const account = idp.byEmail(email)!;
      account.phoneNumber = number;
      const verify = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: await idp.idToken(account, { signInProvider: 'phone' }) } });
      expect(verify.status, JSON.stringify(verify.body)).toBe(200);
      expect(verify.body).toMatchObject({ user: { id: up.body.user.id }, requiresProfileSetup: false });
      const back = await signIn(email);
      expect(back.status, JSON.stringify(back.body)).toBe(200);
      expect(back.body.user.id).toBe(up.body.user.id);
    });

    it('an email sign-in token is not a phone sign-in: 401', async () => {
      const up = await signUp('Email Only', address('emailonly'));
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: up.body.sessionToken } }), 401, 'UNAUTHENTICATED', 'not_a_phone_sign_in');
    });

    it('validation: bad phone, unknown mode, missing or mixed credentials -> 400 VALIDATION_ERROR with details.fields', async () => {
      for (const phoneNumber of ['07700900123', '+0447700900123', '+44 7700 900123', '+12', 447700900123]) {
        const r = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber } });
        expectError(r, 400, 'VALIDATION_ERROR');
        expect(Object.keys(r.body.details.fields)).toEqual(['phoneNumber']);
      }
      const cases: [Record<string, unknown>, string][] = [
        [{ mode: 'sign-up', idToken: 'x' }, 'mode'],
        [{ idToken: 'x' }, 'mode'],
        [{ mode: 'sign-in' }, 'idToken'],
        [{ mode: 'sign-in', idToken: 'x', sessionInfo: 's', code: '123456' }, 'idToken'],
        [{ mode: 'sign-in', sessionInfo: 's' }, 'code'],
        [{ mode: 'sign-in', code: '123456' }, 'sessionInfo'],
        [{ mode: 'sign-in', sessionInfo: 's', code: 'abc' }, 'code'],
      ];
      for (const [b, field] of cases) {
        const r = await call('POST', '/auth/staff/phone/verify', { body: b });
        expectError(r, 400, 'VALIDATION_ERROR');
        expect(Object.keys(r.body.details.fields), JSON.stringify(b)).toContain(field);
      }
    });
  });

  describe('tokens', () => {
    it('forged, expired, wrong-audience, wrong-issuer, keyless, future and alg-none tokens are 401 UNAUTHENTICATED everywhere', async () => {
      const number = phone();
      const c = await h.company('Token Checks');
      await member(c, { phone: number });
      const { account } = await idp.phoneSignIn(number);
      const t = Math.floor(Date.now() / 1000);
      const fetchesBefore = idp.jwksFetches;
      expect(fetchesBefore).toBeGreaterThanOrEqual(1);
      const bad: [string, string][] = [
        [await idp.idToken(account, { foreignKey: true }), 'token_invalid'],
        [await idp.idToken(account, { claims: { iat: t - 7200, exp: t - 3600 } }), 'token_expired'],
        [await idp.idToken(account, { claims: { aud: 'another-project' } }), 'token_invalid'],
        [await idp.idToken(account, { claims: { iss: 'https://securetoken.google.com/another-project' } }), 'token_invalid'],
        [await idp.idToken(account, { kid: 'unknown-key-id' }), 'token_invalid'],
        [await idp.idToken(account, { claims: { sub: '' } }), 'token_invalid'],
        [await idp.idToken(account, { claims: { auth_time: null } }), 'token_invalid'],
        [await idp.idToken(account, {}, t + 3600), 'token_invalid'],
        [await idp.idToken(account, { claims: { iat: t + 3600, exp: t + 7200 } }), 'token_invalid'],
        [`${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: account.localId, aud: idp.projectId })).toString('base64url')}.`, 'token_invalid'],
        ['not-a-jwt', 'token_invalid'],
      ];
      for (const [token, reason] of bad) {
        expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: token } }), 401, 'UNAUTHENTICATED', reason);
        expectError(await session(token), 401, 'UNAUTHENTICATED', reason);
        expectError(await call('POST', '/auth/sign-out', { token }), 401, 'UNAUTHENTICATED', reason);
      }
      expectError(await call('GET', '/auth/session'), 401, 'UNAUTHENTICATED', 'token_missing');
      // A good token still works. The keys came from the cache (Cache-Control max-age) for all of this: at most one
      // refetch, for the unknown kid (and only when the last fetch is 30 s old).
      expect((await session(await idp.idToken(account))).body.allowed).toBe(true);
      expect(idp.jwksFetches - fetchesBefore).toBeLessThanOrEqual(1);
    });
  });

  describe('provider keys', () => {
    it('are fetched once and kept for the Cache-Control max-age; a token verifies with them', async () => {
      const keys = new ProviderKeys(`${idp.url}/jwks`, 2000);
      const { account } = await idp.phoneSignIn(phone());
      const before = idp.jwksFetches;
      for (let i = 0; i < 5; i++) {
        const claims = await verifyIdToken(await idp.idToken(account), idp.projectId, keys);
        expect(claims).toMatchObject({ uid: account.localId, phone: account.phoneNumber, signInProvider: 'phone', emailVerified: false });
      }
      expect(idp.jwksFetches - before).toBe(1);
    });
  });

  describe('provider keys: refetch limits', () => {
    it('an unknown kid refetches at most every 30 s, failed refetches included; without keys a failed fetch is retried at most every 5 s', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        const keys = new ProviderKeys(`${idp.url}/jwks`, 2000);
        const { account } = await idp.phoneSignIn(phone());
        const first = idp.jwksFetches;
        await verifyIdToken(await idp.idToken(account), idp.projectId, keys);
        expect(idp.jwksFetches - first).toBe(1);
        vi.setSystemTime(Date.now() + 31_000);
        idp.jwksFailing = true;
        const unknown = await idp.idToken(account, { kid: 'not-a-published-key' });
        for (let i = 0; i < 5; i++) await expect(verifyIdToken(unknown, idp.projectId, keys)).rejects.toMatchObject({ reason: 'token_invalid' });
        expect(idp.jwksFetches - first).toBe(2); // one refetch (it failed); the other four waited
        // The keys in hand still verify good tokens meanwhile.
        await verifyIdToken(await idp.idToken(account), idp.projectId, keys);
        expect(idp.jwksFetches - first).toBe(2);

        // No keys yet and the URL failing: one fetch per 5 s, not one per request.
        const cold = new ProviderKeys(`${idp.url}/jwks`, 2000);
        const good = await idp.idToken(account);
        const before = idp.jwksFetches;
        for (let i = 0; i < 4; i++) await expect(verifyIdToken(good, idp.projectId, cold)).rejects.toMatchObject({ kind: 'unavailable' });
        expect(idp.jwksFetches - before).toBe(1);
        vi.setSystemTime(Date.now() + 6_000);
        idp.jwksFailing = false;
        await verifyIdToken(good, idp.projectId, cold);
        expect(idp.jwksFetches - before).toBe(2);
      } finally {
        idp.jwksFailing = false;
        vi.useRealTimers();
      }
    });

    it('keys and provider calls need https; plain http only to a loopback address', async () => {
      const { account } = await idp.phoneSignIn(phone());
      const token = await idp.idToken(account);
      const keys = new ProviderKeys('http://192.0.2.10/jwks', 2000);
      await expect(verifyIdToken(token, idp.projectId, keys)).rejects.toMatchObject({ kind: 'unavailable', code: 'INSECURE_URL' });
      const provider = new IdentityProvider({ projectId: idp.projectId, apiKey: idp.apiKey, baseUrl: 'http://192.0.2.10', serviceAccountFile: path.join(dir, 'none.json'), timeoutMs: 2000 });
      await expect(provider.signInWithPassword('a@b.test', 'a-good-password')).rejects.toMatchObject({ kind: 'unavailable', code: 'INSECURE_URL' });
      for (const url of ['http://127.0.0.1:1/x', 'http://localhost:1/x', 'http://[::1]:1/x', 'https://identitytoolkit.googleapis.com/v1']) expect(() => assertSecureUrl(url)).not.toThrow();
      for (const url of ['http://192.0.2.10/x', 'http://example.com/x', 'ftp://127.0.0.1/x', 'http://127.0.0.1.example.com/x']) expect(() => assertSecureUrl(url), url).toThrow(ProviderError);
    });
  });

  describe('GET /auth/session', () => {
    it('owner (client sign-in): role, tenant, business, no staff context', async () => {
      const email = address('sess');
      const up = await signUp('Session Stores', email);
      const r = await session(up.body.sessionToken);
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(sessionKeys);
      expect(r.body).toMatchObject({
        allowed: true,
        reason: null,
        message: null,
        kind: 'client',
        role: 'owner',
        user: up.body.user,
        tenant: up.body.tenant,
        business: up.body.business,
        staff: null,
      });
      expect(r.body.expiresInSeconds).toBeGreaterThan(3500);
    });

    it('staff (phone sign-in): role staff, tenant, business and staffId', async () => {
      const c = await h.company('Session Floor');
      const number = phone();
      const m = await member(c, { phone: number, role: 'staff', full_name: 'Ravi Floor' });
      const { idToken } = await idp.phoneSignIn(number);
      const r = await session(idToken);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        allowed: true,
        kind: 'staff',
        role: 'staff',
        user: { id: m.id, email: m.email, displayName: 'Ravi Floor', phone: number },
        tenant: { tenantId: c.id, tenantName: 'Session Floor' },
        business: { businessId: expect.any(String), businessName: 'Session Floor' },
        staff: { staffId: m.id },
      });
    });

    it('a phone_number claim counts only in a phone sign-in (firebase.sign_in_provider "phone"), not in a token without it', async () => {
      const c = await h.company('Claim Floor');
      const number = phone();
      await member(c, { phone: number });
      const { account } = await idp.phoneSignIn(number);
      const noProvider = await idp.idToken(account, { claims: { firebase: null } });
      expect((await session(noProvider)).body).toMatchObject({ allowed: false, kind: 'client', reason: 'no_account', user: null });
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: noProvider } }), 401, 'UNAUTHENTICATED', 'not_a_phone_sign_in');
      expect((await session(await idp.idToken(account, { signInProvider: 'phone' }))).body).toMatchObject({ allowed: true, kind: 'staff' });
    });

    it('a provider account with no account here: allowed false, reason no_account', async () => {
      const email = address('stranger');
      await providerAccount(email, 'stranger-pw');
      const token = await idp.idToken(idp.byEmail(email)!);
      const r = await session(token);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ allowed: false, reason: 'no_account', message: expect.any(String), role: null, user: null, tenant: null, business: null, staff: null });
    });
  });

  describe('sign-out', () => {
    it('client sign-out revokes at the provider (validSince) and here: the same token is refused, the refresh token too; a new sign-in works', async () => {
      const email = address('out');
      const up = await signUp('Sign Out Co', email);
      const token = up.body.sessionToken;
      const account = idp.byEmail(email)!;
      const r = await call('POST', '/auth/client/sign-out', { token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ signedOut: true, requestId: expect.any(String) });
      const revocation = idp.revocations.find((x) => x.localId === account.localId)!;
      expect(revocation.validSince).toBeGreaterThan(Math.floor(Date.now() / 1000) - 5);
      const update = idp.calls.find((x) => x.path === `/v1/projects/${idp.projectId}/accounts:update`)!;
      expect(update.authorization).toMatch(/^Bearer ya29\./);
      expectError(await session(token), 401, 'UNAUTHENTICATED', 'token_revoked');
      expectError(await call('POST', '/auth/client/sign-out', { token }), 401, 'UNAUTHENTICATED', 'token_revoked');
      // The provider refuses the refresh token of the signed-out session.
      const refresh = await fetch(`${idp.url}/v1/token?key=${idp.apiKey}`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: up.body.refreshToken }) });
      expect(refresh.status).toBe(400);
      expect(((await refresh.json()) as any).error.message).toBe('TOKEN_EXPIRED');
      // Tokens authenticated from the next second on are fine.
      await sleep(revocation.validSince * 1000 - Date.now() + 20);
      const back = await signIn(email);
      expect(back.status).toBe(200);
      expect((await session(back.body.sessionToken)).body.allowed).toBe(true);
    });

    it('staff sign-out: a staff token at /auth/client/sign-out and a client token at /auth/staff/sign-out are 403; /auth/sign-out takes either', async () => {
      const c = await h.company('Out Floor');
      const number = phone();
      await member(c, { phone: number });
      const { idToken, account } = await idp.phoneSignIn(number);
      const up = await signUp('Out Client', address('outc'));
      expectError(await call('POST', '/auth/client/sign-out', { token: idToken }), 403, 'FORBIDDEN', 'wrong_sign_out_route');
      expectError(await call('POST', '/auth/staff/sign-out', { token: up.body.sessionToken }), 403, 'FORBIDDEN', 'wrong_sign_out_route');
      expect(idp.revocations.some((x) => x.localId === account.localId)).toBe(false);
      expect((await call('POST', '/auth/staff/sign-out', { token: idToken })).body.signedOut).toBe(true);
      expect(idp.revocations.some((x) => x.localId === account.localId)).toBe(true);
      expectError(await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } }), 401, 'UNAUTHENTICATED', 'token_revoked');
      expect((await call('POST', '/auth/sign-out', { token: up.body.sessionToken })).body.signedOut).toBe(true);
      expectError(await session(up.body.sessionToken), 401, 'UNAUTHENTICATED', 'token_revoked');
    });

    it('an access token the provider stopped accepting is replaced at once, not kept until it expires', async () => {
      const first = await signUp('Token Swap', address('swap'));
      expect((await call('POST', '/auth/sign-out', { token: first.body.sessionToken })).status).toBe(200);
      idp.revokeAccessTokens();
      const second = await signUp('Token Swap Two', address('swap'));
      const r = await call('POST', '/auth/sign-out', { token: second.body.sessionToken });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(idp.revocations.some((x) => x.localId === idp.byEmail(second.body.user.email)!.localId)).toBe(true);
    });

    it('a provider refusal in prose is reported by its status word, not by a letter of the prose', async () => {
      const up = await signUp('Prose Refusal', address('prose'));
      idp.revokeAccessTokens();
      const realFetch = globalThis.fetch;
      // Every new access token is refused too (say the service account lost its role): the refusal stays a 502.
      globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
        if (String(input).endsWith('/token')) return new Response(JSON.stringify({ access_token: 'ya29.not-accepted', expires_in: 3599 }), { status: 200, headers: { 'Content-Type': 'application/json' } });
        return realFetch(input, init);
      }) as typeof fetch;
      let r;
      try {
        r = await call('POST', '/auth/sign-out', { token: up.body.sessionToken });
      } finally {
        globalThis.fetch = realFetch;
      }
      expectError(r, 502, 'AUTH_PROVIDER_ERROR', 'provider_refused');
      expect(r.body.details.providerCode).toBe('UNAUTHENTICATED');
    });

    it('provider down during sign-out: 502, nothing recorded here (the same token can sign out later)', async () => {
      const up = await signUp('Out Down', address('outd'));
      idp.down = true;
      try {
        expectError(await call('POST', '/auth/sign-out', { token: up.body.sessionToken }), 502, 'AUTH_PROVIDER_ERROR', 'provider_unavailable');
      } finally {
        idp.down = false;
      }
      expect((await session(up.body.sessionToken)).body.allowed).toBe(true);
      expect((await call('POST', '/auth/sign-out', { token: up.body.sessionToken })).status).toBe(200);
    });
  });

  describe('envelope', () => {
    it('unknown /auth paths, wrong methods and malformed JSON answer the /auth envelope; /api keeps its own', async () => {
      expectError(await call('GET', '/auth/nothing-here'), 404, 'NOT_FOUND', 'not_found');
      expectError(await call('POST', '/auth'), 404, 'NOT_FOUND');
      const method = await call('GET', '/auth/client/sign-in');
      expectError(method, 405, 'METHOD_NOT_ALLOWED', 'method_not_allowed');
      expect(method.headers.get('allow')).toMatch(/POST/);
      expectError(await call('POST', '/auth/client/sign-in', { raw: '{"email": ' }), 400, 'VALIDATION_ERROR', 'malformed_json');
      expectError(await call('POST', '/auth/staff/phone/verify', { raw: 'nope' }), 400, 'VALIDATION_ERROR', 'malformed_json');
      const big = await call('POST', '/auth/client/sign-up', { raw: JSON.stringify({ companyName: 'x'.repeat(2 * 1024 * 1024) }) });
      expectError(big, 413, 'VALIDATION_ERROR', 'payload_too_large');
      const api = await h.request('GET', '/api/nothing-here');
      expect(api.status).toBe(404);
      expect(api.body).toEqual({ error: 'not_found', message: 'There is no GET /api/nothing-here.' });
      const apiJson = await h.request('POST', '/api/auth/login', { raw: '{"email": ' });
      expect(apiJson.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('not valid JSON') });
      // A path that only starts with "auth" is not the service.
      expect((await h.request('GET', '/authx')).body).toEqual({ error: 'not_found', message: 'There is no GET /authx.' });
    });

    it('requestId is the X-Request-Id the caller sent, on successes and errors', async () => {
      const ok = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: phone() }, headers: { 'X-Request-Id': 'app-req-42' } });
      expect(ok.body.requestId).toBe('app-req-42');
      const err = await call('POST', '/auth/client/sign-in', { body: {}, headers: { 'X-Request-Id': 'app-req-43' } });
      expect(err.body.requestId).toBe('app-req-43');
    });
  });
});

describe('authentication service limits on a small budget (3 per IP)', () => {
  let h: Harness;
  let idp: StandIn;
  let dir: string;
  beforeAll(async () => {
    idp = await startIdp();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-idp-'));
    h = await startHarness({ ...(idp.config(dir) as Partial<RawConfig>), FOOTFALL_LOGIN_MAX_FAILURES_IP: 3 });
  });
  afterAll(async () => {
    await h?.close();
    await idp?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sign-up counts every attempt per IP: the "address taken" answer cannot be used to list accounts', async () => {
    const c = await h.company('Listed Co');
    const up = (email: string) => h.request('POST', '/auth/client/sign-up', { body: { companyName: 'Probe', email, password: 'a-good-password' } });
    const answers = [await up(c.ownerEmail), await up(h.admin.email), await up(`new-${unique()}@auth-service.test`)];
    expect(answers.map((r) => r.status)).toEqual([409, 409, 201]);
    const calls = idp.calls.length;
    const r = await up(c.ownerEmail);
    expect(r.status).toBe(429);
    expect(r.body).toMatchObject({ code: 'UNAUTHENTICATED', details: { reason: 'too_many_attempts' } });
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(idp.calls.length).toBe(calls);
  });
});

describe('authentication service with FOOTFALL_IDP=google and no Google project', () => {
  let h: Harness;
  const { log, lines } = capturedLog();
  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_IDP: 'google' }, { log });
  });
  afterAll(() => h.close());

  it('head office starts; every /auth route answers 503 AUTH_PROVIDER_ERROR not_configured, whatever the body', async () => {
    expect((await h.request('GET', '/healthz')).status).toBe(200);
    const routes: [string, string, RequestOpts][] = [
      ['POST', '/auth/client/sign-in', { body: { email: 'a@b.test', password: 'x' } }],
      ['POST', '/auth/client/sign-up', { body: {} }],
      ['POST', '/auth/client/sign-out', { token: 'x' }],
      ['POST', '/auth/staff/phone/start', { raw: '{bad json' }],
      ['POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken: 'x' } }],
      ['POST', '/auth/staff/sign-out', {}],
      ['POST', '/auth/sign-out', {}],
      ['GET', '/auth/session', {}],
    ];
    for (const [method, p, opts] of routes) {
      const r = await h.request(method, p, opts);
      expect(r.status, `${method} ${p}`).toBe(503);
      expect(r.body).toEqual({ code: 'AUTH_PROVIDER_ERROR', message: expect.stringContaining('not set up'), details: { reason: 'not_configured' }, requestId: r.headers.get('x-request-id') });
    }
    // /api is untouched.
    expect((await h.request('POST', '/api/auth/login', { body: { email: h.admin.email, password: h.admin.password } })).status).toBe(200);
    // Said once, as a warning, at start; no error (nor stack) per request.
    expect(lines.filter((l) => l.reason === 'not_configured').map((l) => l.level)).toEqual([40]);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });

  it('configuration: project, key and service account come all three or none', () => {
    const base = { FOOTFALL_IDP_PROJECT_ID: 'footfall-x', FOOTFALL_IDP_API_KEY: 'k', FOOTFALL_IDP_SERVICE_ACCOUNT_FILE: '/etc/footfall/sa.json' };
    expect(loadConfig(base)).toMatchObject({ ...base, FOOTFALL_IDP_BASE_URL: 'https://identitytoolkit.googleapis.com', FOOTFALL_IDP_TIMEOUT_MS: 10_000 });
    expect(loadConfig({}).FOOTFALL_IDP_JWKS_URL).toBe('https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com');
    for (const env of [{ FOOTFALL_IDP_PROJECT_ID: 'footfall-x' }, { ...base, FOOTFALL_IDP_SERVICE_ACCOUNT_FILE: '' }]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    }
    expect(() => loadConfig({ ...base, FOOTFALL_IDP_BASE_URL: 'ftp://x' })).toThrow(/FOOTFALL_IDP_BASE_URL/);
    expect(loadConfig({ ...base, FOOTFALL_IDP_BASE_URL: 'http://127.0.0.1:9099/' }).FOOTFALL_IDP_BASE_URL).toBe('http://127.0.0.1:9099');
    let message = '';
    try {
      loadConfig({ ...base, FOOTFALL_IDP_API_KEY: ' ' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/FOOTFALL_IDP_API_KEY/);
    expect(message).not.toMatch(/got " "/); // the key is never echoed
  });
});
