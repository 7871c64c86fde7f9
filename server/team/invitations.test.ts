import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { normaliseCode } from './codes.js';
import { one } from '../db/query.js';
import { invitations } from '../db/tables.js';

const isoRe = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const codeRe = /^[A-Z0-9]{6}(?:-[A-Z0-9]{6}){3}$/;
const day = 86_400_000;

type Role = 'staff' | 'manager' | 'owner';

let seq = 0;
const address = (tag: string) => `${tag}-${process.pid}-${++seq}@invite.test`;

describe('invitations and registration', () => {
  let h: Harness;
  let a: Company;
  let b: Company;
  let manager: string;
  let staff: string;

  const invite = (token: string, body: Record<string, unknown>) => h.request('POST', '/api/team/invitations', { token, body });
  /** A pending invitation from the owner of `c`; returns the creation body (with the code). */
  async function invited(c: Company, role: Role = 'staff', extra: Record<string, unknown> = {}) {
    const email = address(role);
    const r = await invite(c.ownerToken, { email, full_name: `Invited ${role}`, role, ...extra });
    if (r.status !== 201) throw new Error(`invite: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as { id: string; email: string; code: string; role: Role; expires_at: string };
  }
  const preview = (code: string) => h.request('GET', `/api/auth/invitation?code=${encodeURIComponent(code)}`);
  const register = (body: Record<string, unknown>) => h.request('POST', '/api/auth/register', { body });
  const pending = async (c: Company) => (await h.request<Array<{ id: string; email: string }>>('GET', '/api/team/invitations', { token: c.ownerToken })).body;
  const row = async (id: string) => (await one(h.server.store.db.select().from(invitations).where(eq(invitations.id, id))))!;

  async function memberToken(c: Company, role: Role) {
    const email = address(`m-${role}`);
    const r = await h.request('POST', '/api/team/members', { token: c.ownerToken, body: { email, full_name: role, role, password: 'member-password' } });
    expect(r.status).toBe(201);
    return (await h.login(email, 'member-password')).access_token;
  }

  beforeAll(async () => {
    h = await startHarness();
    a = await h.company('Alpha Stores');
    b = await h.company('Beta Mart');
    manager = await memberToken(a, 'manager');
    staff = await memberToken(a, 'staff');
  });
  afterAll(() => h.close());

  describe('POST /api/team/invitations', () => {
    it('returns the invitation with its code once; expires in 7 days by default', async () => {
      const email = address('new');
      const before = Date.now();
      const r = await invite(a.ownerToken, { email: email.toUpperCase(), full_name: 'New Person', role: 'manager' });
      expect(r.status).toBe(201);
      expect(Object.keys(r.body).sort()).toEqual(['code', 'created_at', 'email', 'expires_at', 'full_name', 'id', 'invited_by', 'role']);
      expect(r.body).toMatchObject({ email, full_name: 'New Person', role: 'manager', invited_by: a.ownerEmail, created_at: expect.stringMatching(isoRe) });
      expect(r.body.code).toMatch(codeRe);
      const ttl = Date.parse(r.body.expires_at) - before;
      expect(ttl).toBeGreaterThan(7 * day - 5_000);
      expect(ttl).toBeLessThan(7 * day + 5_000);
    });

    it('keeps only the HMAC of the code, never the code', async () => {
      const inv = await invited(a);
      const stored = await row(inv.id);
      expect(stored.codeHash).toBe(h.server.deps.keys.codeHash(normaliseCode(inv.code)));
      expect(stored.codeHash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(stored)).not.toContain(inv.code);
      expect(JSON.stringify(stored)).not.toContain(normaliseCode(inv.code));
      // The list never shows it either.
      const listed = (await pending(a)).find((i) => i.id === inv.id)!;
      expect(Object.keys(listed).sort()).toEqual(['created_at', 'email', 'expires_at', 'full_name', 'id', 'invited_by', 'role']);
      expect(JSON.stringify(await pending(a))).not.toContain(inv.code);
    });

    it('expires_in_days: 1 to 30 accepted; 0, 31, fractions and strings are 400', async () => {
      const before = Date.now();
      const thirty = await invited(a, 'staff', { expires_in_days: 30 });
      expect(Date.parse(thirty.expires_at) - before).toBeGreaterThan(30 * day - 5_000);
      const one = await invited(a, 'staff', { expires_in_days: 1 });
      expect(Date.parse(one.expires_at) - before).toBeLessThan(day + 5_000);
      for (const v of [0, 31, 1.5, '7', -1]) {
        const r = await invite(a.ownerToken, { email: address('days'), full_name: 'D', role: 'staff', expires_in_days: v });
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('expires_in_days') });
      }
    });

    it('a manager may invite staff and managers but not owners; an owner may invite an owner', async () => {
      for (const role of ['staff', 'manager']) {
        const r = await invite(manager, { email: address(role), full_name: 'By manager', role });
        expect(r.status).toBe(201);
        expect(r.body.invited_by).toMatch(/^m-manager-/);
      }
      const refused = await invite(manager, { email: address('o'), full_name: 'O', role: 'owner' });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: 'forbidden', message: 'Only an owner can invite an owner.' });
      expect((await invite(a.ownerToken, { email: address('o'), full_name: 'O', role: 'owner' })).status).toBe(201);
    });

    it('role admin is refused (403); staff get 403 saying who can; the platform admin gets 404', async () => {
      const admin = await invite(a.ownerToken, { email: address('adm'), full_name: 'A', role: 'admin' });
      expect(admin.status).toBe(403);
      expect(admin.body.message).toMatch(/admin role/);
      const byStaff = await invite(staff, { email: address('s'), full_name: 'S', role: 'staff' });
      expect(byStaff.status).toBe(403);
      expect(byStaff.body).toEqual({ error: 'forbidden', message: 'Only a manager or owner can invite people.' });
      expect((await invite(await h.adminToken(), { email: address('s'), full_name: 'S', role: 'staff' })).status).toBe(404);
    });

    it('409 conflict for an address that already has an account anywhere', async () => {
      for (const email of [b.ownerEmail, a.ownerEmail, h.admin.email.toUpperCase()]) {
        const r = await invite(a.ownerToken, { email, full_name: 'Dup', role: 'staff' });
        expect(r.status).toBe(409);
        expect(r.body).toEqual({ error: 'conflict', message: expect.stringContaining('already has an account') });
      }
    });

    it('409 conflict for a second pending invitation to the same address in the company; other companies may invite it too', async () => {
      const first = await invited(a);
      const again = await invite(manager, { email: first.email, full_name: 'Again', role: 'manager' });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: 'conflict', message: expect.stringContaining('pending invitation'), invitation_id: first.id });
      const elsewhere = await invite(b.ownerToken, { email: first.email, full_name: 'Elsewhere', role: 'staff' });
      expect(elsewhere.status).toBe(201);
      // Withdrawn, it no longer blocks a new one.
      expect((await h.request('DELETE', `/api/team/invitations/${first.id}`, { token: a.ownerToken })).status).toBe(204);
      expect((await invite(a.ownerToken, { email: first.email, full_name: 'Again', role: 'staff' })).status).toBe(201);
    });
  });

  describe('GET and DELETE /api/team/invitations', () => {
    it("lists the company's pending invitations only, without codes", async () => {
      const inv = await invited(a, 'manager');
      const theirs = await invited(b);
      const list = await pending(a);
      expect(list.find((i) => i.id === inv.id)).toEqual({
        id: inv.id,
        email: inv.email,
        full_name: 'Invited manager',
        role: 'manager',
        invited_by: a.ownerEmail,
        expires_at: inv.expires_at,
        created_at: expect.stringMatching(isoRe),
      });
      expect(list.some((i) => i.id === theirs.id)).toBe(false);
      const byManager = await h.request('GET', '/api/team/invitations', { token: manager });
      expect(byManager.status).toBe(200);
      const byStaff = await h.request('GET', '/api/team/invitations', { token: staff });
      expect(byStaff.status).toBe(403);
      expect(byStaff.body).toEqual({ error: 'forbidden', message: 'Only a manager or owner can see invitations.' });
      expect((await h.request('GET', '/api/team/invitations', { token: await h.adminToken() })).status).toBe(404);
    });

    it('pending -> withdrawn: 204 with no body; the code stops working; a second DELETE is 404', async () => {
      const inv = await invited(a);
      const r = await h.request('DELETE', `/api/team/invitations/${inv.id}`, { token: manager });
      expect(r.status).toBe(204);
      expect(r.body).toBe('');
      expect((await row(inv.id)).withdrawnAt).toMatch(isoRe);
      expect((await pending(a)).some((i) => i.id === inv.id)).toBe(false);
      expect((await preview(inv.code)).body.error).toBe('invalid_code');
      const again = await h.request('DELETE', `/api/team/invitations/${inv.id}`, { token: manager });
      expect(again.status).toBe(404);
      expect(again.body.error).toBe('not_found');
    });

    it("another company's invitation is 404 and stays pending; staff get 403; a non-uuid is 404", async () => {
      const theirs = await invited(b);
      const r = await h.request('DELETE', `/api/team/invitations/${theirs.id}`, { token: a.ownerToken });
      expect(r.status).toBe(404);
      expect((await pending(b)).some((i) => i.id === theirs.id)).toBe(true);
      const mine = await invited(a);
      const byStaff = await h.request('DELETE', `/api/team/invitations/${mine.id}`, { token: staff });
      expect(byStaff.status).toBe(403);
      expect(byStaff.body).toEqual({ error: 'forbidden', message: 'Only a manager or owner can withdraw invitations.' });
      expect((await h.request('DELETE', '/api/team/invitations/not-a-uuid', { token: a.ownerToken })).status).toBe(404);
      expect((await h.request('DELETE', `/api/team/invitations/${mine.id}`, { token: await h.adminToken() })).status).toBe(404);
    });

    it('adding the invited address directly as a member withdraws its pending invitation', async () => {
      const inv = await invited(a);
      const made = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: inv.email, full_name: 'Direct' } });
      expect(made.status).toBe(201);
      expect((await pending(a)).some((i) => i.id === inv.id)).toBe(false);
      expect((await row(inv.id)).withdrawnAt).toMatch(isoRe);
      expect((await preview(inv.code)).status).toBe(404);
    });
  });

  describe('GET /api/auth/invitation', () => {
    it('answers client_name, email, full_name and role, however the code is typed', async () => {
      const inv = await invited(a, 'manager');
      const forms = [inv.code, inv.code.toLowerCase(), inv.code.replaceAll('-', ''), inv.code.toLowerCase().replaceAll('-', ''), ` ${inv.code.replaceAll('-', ' ')} `];
      for (const code of forms) {
        const r = await preview(code);
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ client_name: 'Alpha Stores', email: inv.email, full_name: 'Invited manager', role: 'manager' });
      }
    });

    it('400 without a code', async () => {
      for (const path of ['/api/auth/invitation', '/api/auth/invitation?code=']) {
        const r = await h.request('GET', path);
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('invalid_request');
      }
    });
  });

  describe('POST /api/auth/register', () => {
    it('pending -> redeemed: creates the account with the invitation email and role, returns 201 and a session', async () => {
      const inv = await invited(a, 'manager');
      const r = await register({ code: inv.code.toLowerCase(), full_name: 'Chosen Name', password: 'registered-pw', device: 'Till 2' });
      expect(r.status).toBe(201);
      expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_at', 'refresh_token', 'user']);
      expect(r.body.user).toEqual({ id: expect.any(String), email: inv.email, full_name: 'Chosen Name', role: 'manager', client_id: a.id, client_name: 'Alpha Stores' });
      const me = await h.request('GET', '/api/auth/me', { token: r.body.access_token });
      expect(me.status).toBe(200);
      expect(me.body.email).toBe(inv.email);
      const sessions = await h.request('GET', '/api/auth/sessions', { token: r.body.access_token });
      expect(sessions.body[0].device).toBe('Till 2');
      const listed = (await h.request('GET', '/api/team', { token: a.ownerToken })).body.find((m: { email: string }) => m.email === inv.email);
      expect(listed).toMatchObject({ id: r.body.user.id, role: 'manager', active: true, last_login_at: expect.stringMatching(isoRe) });
      expect(await row(inv.id)).toMatchObject({ redeemedAt: expect.stringMatching(isoRe), redeemedUserId: r.body.user.id });
      expect((await pending(a)).some((i) => i.id === inv.id)).toBe(false);
      await h.login(inv.email, 'registered-pw');
      // Spent: a redeemed invitation cannot be withdrawn either.
      expect((await h.request('DELETE', `/api/team/invitations/${inv.id}`, { token: a.ownerToken })).status).toBe(404);
    });

    it('400 for a body naming email or role, and the invitation stays pending', async () => {
      const inv = await invited(a);
      for (const extra of [{ email: inv.email }, { role: 'owner' }, { email: 'x@y.test', role: 'staff' }, { role: null }]) {
        const r = await register({ code: inv.code, full_name: 'N', password: 'long-enough', ...extra });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('invalid_request');
        for (const k of Object.keys(extra)) expect(r.body.message).toContain(`${k}:`);
      }
      expect((await preview(inv.code)).status).toBe(200);
    });

    it('400 for a short password (or missing fields); the invitation stays pending and then works', async () => {
      const inv = await invited(a);
      const short = await register({ code: inv.code, full_name: 'N', password: '1234567' });
      expect(short.status).toBe(400);
      expect(short.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('password') });
      const missing = await register({ code: inv.code });
      expect(missing.status).toBe(400);
      expect(missing.body.message).toMatch(/full_name/);
      expect(missing.body.message).toMatch(/password/);
      expect((await row(inv.id)).redeemedAt).toBeNull();
      expect((await preview(inv.code)).status).toBe(200);
      expect((await register({ code: inv.code, full_name: 'N', password: '12345678' })).status).toBe(201);
    });

    it('404 invalid_code, with one message, for unknown, expired, spent and withdrawn codes; a wrong code leaves others pending', async () => {
      const target = await invited(a);
      const messages = new Set<string>();
      const refuse = async (code: string) => {
        for (const r of [await preview(code), await register({ code, full_name: 'N', password: 'long-enough' })]) {
          expect(r.status).toBe(404);
          expect(r.body.error).toBe('invalid_code');
          messages.add(r.body.message);
        }
      };
      // unknown (well-formed, and garbage)
      await refuse('AAAAAA-BBBBBB-CCCCCC-DDDDDD');
      await refuse('nonsense');
      expect((await preview(target.code)).status).toBe(200);
      // expired: moved into the past directly in the database
      const expired = await invited(a);
      await h.server.store.db.update(invitations).set({ expiresAt: new Date(Date.now() - 1000).toISOString() }).where(eq(invitations.id, expired.id));
      await refuse(expired.code);
      expect((await pending(a)).some((i) => i.id === expired.id)).toBe(false);
      expect((await h.request('DELETE', `/api/team/invitations/${expired.id}`, { token: a.ownerToken })).status).toBe(404);
      // spent
      const spent = await invited(a);
      expect((await register({ code: spent.code, full_name: 'N', password: 'long-enough' })).status).toBe(201);
      await refuse(spent.code);
      // withdrawn
      const withdrawn = await invited(a);
      expect((await h.request('DELETE', `/api/team/invitations/${withdrawn.id}`, { token: a.ownerToken })).status).toBe(204);
      await refuse(withdrawn.code);
      expect(messages.size).toBe(1);
      expect((await row(target.id)).redeemedAt).toBeNull();
    });

    it('409 conflict once the address has an account: invited by two companies, the second redemption is refused', async () => {
      const email = address('both');
      const fromA = await invite(a.ownerToken, { email, full_name: 'Both', role: 'staff' });
      const fromB = await invite(b.ownerToken, { email, full_name: 'Both', role: 'manager' });
      expect((await register({ code: fromA.body.code, full_name: 'Both', password: 'long-enough' })).status).toBe(201);
      for (const r of [await preview(fromB.body.code), await register({ code: fromB.body.code, full_name: 'Both', password: 'long-enough' })]) {
        expect(r.status).toBe(409);
        expect(r.body.error).toBe('conflict');
      }
      expect((await row(fromB.body.id)).redeemedAt).toBeNull();
    });

    it('403 while the inviting company is suspended; the invitation stays pending', async () => {
      const c = await h.company();
      const inv = await invited(c);
      const admin = await h.adminToken();
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: false } })).status).toBe(200);
      for (const r of [await preview(inv.code), await register({ code: inv.code, full_name: 'N', password: 'long-enough' })]) {
        expect(r.status).toBe(403);
        expect(r.body.error).toBe('forbidden');
      }
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: true } })).status).toBe(200);
      expect((await register({ code: inv.code, full_name: 'N', password: 'long-enough' })).status).toBe(201);
    });
  });
});
