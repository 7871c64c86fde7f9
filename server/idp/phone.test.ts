import { PhoneAuthCredential, signInWithCredential, type AuthCredential } from 'firebase/auth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHarness, type Company, type Harness, type Reply, type RequestOpts } from '../../test/support/harness.js';
import { authCall, capturedLog, firebaseClient, jwtParts, type FirebaseClient } from '../../test/support/firebase-client.js';
import { responseChecker, type ResponseChecker } from '../../test/support/openapi-check.js';
import { startSmsGateway, type SmsGateway } from '../../test/support/sms-gateway.js';

/**
 * Staff phone sign-in against the embedded provider, codes delivered through FOOTFALL_SMS=http to a loopback
 * gateway: the device path (the SDK's provider calls, then verify with the ID token) and the SMS path
 * (recaptchaToken: head office exchanges sessionInfo and code itself), and the code's limits.
 */
let seq = 0;
const phone = () => `+447700${String(200000 + ((process.pid * 11 + ++seq * 17) % 700000)).padStart(6, '0')}`;

/** The SDK's phone credential from a verification id and code (PhoneAuthProvider.credential; its Node build has no PhoneAuthProvider). */
const phoneCredential = (verificationId: string, code: string) => (PhoneAuthCredential as unknown as { _fromVerification(v: string, c: string): AuthCredential })._fromVerification(verificationId, code);

