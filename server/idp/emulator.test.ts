import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PhoneAuthCredential, signInWithCredential, signInWithEmailAndPassword, type AuthCredential } from 'firebase/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type Reply, type RequestOpts } from '../../test/support/harness.js';
import { authCall, capturedLog, firebaseClient, jwtParts, type FirebaseClient } from '../../test/support/firebase-client.js';
import { closedPort } from '../../test/support/ports.js';

/**
 * The same client and staff flows against the official Firebase Auth emulator (firebase-tools), head office in
 * FOOTFALL_IDP=emulator mode. firebase-tools is not a dependency (about 5 minutes and 312 MB to install): set
 * FOOTFALL_TEST_FIREBASE_BIN to its `firebase` binary to run this (docs/auth-service.md, "Checking against the
 * Firebase Auth emulator"). The emulator runs on loopback with CI=1 and NO_UPDATE_NOTIFIER=1 so the CLI fetches
 * nothing from the internet.
 */
const bin = process.env.FOOTFALL_TEST_FIREBASE_BIN;
const skipReason = !bin ? 'FOOTFALL_TEST_FIREBASE_BIN is not set (path of a firebase-tools `firebase` binary)' : !fs.existsSync(bin) ? `FOOTFALL_TEST_FIREBASE_BIN=${bin} does not exist` : undefined;
if (skipReason) console.log(`skipping the Firebase Auth emulator tests: ${skipReason}`);

const PROJECT = 'demo-footfall';
const phoneCredential = (verificationId: string, code: string) => (PhoneAuthCredential as unknown as { _fromVerification(v: string, c: string): AuthCredential })._fromVerification(verificationId, code);

