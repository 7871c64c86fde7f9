import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startHarness, type Company, type Envelope, type Harness } from '../../test/support/harness.js';
import { buildApp } from '../app.js';
import type { AppRouter } from '../context.js';
import { pruneFailures } from './login-limits.js';
import { hashPassword } from './passwords.js';
import { newToken } from './tokens.js';
import { loginFailures, users } from '../db/tables.js';

const uuidRe = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const isoRe = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function expectEnvelope(body: unknown, code: string) {
  expect(body).toEqual({ error: code, message: expect.any(String) });
  expect((body as { message: string }).message.length).toBeGreaterThan(5);
}

/** Adds a user straight into the database (the team routes belong to a later issue). */
async function addUser(h: Harness, companyId: string | null, email: string, role: 'staff' | 'manager' | 'owner' | 'admin', password: string, active = true) {
  const id = randomUUID();
  await h.server.store.db
    .insert(users)
    .values({ id, companyId, email, fullName: `User ${email}`, role, passwordHash: await hashPassword(password), active, createdAt: new Date().toISOString() });
  return id;
}

describe('sign-in and sessions', () => {
  let h: Harness;
  let a: Company;
  let b: Company;
  beforeAll(async () => {
    h = await startHarness();
    a = await h.company('Alpha Stores');
    b = await h.company('Beta Mart');
  });
  afterAll(() => h.close());

  describe('POST /api/auth/login', () => {
    it('returns the session envelope exactly as the spec shapes it', async () => {
      const before = Date.now();
      const r = await h.request<Envelope>('POST', '/api/auth/login', { body: { email: a.ownerEmail, password: a.ownerPassword, device: 'Front desk tablet' } });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_at', 'refresh_token', 'user']);
      expect(r.body.user).toEqual({ id: a.owner.user.id, email: a.ownerEmail, full_name: expect.any(String), role: 'owner', client_id: a.id, client_name: 'Alpha Stores' });
      expect(r.body.access_token).toMatch(/^ffa_[\w-]{43}$/); // 256 bits
      expect(r.body.refresh_token).toMatch(/^ffr_[\w-]{43}$/);
      expect(r.body.access_token).not.toBe(a.ownerToken);
      expect(r.body.expires_at).toMatch(isoRe);
      const ttl = Date.parse(r.body.expires_at) - before;
      expect(ttl).toBeGreaterThan(43_200_000 - 5_000);
      expect(ttl).toBeLessThanOrEqual(43_200_000 + 5_000);

      const list = await h.request('GET', '/api/auth/sessions', { token: r.body.access_token });
      expect(list.body.find((s: { current: boolean }) => s.current).device).toBe('Front desk tablet');
    });

    it('gives the platform admin empty client_id and client_name', async () => {
      const r = await h.login(h.admin.email, h.admin.password);
      expect(r.user).toEqual({ id: expect.stringMatching(uuidRe), email: h.admin.email, full_name: expect.any(String), role: 'admin', client_id: '', client_name: '' });
    });

    it('takes the email in any case and with spaces around it', async () => {
      const r = await h.request('POST', '/api/auth/login', { body: { email: `  ${a.ownerEmail.toUpperCase()} `, password: a.ownerPassword } });
      expect(r.status).toBe(200);
      expect(r.body.user.email).toBe(a.ownerEmail);
    });

    it('labels a device from the User-Agent when none is sent, and keeps a sent label coarse', async () => {
      const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';
      const r = await h.request<Envelope>('POST', '/api/auth/login', { body: { email: b.ownerEmail, password: b.ownerPassword }, headers: { 'User-Agent': ua } });
      expect(r.status).toBe(200);
      const long = await h.request<Envelope>('POST', '/api/auth/login', { body: { email: b.ownerEmail, password: b.ownerPassword, device: 'Till\u0007 ' + 'x'.repeat(150) } });
      expect(long.status).toBe(200);
      const list = await h.request('GET', '/api/auth/sessions', { token: r.body.access_token });
      const devices = list.body.map((s: { device: string }) => s.device);
      expect(devices).toContain('Chrome on Windows');
      const labelled = devices.find((d: string) => d.startsWith('Till'));
      expect(labelled).toBe('Till ' + 'x'.repeat(59));
    });

    it('answers an unknown account and a wrong password alike: 401 bad_credentials', async () => {
      const unknown = await h.request('POST', '/api/auth/login', { body: { email: 'nobody@nowhere.test', password: 'whatever-1' } });
      const wrong = await h.request('POST', '/api/auth/login', { body: { email: a.ownerEmail, password: 'not-the-password' } });
      expect(unknown.status).toBe(401);
      expect(wrong.status).toBe(401);
      expectEnvelope(unknown.body, 'bad_credentials');
      expect(wrong.body).toEqual(unknown.body);
    });

    it('refuses a deactivated account, and its live sessions stop working', async () => {
      const id = await addUser(h, a.id, 'gone@alpha.test', 'staff', 'staff-password-1');
      const s = await h.login('gone@alpha.test', 'staff-password-1');
      await h.server.store.db.update(users).set({ active: false }).where(eq(users.id, id));
      const r = await h.request('POST', '/api/auth/login', { body: { email: 'gone@alpha.test', password: 'staff-password-1' } });
      expect(r.status).toBe(403);
      expectEnvelope(r.body, 'forbidden');
      expect(r.body.message).toMatch(/deactivated/);
      const me = await h.request('GET', '/api/auth/me', { token: s.access_token });
      expect(me.status).toBe(401);
      expectEnvelope(me.body, 'unauthorized');
      const refresh = await h.request('POST', '/api/auth/refresh', { body: { refresh_token: s.refresh_token } });
      expect(refresh.status).toBe(401);
      // A wrong password for a deactivated account is the same answer as for anyone else.
      const wrong = await h.request('POST', '/api/auth/login', { body: { email: 'gone@alpha.test', password: 'nope-nope-1' } });
      expect(wrong.status).toBe(401);
      expectEnvelope(wrong.body, 'bad_credentials');
    });

    it('refuses users of a suspended company until it is reactivated', async () => {
      const c = await h.company('Suspended Co');
      const admin = await h.adminToken();
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: false } })).status).toBe(200);
      const r = await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } });
      expect(r.status).toBe(403);
      expectEnvelope(r.body, 'forbidden');
      expect(r.body.message).toMatch(/suspended/);
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: true } })).status).toBe(200);
      expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } })).status).toBe(200);
    });

    it('rejects an account that has both a company and the admin role', async () => {
      await addUser(h, a.id, 'odd-admin@alpha.test', 'admin', 'admin-password-2');
      const r = await h.request('POST', '/api/auth/login', { body: { email: 'odd-admin@alpha.test', password: 'admin-password-2' } });
      expect(r.status).toBe(401);
      expectEnvelope(r.body, 'bad_credentials');
    });
  });

  describe('malformed requests', () => {
    const login = (opts: Parameters<Harness['request']>[2]) => h.request('POST', '/api/auth/login', opts);

    it('invalid JSON is 400 invalid_request in the envelope', async () => {
      for (const raw of ['{"email":', "{'email': 'a@b.test'}", '{"email":"a@b.test",}', 'not json']) {
        const r = await login({ raw });
        expect(r.status, raw).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
      }
    });

    it('JSON that is not an object is 400', async () => {
      for (const raw of ['[1,2]', '"text"', '42', 'null', 'true']) {
        const r = await login({ raw });
        expect(r.status, raw).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
        expect(r.body.message, raw).toMatch(/JSON object/);
      }
    });

    it('missing fields are 400 and the message names them', async () => {
      for (const body of [{}, { email: a.ownerEmail }, { password: 'x-password' }]) {
        const r = await login({ body });
        expect(r.status).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
      }
      const r = await login({ body: {} });
      expect(r.body.message).toBe('email: is required; password: is required');
      expect(r.body.message).toMatch(/password: is required/);
      const empty = await login({ raw: '' });
      expect(empty.status).toBe(400);
      expectEnvelope(empty.body, 'invalid_request');
    });

    it('wrong types are 400 and the message names the field', async () => {
      const r = await login({ body: { email: 5, password: true } });
      expect(r.status).toBe(400);
      expectEnvelope(r.body, 'invalid_request');
      expect(r.body.message).toBe('email: must be a string; password: must be a string');
      const notEmail = await login({ body: { email: 'not-an-email', password: 'x-password' } });
      expect(notEmail.status).toBe(400);
      expect(notEmail.body.message).toMatch(/email: must be an email address/);
      const device = await login({ body: { email: a.ownerEmail, password: a.ownerPassword, device: 7 } });
      expect(device.status).toBe(400);
      expect(device.body.message).toMatch(/device/);
      const refresh = await h.request('POST', '/api/auth/refresh', { body: { refresh_token: 12 } });
      expect(refresh.status).toBe(400);
      expectEnvelope(refresh.body, 'invalid_request');
    });

    it('a body that is not JSON at all is not parsed: the fields are missing', async () => {
      const r = await login({ raw: `email=${a.ownerEmail}&password=${a.ownerPassword}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
      expect(r.status).toBe(400);
      expectEnvelope(r.body, 'invalid_request');
    });

    it('a body over FOOTFALL_BODY_LIMIT_BYTES is 413 in the envelope', async () => {
      const big = JSON.stringify({ email: 'a@b.test', password: 'x'.repeat(1024 * 1024) });
      const r = await login({ raw: big });
      expect(r.status).toBe(413);
      expectEnvelope(r.body, 'payload_too_large');
      // Chunked (no Content-Length): the limit is enforced while reading.
      const chunked = await rawPost(h.url + '/api/auth/login', ['{"email":"a@b.test","password":"', 'y'.repeat(700 * 1024), 'y'.repeat(700 * 1024), '"}']);
      expect(chunked.status).toBe(413);
      expectEnvelope(JSON.parse(chunked.text), 'payload_too_large');
    });
  });

  describe('refresh, rotation and reuse', () => {
    it('rotates both tokens; the old pair stops working at once', async () => {
      const first = await h.login(b.ownerEmail, b.ownerPassword, 'Phone');
      const r = await h.request<Envelope>('POST', '/api/auth/refresh', { body: { refresh_token: first.refresh_token } });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_at', 'refresh_token', 'user']);
      expect(r.body.user).toEqual(first.user);
      expect(r.body.access_token).not.toBe(first.access_token);
      expect(r.body.refresh_token).not.toBe(first.refresh_token);
      expect(r.body.access_token).toMatch(/^ffa_/);
      expect(r.body.refresh_token).toMatch(/^ffr_/);

      const old = await h.request('GET', '/api/auth/me', { token: first.access_token });
      expect(old.status).toBe(401);
      expectEnvelope(old.body, 'unauthorized');
      const now = await h.request('GET', '/api/auth/me', { token: r.body.access_token });
      expect(now.status).toBe(200);

      // The same device session, not a new one; a device label on refresh relabels it.
      const again = await h.request<Envelope>('POST', '/api/auth/refresh', { body: { refresh_token: r.body.refresh_token, device: 'Phone (Android)' } });
      expect(again.status).toBe(200);
      const list = await h.request('GET', '/api/auth/sessions', { token: again.body.access_token });
      const current = list.body.filter((s: { current: boolean }) => s.current);
      expect(current).toHaveLength(1);
      expect(current[0].device).toBe('Phone (Android)');
    });

    it('presenting an already-rotated refresh token is refused and revokes the whole session', async () => {
      const first = await h.login(b.ownerEmail, b.ownerPassword, 'Stolen laptop');
      const second = await h.request<Envelope>('POST', '/api/auth/refresh', { body: { refresh_token: first.refresh_token } });
      expect(second.status).toBe(200);
      const reuse = await h.request('POST', '/api/auth/refresh', { body: { refresh_token: first.refresh_token } });
      expect(reuse.status).toBe(401);
      expectEnvelope(reuse.body, 'unauthorized');
      // The legitimate holder's current tokens die with it.
      const me = await h.request('GET', '/api/auth/me', { token: second.body.access_token });
      expect(me.status).toBe(401);
      const refresh = await h.request('POST', '/api/auth/refresh', { body: { refresh_token: second.body.refresh_token } });
      expect(refresh.status).toBe(401);
      expectEnvelope(refresh.body, 'unauthorized');
      // Other sessions of the same person are untouched.
      expect((await h.request('GET', '/api/auth/me', { token: b.ownerToken })).status).toBe(200);
    });

    it('an unknown refresh token, or an access token offered as one, is 401', async () => {
      for (const token of [newToken('refresh'), b.ownerToken, 'garbage']) {
        const r = await h.request('POST', '/api/auth/refresh', { body: { refresh_token: token } });
        expect(r.status).toBe(401);
        expectEnvelope(r.body, 'unauthorized');
      }
      expect((await h.request('GET', '/api/auth/me', { token: b.ownerToken })).status).toBe(200);
    });
  });

  describe('logout, me, sessions', () => {
    it('GET /api/auth/me is the User; without a token 401', async () => {
      const me = await h.request('GET', '/api/auth/me', { token: a.ownerToken });
      expect(me.status).toBe(200);
      expect(me.body).toEqual(a.owner.user);
      const none = await h.request('GET', '/api/auth/me');
      expect(none.status).toBe(401);
      expectEnvelope(none.body, 'unauthorized');
      const admin = await h.request('GET', '/api/auth/me', { token: await h.adminToken() });
      expect(admin.body).toMatchObject({ role: 'admin', client_id: '', client_name: '' });
    });

    it('logout revokes the calling session only', async () => {
      const s1 = await h.login(a.ownerEmail, a.ownerPassword, 'Kiosk');
      const s2 = await h.login(a.ownerEmail, a.ownerPassword, 'Laptop');
      const out = await h.request('POST', '/api/auth/logout', { token: s1.access_token });
      expect(out.status).toBe(204);
      expect((await h.request('GET', '/api/auth/me', { token: s1.access_token })).status).toBe(401);
      expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: s1.refresh_token } })).status).toBe(401);
      expect((await h.request('POST', '/api/auth/logout', { token: s1.access_token })).status).toBe(401);
      expect((await h.request('GET', '/api/auth/me', { token: s2.access_token })).status).toBe(200);
      const none = await h.request('POST', '/api/auth/logout');
      expect(none.status).toBe(401);
    });

    it('lists the caller\'s live sessions with exactly one current', async () => {
      await addUser(h, b.id, 'lister@beta.test', 'staff', 'lister-password');
      const phone = await h.login('lister@beta.test', 'lister-password', 'Phone');
      const laptop = await h.login('lister@beta.test', 'lister-password', 'Laptop');
      const gone = await h.login('lister@beta.test', 'lister-password', 'Old tablet');
      await h.request('POST', '/api/auth/logout', { token: gone.access_token });

      const r = await h.request('GET', '/api/auth/sessions', { token: laptop.access_token });
      expect(r.status).toBe(200);
      expect(r.body).toHaveLength(2);
      for (const s of r.body) {
        expect(Object.keys(s).sort()).toEqual(['created_at', 'current', 'device', 'expires_at', 'id', 'last_used_at']);
        expect(s.id).toMatch(uuidRe);
        for (const k of ['created_at', 'last_used_at', 'expires_at']) expect(s[k]).toMatch(isoRe);
      }
      expect(r.body.map((s: { device: string; current: boolean }) => [s.device, s.current])).toEqual([
        ['Phone', false],
        ['Laptop', true],
      ]);
      const fromPhone = await h.request('GET', '/api/auth/sessions', { token: phone.access_token });
      expect(fromPhone.body.find((s: { current: boolean }) => s.current).device).toBe('Phone');
    });

    it('DELETE /api/auth/sessions/{id} signs that device out at once; another person\'s session is 404', async () => {
      await addUser(h, b.id, 'deleter@beta.test', 'staff', 'deleter-password');
      const phone = await h.login('deleter@beta.test', 'deleter-password', 'Phone');
      const laptop = await h.login('deleter@beta.test', 'deleter-password', 'Laptop');
      const list = await h.request('GET', '/api/auth/sessions', { token: laptop.access_token });
      const phoneId = list.body.find((s: { device: string }) => s.device === 'Phone').id;

      const del = await h.request('DELETE', `/api/auth/sessions/${phoneId}`, { token: laptop.access_token });
      expect(del.status).toBe(204);
      expect((await h.request('GET', '/api/auth/me', { token: phone.access_token })).status).toBe(401);
      expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: phone.refresh_token } })).status).toBe(401);
      const again = await h.request('DELETE', `/api/auth/sessions/${phoneId}`, { token: laptop.access_token });
      expect(again.status).toBe(404);
      expectEnvelope(again.body, 'not_found');

      // Someone else's session: same company, another company, or the admin's: all 404, and left alone.
      const bOwnerSessions = await h.request('GET', '/api/auth/sessions', { token: b.ownerToken });
      const bOwnerCurrent = bOwnerSessions.body.find((s: { current: boolean }) => s.current).id;
      const aOwnerSessions = await h.request('GET', '/api/auth/sessions', { token: a.ownerToken });
      const aOwnerCurrent = aOwnerSessions.body.find((s: { current: boolean }) => s.current).id;
      for (const id of [bOwnerCurrent, aOwnerCurrent]) {
        const r = await h.request('DELETE', `/api/auth/sessions/${id}`, { token: laptop.access_token });
        expect(r.status).toBe(404);
        expectEnvelope(r.body, 'not_found');
      }
      const byAdmin = await h.request('DELETE', `/api/auth/sessions/${aOwnerCurrent}`, { token: await h.adminToken() });
      expect(byAdmin.status).toBe(404);
      expect((await h.request('GET', '/api/auth/me', { token: b.ownerToken })).status).toBe(200);
      expect((await h.request('GET', '/api/auth/me', { token: a.ownerToken })).status).toBe(200);

      for (const id of ['not-a-uuid', randomUUID()]) {
        const r = await h.request('DELETE', `/api/auth/sessions/${id}`, { token: laptop.access_token });
        expect(r.status).toBe(404);
        expectEnvelope(r.body, 'not_found');
      }
      expect((await h.request('DELETE', `/api/auth/sessions/${phoneId}`)).status).toBe(401);
    });

    it('revoke-others signs out every other session of the caller and no one else\'s', async () => {
      await addUser(h, a.id, 'many@alpha.test', 'manager', 'many-password');
      const keep = await h.login('many@alpha.test', 'many-password', 'Keep');
      const o1 = await h.login('many@alpha.test', 'many-password', 'Other 1');
      const o2 = await h.login('many@alpha.test', 'many-password', 'Other 2');
      const r = await h.request('POST', '/api/auth/sessions/revoke-others', { token: keep.access_token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ revoked: 2 });
      for (const s of [o1, o2]) {
        expect((await h.request('GET', '/api/auth/me', { token: s.access_token })).status).toBe(401);
        expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: s.refresh_token } })).status).toBe(401);
      }
      expect((await h.request('GET', '/api/auth/me', { token: keep.access_token })).status).toBe(200);
      expect((await h.request('GET', '/api/auth/me', { token: a.ownerToken })).status).toBe(200);
      const list = await h.request('GET', '/api/auth/sessions', { token: keep.access_token });
      expect(list.body).toHaveLength(1);
      expect(list.body[0]).toMatchObject({ device: 'Keep', current: true });
      const again = await h.request('POST', '/api/auth/sessions/revoke-others', { token: keep.access_token });
      expect(again.body).toEqual({ revoked: 0 });
      expect((await h.request('POST', '/api/auth/sessions/revoke-others')).status).toBe(401);
    });
  });

  describe('tokens on the wire', () => {
    it('a shop-PC token is refused on user routes (401) and admin routes (404)', async () => {
      const agent = newToken('agent');
      expect(agent).toMatch(/^ffs_/);
      for (const [method, p] of [
        ['GET', '/api/auth/me'],
        ['GET', '/api/auth/sessions'],
        ['POST', '/api/auth/logout'],
      ] as const) {
        const r = await h.request(method, p, { token: agent });
        expect(r.status).toBe(401);
        expectEnvelope(r.body, 'unauthorized');
      }
      const admin = await h.request('GET', '/api/admin/clients', { token: agent });
      expect(admin.status).toBe(404);
    });

    it('a malformed Authorization header is 401 unauthorized', async () => {
      for (const header of ['Basic abc', 'Bearer', `Token ${a.ownerToken}`, `Bearer ${a.ownerToken} extra`]) {
        const r = await h.request('GET', '/api/auth/me', { headers: { Authorization: header } });
        expect(r.status, header).toBe(401);
        expectEnvelope(r.body, 'unauthorized');
      }
      const lower = await h.request('GET', '/api/auth/me', { headers: { Authorization: `bearer ${a.ownerToken}` } });
      expect(lower.status).toBe(200);
    });
  });

  describe('the HTTP spine', () => {
    it('an unknown route is a 404 envelope; a wrong method is a 405 envelope', async () => {
      for (const [method, p] of [
        ['GET', '/nope'],
        ['GET', '/api/auth'],
        ['POST', '/api/whatever'],
        ['GET', '/api/auth/sessions/x/y'],
      ] as const) {
        const r = await h.request(method, p, { token: a.ownerToken });
        expect(r.status, `${method} ${p}`).toBe(404);
        expectEnvelope(r.body, 'not_found');
      }
      const r = await h.request('GET', '/api/auth/login');
      expect(r.status).toBe(405);
      expectEnvelope(r.body, 'method_not_allowed');
    });

    it('echoes a given X-Request-Id and generates one otherwise, on errors too', async () => {
      const given = await h.request('GET', '/healthz', { headers: { 'X-Request-Id': 'trace-123.abc:7' } });
      expect(given.headers.get('x-request-id')).toBe('trace-123.abc:7');
      const generated = await h.request('GET', '/healthz');
      expect(generated.headers.get('x-request-id')).toMatch(uuidRe);
      const other = await h.request('GET', '/healthz');
      expect(other.headers.get('x-request-id')).not.toBe(generated.headers.get('x-request-id'));
      const insane = await h.request('GET', '/healthz', { headers: { 'X-Request-Id': 'has spaces and <html>' } });
      expect(insane.headers.get('x-request-id')).toMatch(uuidRe);
      const onError = await h.request('POST', '/api/auth/login', { raw: '{', headers: { 'X-Request-Id': 'err-1' } });
      expect(onError.status).toBe(400);
      expect(onError.headers.get('x-request-id')).toBe('err-1');
    });

    it('a thrown bug is a 500 envelope with no stack or detail; a router\'s 405 keeps its Allow header', async () => {
      // A copy of the real app with one extra router that throws; it never ships as a route.
      const app = buildApp(h.server.deps);
      const boom: AppRouter = new Router();
      boom.get('/test-only/boom', () => {
        throw new Error('secret internal detail at /work/main/server/x.ts:1');
      });
      boom.get('/test-only/reject', async () => {
        await Promise.reject(Object.assign(new TypeError('undefined is not a function'), { status: undefined }));
      });
      boom.post('/test-only/post-only', (ctx) => {
        ctx.body = { ok: true };
      });
      app.use(boom.routes()).use(boom.allowedMethods());
      const server = http.createServer(app.callback());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        for (const p of ['/test-only/boom', '/test-only/reject']) {
          const res = await fetch(base + p, { headers: { 'X-Request-Id': 'bug-1' } });
          const text = await res.text();
          expect(res.status).toBe(500);
          expect(res.headers.get('x-request-id')).toBe('bug-1');
          const body = JSON.parse(text);
          expectEnvelope(body, 'internal');
          expect(text).not.toMatch(/secret|stack|\.ts|at |undefined is not/);
        }
        const wrongMethod = await fetch(base + '/test-only/post-only');
        expect(wrongMethod.status).toBe(405);
        expect(wrongMethod.headers.get('allow')).toBe('POST');
        expectEnvelope(await wrongMethod.json(), 'method_not_allowed');
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  });
});

describe('access token expiry', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_ACCESS_TOKEN_TTL_S: 1 });
  });
  afterAll(() => h.close());

  it('an expired access token is 401 token_expired, distinct from an unknown token; refresh still works', async () => {
    // The clock is the test's: Date only (timers and I/O run as ever), in this process, where head office runs. The
    // token's second passes when the test moves the clock, however slow the machine (with real time a loaded machine
    // took longer than the second between signing in and the first request).
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const t0 = Date.now();
      const me = (token: string) => h.request('GET', '/api/auth/me', { token });
      const s = await h.login(h.admin.email, h.admin.password);
      expect(Date.parse(s.expires_at)).toBe(t0 + 1000);
      expect((await me(s.access_token)).status).toBe(200);
      vi.setSystemTime(t0 + 999);
      expect((await me(s.access_token)).status).toBe(200);
      // Expired at its expires_at exactly.
      vi.setSystemTime(t0 + 1000);
      const expired = await me(s.access_token);
      expect(expired.status).toBe(401);
      expectEnvelope(expired.body, 'token_expired');
      const garbage = await me('ffa_' + 'x'.repeat(43));
      expect(garbage.status).toBe(401);
      expectEnvelope(garbage.body, 'unauthorized');
      expect(garbage.body.message).not.toBe(expired.body.message);

      const r = await h.request<Envelope>('POST', '/api/auth/refresh', { body: { refresh_token: s.refresh_token } });
      expect(r.status).toBe(200);
      expect(Date.parse(r.body.expires_at)).toBe(t0 + 2000);
      expect((await me(r.body.access_token)).status).toBe(200);
      // The expired-and-rotated access token is now simply unknown.
      const old = await me(s.access_token);
      expect(old.status).toBe(401);
      expectEnvelope(old.body, 'unauthorized');
      // And the new one expires in its turn.
      vi.setSystemTime(t0 + 2000);
      expectEnvelope((await me(r.body.access_token)).body, 'token_expired');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('login throttling with the spec defaults (10 per account, 60 per IP)', () => {
  let h: Harness;
  let c: Company;
  beforeAll(async () => {
    h = await startHarness();
    c = await h.company('Throttle Co');
  });
  afterAll(() => h.close());

  const attempt = (email: string, password: string) => h.request('POST', '/api/auth/login', { body: { email, password } });

  it('429 too_many_attempts after 10 failures for an account; a success clears the count', async () => {
    for (let i = 0; i < 9; i++) expect((await attempt(c.ownerEmail, `wrong-${i}`)).status).toBe(401);
    expect((await attempt(c.ownerEmail, c.ownerPassword)).status).toBe(200); // clears the 9
    for (let i = 0; i < 10; i++) expect((await attempt(c.ownerEmail, `wrong-${i}`)).status).toBe(401);
    for (const password of [c.ownerPassword, 'wrong-again']) {
      const r = await attempt(c.ownerEmail, password);
      expect(r.status).toBe(429);
      expectEnvelope(r.body, 'too_many_attempts');
    }
    // The account is throttled, not the address: another account signs in from the same IP.
    expect((await attempt(h.admin.email, h.admin.password)).status).toBe(200);
  });

  it('429 after 60 failures from one IP address across different accounts', async () => {
    // 10 failures for the throttled account so far; 49 more on 49 accounts makes 59.
    const wrong = (from: number, n: number) => Promise.all(Array.from({ length: n }, (_, i) => attempt(`spray-${from + i}@nowhere.test`, 'guess-password')));
    for (let i = 0; i < 49; i += 7) for (const r of await wrong(i, 7)) expect(r.status).toBe(401);
    expect((await attempt(h.admin.email, h.admin.password)).status).toBe(200);
    expect((await attempt('spray-last@nowhere.test', 'guess-password')).status).toBe(401); // the 60th
    for (const email of [h.admin.email, 'someone-new@nowhere.test']) {
      const r = await attempt(email, email === h.admin.email ? h.admin.password : 'x-password');
      expect(r.status).toBe(429);
      expectEnvelope(r.body, 'too_many_attempts');
    }
  });
});

describe('login throttling under a burst', () => {
  it('parallel guesses get no more tries than sequential ones', async () => {
    const h = await startHarness({ FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 3 });
    try {
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) => h.request('POST', '/api/auth/login', { body: { email: h.admin.email, password: `guess-${i}` } })),
      );
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).toEqual([...Array(3).fill(401), ...Array(9).fill(429)]);
      expect((await h.request('POST', '/api/auth/login', { body: { email: h.admin.email, password: h.admin.password } })).status).toBe(429);
    } finally {
      await h.close();
    }
  });

  it('a right password for a refused account (deactivated) is not counted as a failure', async () => {
    const h = await startHarness({ FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 2 });
    try {
      const c = await h.company('Refused Co');
      const id = await addUser(h, c.id, 'off@refused.test', 'staff', 'off-password-1', false);
      expect(id).toMatch(uuidRe);
      for (let i = 0; i < 3; i++) {
        const r = await h.request('POST', '/api/auth/login', { body: { email: 'off@refused.test', password: 'off-password-1' } });
        expect(r.status).toBe(403);
      }
      await h.server.store.db.update(users).set({ active: true }).where(eq(users.id, id));
      expect((await h.request('POST', '/api/auth/login', { body: { email: 'off@refused.test', password: 'off-password-1' } })).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});

describe('login throttling survives a restart', () => {
  it('failures are kept in the database', async () => {
    const first = await startHarness({ FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 3 }, { keepDataDir: true });
    let second: Harness | undefined;
    try {
      for (let i = 0; i < 3; i++) {
        expect((await first.request('POST', '/api/auth/login', { body: { email: first.admin.email, password: 'wrong-password' } })).status).toBe(401);
      }
      expect((await first.request('POST', '/api/auth/login', { body: { email: first.admin.email, password: first.admin.password } })).status).toBe(429);
      await first.close();
      second = await startHarness({ FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 3 }, { dataDir: first.dataDir, keepDataDir: false });
      const r = await second.request('POST', '/api/auth/login', { body: { email: second.admin.email, password: second.admin.password } });
      expect(r.status).toBe(429);
      expectEnvelope(r.body, 'too_many_attempts');
    } finally {
      await first.close();
      await second?.close();
      fs.rmSync(first.dataDir, { recursive: true, force: true });
    }
  });

  it('only failures inside the 15-minute window count', async () => {
    const h = await startHarness();
    try {
      const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
      const book = async (minutesAgo: number, n: number) =>
        await h.server.store.db
          .insert(loginFailures)
          .values(Array.from({ length: n }, () => ({ email: h.admin.email, ip: '10.9.8.7', at: at(minutesAgo) })));
      await book(16, 10); // outside the window
      await book(14, 9); // inside: one short of the limit
      const ok = await h.request('POST', '/api/auth/login', { body: { email: h.admin.email, password: h.admin.password } });
      expect(ok.status).toBe(200); // and clears the account's rows
      await book(14, 10);
      const r = await h.request('POST', '/api/auth/login', { body: { email: h.admin.email, password: h.admin.password } });
      expect(r.status).toBe(429);
      expectEnvelope(r.body, 'too_many_attempts');
      // The periodic prune drops only rows older than the window.
      await book(20, 4);
      expect(await pruneFailures(h.server.store.db, h.server.deps.config)).toBe(4);
      expect((await h.request('POST', '/api/auth/login', { body: { email: h.admin.email, password: h.admin.password } })).status).toBe(429);
    } finally {
      await h.close();
    }
  });
});

/** POST with Transfer-Encoding: chunked (fetch always knows the length of a string body). */
function rawPost(url: string, chunks: string[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}