describe('embedded identity provider: staff phone sign-in', () => {
  let h: Harness;
  let sms: SmsGateway;
  let company: Company;
  let checker: ResponseChecker;
  const { log, lines } = capturedLog();
  const clients: FirebaseClient[] = [];
  const sdk = () => {
    const c = firebaseClient(h.url, 'footfall');
    clients.push(c);
    return c;
  };

  const call = <T = any>(method: string, p: string, opts: RequestOpts = {}): Promise<Reply<T>> => authCall<T>(h, method, p, opts);
  const toolkit = async (op: string, body: unknown) => {
    const r = await fetch(`${h.url}/identitytoolkit.googleapis.com/v1/accounts:${op}?key=any`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const out = { status: r.status, headers: r.headers, body: (await r.json()) as any };
    // Not through the harness, so checked against the OpenAPI document here (server/idp/openapi.ts).
    checker.check({ method: 'POST', path: `/identitytoolkit.googleapis.com/v1/accounts:${op}`, status: r.status, contentType: r.headers.get('content-type') ?? '', body: out.body });
    return out;
  };
  async function staff(number = phone()) {
    const r = await h.request('POST', '/api/team/members', { token: company.ownerToken, body: { full_name: 'Floor Staff', role: 'staff', email: `staff-${process.pid}-${++seq}@phone.test`, phone: number } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { id: r.body.id as string, phone: number };
  }

  beforeAll(async () => {
    sms = await startSmsGateway();
    h = await startHarness({ FOOTFALL_SMS: 'http', FOOTFALL_SMS_URL: sms.url, FOOTFALL_SMS_TOKEN: sms.token }, { log });
    company = await h.company();
    checker = responseChecker((await h.request('GET', '/api/openapi.json')).body);
  });
  afterEach(() => vi.useRealTimers());
  afterAll(async () => {
    for (const c of clients) await c.close();
    await h?.close();
    await sms?.close();
  });

  it('device path: start says CLIENT_IDP_SDK; the SDK verifies the phone with the code from the gateway; verify returns the staff envelope with refreshToken null', async () => {
    const m = await staff();
    const start = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone } });
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ mode: 'CLIENT_IDP_SDK', provider: 'firebase', phoneNumber: m.phone });
    expect(start.body.sessionInfo).toBeUndefined();
    expect(sms.messages.filter((x) => x.to === m.phone)).toHaveLength(0); // start sent nothing

    // The app: sendVerificationCode (PhoneAuthProvider.verifyPhoneNumber), the code from the text, signInWithCredential.
    const sent = await toolkit('sendVerificationCode', { phoneNumber: m.phone, recaptchaToken: 'from-the-app' });
    expect(sent.status).toBe(200);
    const code = sms.codeFor(m.phone);
    expect(code).toMatch(/^\d{6}$/);
    expect(sms.messages.at(-1)!.authorization).toBe(`Bearer ${sms.token}`);
    const cred = await signInWithCredential(sdk().auth, phoneCredential(sent.body.sessionInfo, code));
    expect(cred.user.uid).toBe(m.id); // the team member's own account
    expect(cred.user.phoneNumber).toBe(m.phone);
    const idToken = await cred.user.getIdToken();
    expect(jwtParts(idToken).claims).toMatchObject({ phone_number: m.phone, firebase: { sign_in_provider: 'phone' } });

    const verify = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } });
    expect(verify.status, JSON.stringify(verify.body)).toBe(200);
    expect(verify.body).toEqual({
      sessionToken: idToken,
      refreshToken: null,
      expiresInSeconds: expect.any(Number),
      user: { id: m.id, phone: m.phone },
      staff: { staffId: m.id },
      requiresProfileSetup: true,
      requestId: verify.headers.get('x-request-id'),
    });
    const session = await call('GET', '/auth/session', { token: await cred.user.getIdToken(true) });
    expect(session.body).toMatchObject({ allowed: true, kind: 'staff', role: 'staff', staff: { staffId: m.id } });

    // The code was used up.
    const again = await toolkit('signInWithPhoneNumber', { sessionInfo: sent.body.sessionInfo, code });
    expect(again.body.error.message).toBe('INVALID_SESSION_INFO');

    // Staff sign-out revokes: the token and the SDK's refresh are refused.
    expect((await call('POST', '/auth/staff/sign-out', { token: idToken })).status).toBe(200);
    expect((await call('GET', '/auth/session', { token: idToken })).body.details.reason).toBe('token_revoked');
    await expect(cred.user.getIdToken(true)).rejects.toMatchObject({ code: 'auth/invalid-refresh-token' });
  });

  it('SMS path (recaptchaToken): start sends the code through the gateway; verify with sessionInfo and code returns the envelope with a refresh token', async () => {
    const m = await staff();
    const start = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone, recaptchaToken: 'token-from-the-app' } });
    expect(start.status, JSON.stringify(start.body)).toBe(200);
    expect(start.body).toEqual({ mode: 'IDENTITY_PROVIDER_SMS', phoneNumber: m.phone, sessionInfo: expect.any(String), requestId: start.headers.get('x-request-id') });
    const text = sms.messages.at(-1)!;
    expect(text.to).toBe(m.phone);
    expect(text.text).toMatch(/\b\d{6}\b/);
    const verify = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: start.body.sessionInfo, code: sms.codeFor(m.phone) } });
    expect(verify.status, JSON.stringify(verify.body)).toBe(200);
    expect(verify.body).toMatchObject({ refreshToken: expect.stringMatching(/^ff1\./), expiresInSeconds: 3600, user: { id: m.id, phone: m.phone }, staff: { staffId: m.id } });
    expect(jwtParts(verify.body.sessionToken).header).toMatchObject({ alg: 'RS256', kid: expect.any(String) });
    // Its refresh token works at Secure Token (what the app's SDK would do with it).
    const grant = await fetch(`${h.url}/securetoken.googleapis.com/v1/token?key=k`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(verify.body.refreshToken)}` });
    expect(await grant.json()).toMatchObject({ token_type: 'Bearer', expires_in: '3600', user_id: m.id, project_id: 'footfall', id_token: expect.any(String), access_token: expect.any(String), refresh_token: expect.stringMatching(/^ff1\./) });
  });

  it('wrong code, expired code (10 minutes), and the sixth attempt is refused even with the right code', async () => {
    const m = await staff();
    const start = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone, recaptchaToken: 't' } });
    const right = sms.codeFor(m.phone);
    const wrong = right === '000000' ? '111111' : '000000';
    const bad = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: start.body.sessionInfo, code: wrong } });
    expect(bad.status).toBe(401);
    expect(bad.body).toMatchObject({ code: 'UNAUTHENTICATED', details: { reason: 'invalid_code', providerCode: 'INVALID_CODE' } });

    // SDK path: five wrong codes, then the right one is refused (attempts are counted before comparing).
    const sent = await toolkit('sendVerificationCode', { phoneNumber: m.phone });
    const code = sms.codeFor(m.phone);
    const other = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) expect((await toolkit('signInWithPhoneNumber', { sessionInfo: sent.body.sessionInfo, code: other })).body.error.message).toBe('INVALID_CODE');
    const sixth = await toolkit('signInWithPhoneNumber', { sessionInfo: sent.body.sessionInfo, code });
    expect(sixth.status).toBe(400);
    expect(sixth.body.error.message).toMatch(/^TOO_MANY_ATTEMPTS_TRY_LATER/);
    await expect(signInWithCredential(sdk().auth, phoneCredential(sent.body.sessionInfo, code))).rejects.toMatchObject({ code: 'auth/too-many-requests' });

    // Expired: eleven minutes later the right code is refused.
    const late = await toolkit('sendVerificationCode', { phoneNumber: m.phone });
    const lateCode = sms.codeFor(m.phone);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 11 * 60_000);
    const expired = await toolkit('signInWithPhoneNumber', { sessionInfo: late.body.sessionInfo, code: lateCode });
    expect(expired.body.error.message).toBe('SESSION_EXPIRED');
    vi.useRealTimers();
    const expiredAuth = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: start.body.sessionInfo, code: right } });
    expect(expiredAuth.status).toBe(200); // the first one is still inside its 10 minutes (one wrong try so far)
  });

  it('send limits: the sixth code to one number within the window is refused (SDK path and /auth share the count)', async () => {
    const m = await staff();
    for (let i = 0; i < 3; i++) expect((await toolkit('sendVerificationCode', { phoneNumber: m.phone })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone, recaptchaToken: 't' } })).status).toBe(200);
    const sdkSixth = await toolkit('sendVerificationCode', { phoneNumber: m.phone });
    expect(sdkSixth.status).toBe(400);
    expect(sdkSixth.body.error.message).toMatch(/^TOO_MANY_ATTEMPTS_TRY_LATER/);
    expect(Number(sdkSixth.headers.get('retry-after'))).toBeGreaterThan(0);
    const authSixth = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone, recaptchaToken: 't' } });
    expect(authSixth.status).toBe(429);
    expect(authSixth.body).toMatchObject({ code: 'UNAUTHENTICATED', details: { reason: 'too_many_attempts' } });
    expect(sms.messages.filter((x) => x.to === m.phone)).toHaveLength(5);
  });

  it('a gateway that refuses: 502 AUTH_PROVIDER_ERROR with the reason on /auth, SMS_SEND_FAILED on the provider path', async () => {
    const m = await staff();
    sms.failFor.set(m.phone, 500);
    const r = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone, recaptchaToken: 't' } });
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ code: 'AUTH_PROVIDER_ERROR', details: { reason: 'sms_not_sent', gateway: 'the SMS gateway answered HTTP 500' } });
    const p = await toolkit('sendVerificationCode', { phoneNumber: m.phone });
    expect(p.status).toBe(502);
    expect(p.body.error.message).toBe('SMS_SEND_FAILED : the SMS gateway answered HTTP 500');
    expect(lines.some((l) => l.msg === 'SMS gateway refused the message' && l.gateway_status === 500 && l.level === 40)).toBe(true);
    sms.failFor.delete(m.phone);
    expect((await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: m.phone, recaptchaToken: 't' } })).status).toBe(200);
  });

  it('a number that is no active member gets no text, and the answer does not say so', async () => {
    const stranger = phone();
    const r = await toolkit('sendVerificationCode', { phoneNumber: stranger });
    expect(r.status).toBe(200);
    expect(r.body.sessionInfo).toEqual(expect.any(String));
    expect(sms.messages.filter((x) => x.to === stranger)).toHaveLength(0);
    const start = await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: stranger, recaptchaToken: 't' } });
    expect(start.status).toBe(403);
    expect(start.body.details.reason).toBe('unknown_phone');
  });
});

describe('embedded identity provider: FOOTFALL_SMS=log', () => {
  it('writes the text, code included, to the server log instead of sending it', async () => {
    const { log, lines } = capturedLog();
    const h = await startHarness({}, { log });
    try {
      const c = await h.company();
      const number = phone();
      const r = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { full_name: 'Log Staff', role: 'staff', email: `log-${process.pid}@phone.test`, phone: number } });
      expect(r.status).toBe(201);
      const start = await h.request('POST', '/auth/staff/phone/start', { body: { phoneNumber: number, recaptchaToken: 't' } });
      expect(start.status).toBe(200);
      const line = lines.find((l) => l.sms_to === number)!;
      expect(line.level).toBe(30);
      const code = /\b(\d{6})\b/.exec(String(line.sms_text))![1]!;
      const verify = await h.request('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', sessionInfo: start.body.sessionInfo, code } });
      expect(verify.status).toBe(200);
      expect(verify.body.user.id).toBe(r.body.id);
    } finally {
      await h.close();
    }
  });
});