describe.skipIf(skipReason !== undefined)('head office with the official Firebase Auth emulator (FOOTFALL_IDP=emulator)', () => {
  let emulator: ChildProcess | undefined;
  let emulatorUrl = '';
  let h: Harness;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-emulator-'));
  const { log, lines } = capturedLog();
  const clients: FirebaseClient[] = [];
  const sdk = () => {
    const c = firebaseClient(emulatorUrl, PROJECT);
    clients.push(c);
    return c;
  };
  const call = <T = any>(method: string, p: string, opts: RequestOpts = {}): Promise<Reply<T>> => authCall<T>(h, method, p, opts);

  beforeAll(async () => {
    const [auth, hub, logging] = [await closedPort(), await closedPort(), await closedPort()];
    fs.writeFileSync(
      path.join(work, 'firebase.json'),
      JSON.stringify({ emulators: { auth: { host: '127.0.0.1', port: auth }, hub: { host: '127.0.0.1', port: hub }, logging: { host: '127.0.0.1', port: logging }, ui: { enabled: false } } }),
    );
    emulator = spawn(bin!, ['emulators:start', '--only', 'auth', '--project', PROJECT], {
      cwd: work,
      env: { ...process.env, CI: '1', NO_UPDATE_NOTIFIER: '1', FIREBASE_REALTIME_URL: 'http://127.0.0.1:9' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    emulatorUrl = `http://127.0.0.1:${auth}`;
    const until = Date.now() + 90_000;
    for (;;) {
      const up = await fetch(`${emulatorUrl}/emulator/v1/projects/${PROJECT}/config`).then((r) => r.ok, () => false);
      if (up) break;
      if (Date.now() > until || emulator.exitCode !== null) throw new Error('the Firebase Auth emulator did not start');
      await new Promise((r) => setTimeout(r, 500));
    }
    h = await startHarness({ FIREBASE_AUTH_EMULATOR_HOST: `127.0.0.1:${auth}` }, { log });
  }, 120_000);
  afterAll(async () => {
    for (const c of clients) await c.close();
    await h?.close();
    if (emulator?.pid) {
      process.kill(-emulator.pid, 'SIGINT');
      await new Promise((r) => emulator!.once('exit', r));
    }
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('starts with a warning that unsigned emulator tokens are accepted', () => {
    expect(h.server.deps.config.idpMode).toBe('emulator');
    expect(lines.some((l) => l.level === 40 && String(l.msg).includes('EMULATOR') && l.project_id === PROJECT)).toBe(true);
  });

  it('client path: sign-up on /auth, SDK sign-in at the emulator, refresh, /auth/session, sign-out; the old token refused', async () => {
    const email = `owner-${process.pid}@emulator.test`;
    const up = await call('POST', '/auth/client/sign-up', { body: { companyName: 'Emulated Teas', email, password: 'a-good-password' } });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    expect(jwtParts(up.body.sessionToken).header.alg).toBe('none');
    const cred = await signInWithEmailAndPassword(sdk().auth, email, 'a-good-password');
    const first = await cred.user.getIdToken();
    await new Promise((r) => setTimeout(r, 1100));
    const refreshed = await cred.user.getIdToken(true);
    expect(refreshed).not.toBe(first);
    const session = await call('GET', '/auth/session', { token: refreshed });
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    expect(session.body).toMatchObject({ allowed: true, kind: 'client', tenant: up.body.tenant });
    expect((await call('POST', '/auth/client/sign-out', { token: refreshed })).status).toBe(200);
    for (const t of [first, refreshed]) expect((await call('GET', '/auth/session', { token: t })).body.details.reason).toBe('token_revoked');
    // The emulator keeps refresh tokens working after validSince (it checks only that the user exists), so the
    // SDK's refresh is not refused there; the token it gets still carries the old auth_time and head office refuses it.
    const after = await cred.user.getIdToken(true).catch((e: { code: string }) => e.code);
    if (typeof after === 'string' && after.startsWith('auth/')) expect(after).toMatch(/auth\/(user-token-expired|invalid-refresh-token)/);
    else expect((await call('GET', '/auth/session', { token: after })).body.details.reason).toBe('token_revoked');
  });

  it('a signed token (ours or Google-like) is not taken in emulator mode: only alg none for this project', async () => {
    const forged = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: 'https://securetoken.google.com/other', aud: 'other', sub: 'x', iat: 1, auth_time: 1, exp: 9999999999 })).toString('base64url')}.`;
    expect((await call('GET', '/auth/session', { token: forged })).body.details.reason).toBe('token_invalid');
  });

  it('staff device path: the SDK verifies the phone at the emulator; verify returns the staff envelope with refreshToken null', async () => {
    const c = await h.company();
    const phone = `+4477009${String(process.pid % 100000).padStart(5, '0')}`;
    const m = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { full_name: 'Emu Staff', role: 'staff', email: `staff-${process.pid}@emulator.test`, phone } });
    expect(m.status).toBe(201);
    expect((await call('POST', '/auth/staff/phone/start', { body: { phoneNumber: phone } })).body.mode).toBe('CLIENT_IDP_SDK');
    const sent = await fetch(`${emulatorUrl}/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode?key=k`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ phoneNumber: phone, recaptchaToken: 'ignored' }) });
    const { sessionInfo } = (await sent.json()) as { sessionInfo: string };
    const codes = (await (await fetch(`${emulatorUrl}/emulator/v1/projects/${PROJECT}/verificationCodes`)).json()) as { verificationCodes: { phoneNumber: string; sessionInfo: string; code: string }[] };
    const code = codes.verificationCodes.find((v) => v.sessionInfo === sessionInfo)!.code;
    const cred = await signInWithCredential(sdk().auth, phoneCredential(sessionInfo, code));
    const idToken = await cred.user.getIdToken();
    const verify = await call('POST', '/auth/staff/phone/verify', { body: { mode: 'sign-in', idToken } });
    expect(verify.status, JSON.stringify(verify.body)).toBe(200);
    expect(verify.body).toMatchObject({ sessionToken: idToken, refreshToken: null, user: { id: m.body.id, phone }, staff: { staffId: m.body.id } });
  });
});
