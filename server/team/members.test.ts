import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { sessions } from '../db/tables.js';

const isoRe = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const generatedRe = /^[a-z2-9]{5}(?:-[a-z2-9]{5}){3}$/;
const memberKeys = ['active', 'created_at', 'email', 'full_name', 'id', 'last_login_at', 'phone', 'role'];

type Role = 'staff' | 'manager' | 'owner';
interface Member {
  id: string;
  email: string;
  password: string;
  token: string;
  refresh: string;
}

let seq = 0;
const address = (tag: string) => `${tag}-${process.pid}-${++seq}@members.test`;

describe('team members', () => {
  let h: Harness;
  let a: Company;
  let b: Company;

  /** Adds a member through the API (owner of `c` by default), then signs them in. */
  async function member(c: Company, role: Role, by = c.ownerToken): Promise<Member> {
    const email = address(role);
    const password = `pw-${email}`;
    const r = await h.request('POST', '/api/team/members', { token: by, body: { email, full_name: `${role} person`, role, password } });
    if (r.status !== 201) throw new Error(`member create: ${r.status} ${JSON.stringify(r.body)}`);
    const env = await h.login(email, password);
    return { id: r.body.id, email, password, token: env.access_token, refresh: env.refresh_token };
  }

  const team = async (c: Company) => (await h.request<Array<Record<string, unknown>>>('GET', '/api/team', { token: c.ownerToken })).body;
  const me = (token: string) => h.request('GET', '/api/auth/me', { token });
  const patch = (token: string, ref: string, body: unknown) => h.request('PATCH', `/api/team/${encodeURIComponent(ref)}`, { token, body });

  beforeAll(async () => {
    h = await startHarness();
    a = await h.company('Alpha Stores');
    b = await h.company('Beta Mart');
  });
  afterAll(() => h.close());

  describe('GET /api/team', () => {
    it('lists the whole company with the spec fields; last_login_at is empty until the first sign-in', async () => {
      const email = address('new');
      const made = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email, full_name: 'Never Signed' } });
      expect(made.status).toBe(201);
      let rows = await team(a);
      const row = rows.find((m) => m.email === email)!;
      expect(Object.keys(row).sort()).toEqual(memberKeys);
      expect(row).toEqual({ id: made.body.id, email, full_name: 'Never Signed', role: 'staff', active: true, last_login_at: '', created_at: expect.stringMatching(isoRe), phone: null });
      await h.login(email, made.body.password);
      rows = await team(a);
      expect(rows.find((m) => m.email === email)!.last_login_at).toMatch(isoRe);
      // The owner is there (signed in by the harness); no other company's people, no secrets.
      expect(rows.find((m) => m.email === a.ownerEmail)).toMatchObject({ role: 'owner', active: true, last_login_at: expect.stringMatching(isoRe) });
      expect(rows.some((m) => m.email === b.ownerEmail)).toBe(false);
      expect(JSON.stringify(rows)).not.toMatch(/password|argon2/);
    });

    it('is open to every member of the company, staff included; 404 for the platform admin; 401 without a token', async () => {
      const staff = await member(a, 'staff');
      const r = await h.request('GET', '/api/team', { token: staff.token });
      expect(r.status).toBe(200);
      expect(r.body.some((m: { email: string }) => m.email === staff.email)).toBe(true);
      const admin = await h.request('GET', '/api/team', { token: await h.adminToken() });
      expect(admin.status).toBe(404);
      expect(admin.body.error).toBe('not_found');
      expect((await h.request('GET', '/api/team')).status).toBe(401);
    });
  });

  describe('POST /api/team/members', () => {
    it('creates staff by default and returns a generated password once', async () => {
      const email = address('gen');
      const r = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: email.toUpperCase(), full_name: '  Gen Person ' } });
      expect(r.status).toBe(201);
      expect(Object.keys(r.body).sort()).toEqual([...memberKeys, 'password'].sort());
      expect(r.body).toMatchObject({ email, full_name: 'Gen Person', role: 'staff', active: true, last_login_at: '' });
      expect(r.body.password).toMatch(generatedRe);
      const env = await h.login(email, r.body.password);
      expect(env.user).toMatchObject({ role: 'staff', client_id: a.id, client_name: 'Alpha Stores' });
      // Empty password also means "generate one".
      const empty = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: address('empty'), full_name: 'E', password: '' } });
      expect(empty.status).toBe(201);
      expect(empty.body.password).toMatch(generatedRe);
    });

    it('uses a supplied password of 8 or more characters; a shorter one is 400', async () => {
      const email = address('sup');
      const ok = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email, full_name: 'S', role: 'manager', password: '12345678' } });
      expect(ok.status).toBe(201);
      expect(ok.body).toMatchObject({ role: 'manager', password: '12345678' });
      await h.login(email, '12345678');
      const short = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: address('short'), full_name: 'S', password: '1234567' } });
      expect(short.status).toBe(400);
      expect(short.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('password') });
    });

    it('400 for a bad email, a missing name or an unknown role', async () => {
      for (const body of [{ email: 'not-an-address', full_name: 'X' }, { email: address('x') }, { email: address('x'), full_name: 'X', role: 'boss' }]) {
        const r = await h.request('POST', '/api/team/members', { token: a.ownerToken, body });
        expect(r.status).toBe(400);
        expect(r.body.error).toBe('invalid_request');
      }
    });

    it('only an owner may create an owner; a manager may create staff and managers', async () => {
      const mgr = await member(a, 'manager');
      for (const role of ['staff', 'manager'] as const) {
        const r = await h.request('POST', '/api/team/members', { token: mgr.token, body: { email: address(role), full_name: 'By manager', role } });
        expect(r.status).toBe(201);
        expect(r.body.role).toBe(role);
      }
      const refused = await h.request('POST', '/api/team/members', { token: mgr.token, body: { email: address('o'), full_name: 'O', role: 'owner' } });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: 'forbidden', message: 'Only an owner can add an owner.' });
      const byOwner = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: address('o'), full_name: 'O', role: 'owner' } });
      expect(byOwner.status).toBe(201);
      expect(byOwner.body.role).toBe('owner');
    });

    it('refuses role admin to everyone, owners included (403)', async () => {
      const r = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: address('adm'), full_name: 'A', role: 'admin' } });
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('forbidden');
      expect(r.body.message).toMatch(/admin role/);
    });

    it('staff get 403 saying who can; the platform admin gets 404', async () => {
      const staff = await member(a, 'staff');
      const r = await h.request('POST', '/api/team/members', { token: staff.token, body: { email: address('s'), full_name: 'S' } });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: 'forbidden', message: 'Only a manager or owner can add members.' });
      const admin = await h.request('POST', '/api/team/members', { token: await h.adminToken(), body: { email: address('s'), full_name: 'S' } });
      expect(admin.status).toBe(404);
    });

    it('409 conflict when the address has an account anywhere (another company, the platform admin), whatever its case', async () => {
      const before = (await team(a)).length;
      for (const email of [b.ownerEmail, b.ownerEmail.toUpperCase(), h.admin.email]) {
        const r = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email, full_name: 'Dup' } });
        expect(r.status).toBe(409);
        expect(r.body).toEqual({ error: 'conflict', message: expect.stringContaining('already has an account') });
      }
      expect((await team(a)).length).toBe(before);
    });
  });

  describe('PATCH /api/team/{id}', () => {
    it('takes a uuid or an email address; an omitted field is left alone', async () => {
      const s = await member(a, 'staff');
      const byId = await patch(a.ownerToken, s.id, { role: 'manager' });
      expect(byId.status).toBe(200);
      expect(Object.keys(byId.body).sort()).toEqual(memberKeys);
      expect(byId.body).toMatchObject({ id: s.id, role: 'manager', active: true });
      const byEmail = await patch(a.ownerToken, s.email.toUpperCase(), { active: false });
      expect(byEmail.status).toBe(200);
      expect(byEmail.body).toMatchObject({ id: s.id, role: 'manager', active: false });
      const none = await patch(a.ownerToken, s.email, {});
      expect(none.body).toMatchObject({ role: 'manager', active: false });
    });

    it('a manager may promote staff to manager but not anyone to owner; an owner may promote to owner', async () => {
      const mgr = await member(a, 'manager');
      const s = await member(a, 'staff');
      expect((await patch(mgr.token, s.id, { role: 'manager' })).body.role).toBe('manager');
      const refused = await patch(mgr.token, s.id, { role: 'owner' });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({ error: 'forbidden', message: 'Only an owner can make someone an owner.' });
      const promoted = await patch(a.ownerToken, s.id, { role: 'owner' });
      expect(promoted.status).toBe(200);
      expect(promoted.body.role).toBe('owner');
      // and back, so this company keeps a single owner for the other tests
      expect((await patch(a.ownerToken, s.id, { role: 'staff' })).body.role).toBe('staff');
    });

    it('role admin is refused (403), an unknown role or a non-boolean active is 400', async () => {
      const s = await member(a, 'staff');
      const admin = await patch(a.ownerToken, s.id, { role: 'admin' });
      expect(admin.status).toBe(403);
      expect(admin.body.message).toMatch(/admin role/);
      const bad = await patch(a.ownerToken, s.id, { role: 'boss', active: 'no' });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/role/);
      expect(bad.body.message).toMatch(/active/);
    });

    it("a manager cannot change or deactivate an owner (403), even when another owner remains", async () => {
      const c = await h.company();
      const second = await member(c, 'owner');
      const mgr = await member(c, 'manager');
      for (const body of [{ active: false }, { role: 'staff' }]) {
        const r = await patch(mgr.token, second.id, body);
        expect(r.status).toBe(403);
        expect(r.body).toEqual({ error: 'forbidden', message: "Only an owner can change an owner's role or deactivate them." });
      }
      // An owner can deactivate another owner while one stays active.
      const ok = await patch(c.ownerToken, second.id, { active: false });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ role: 'owner', active: false });
    });

    it('staff get 403 saying who can', async () => {
      const s = await member(a, 'staff');
      const r = await patch(s.token, a.owner.user.id, { active: false });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: 'forbidden', message: "Only a manager or owner can change a member's role or deactivate them." });
    });

    it("another company's member is 404 by uuid and by email; unknown is 404; the platform admin gets 404", async () => {
      const other = await member(b, 'staff');
      for (const ref of [other.id, other.email, 'nobody@members.test', '00000000-0000-4000-8000-000000000000']) {
        const r = await patch(a.ownerToken, ref, { active: false });
        expect(r.status).toBe(404);
        expect(r.body.error).toBe('not_found');
      }
      expect((await me(other.token)).status).toBe(200); // untouched
      const admin = await patch(await h.adminToken(), other.id, { active: false });
      expect(admin.status).toBe(404);
    });

    it('deactivation revokes every session at once and stops sign-in; reactivation restores none', async () => {
      const s = await member(a, 'staff');
      const second = await h.login(s.email, s.password, 'Phone');
      expect((await me(s.token)).status).toBe(200);
      expect((await me(second.access_token)).status).toBe(200);

      const off = await patch(a.ownerToken, s.id, { active: false });
      expect(off.status).toBe(200);
      expect(off.body.active).toBe(false);
      for (const token of [s.token, second.access_token]) expect((await me(token)).status).toBe(401);
      expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: s.refresh } })).status).toBe(401);
      const login = await h.request('POST', '/api/auth/login', { body: { email: s.email, password: s.password } });
      expect(login.status).toBe(403);
      expect(login.body.error).toBe('forbidden');
      const rows = await h.server.store.db.select().from(sessions).where(eq(sessions.userId, s.id));
      expect(rows.length).toBe(2);
      expect(rows.every((r) => r.revokedAt !== null && r.revokedReason === 'member_deactivated')).toBe(true);

      const on = await patch(a.ownerToken, s.email, { active: true });
      expect(on.status).toBe(200);
      expect(on.body.active).toBe(true);
      for (const token of [s.token, second.access_token]) expect((await me(token)).status).toBe(401);
      expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: second.refresh_token } })).status).toBe(401);
      const fresh = await h.login(s.email, s.password);
      expect((await me(fresh.access_token)).status).toBe(200);
    });

    it('a member may deactivate themselves (not the last owner); their own session ends with it', async () => {
      const mgr = await member(a, 'manager');
      const r = await patch(mgr.token, mgr.id, { active: false });
      expect(r.status).toBe(200);
      expect(r.body.active).toBe(false);
      expect((await me(mgr.token)).status).toBe(401);
    });

    it('409 last_owner for a demotion or deactivation that would leave no active owner; nothing changes', async () => {
      const c = await h.company();
      const ownerId = c.owner.user.id;
      for (const body of [{ role: 'manager' }, { active: false }, { role: 'staff', active: false }]) {
        const r = await patch(c.ownerToken, ownerId, body);
        expect(r.status).toBe(409);
        expect(r.body).toEqual({ error: 'last_owner', message: expect.stringContaining('no active owner') });
      }
      // An inactive owner does not count as one.
      const dormant = await member(c, 'owner');
      expect((await patch(c.ownerToken, dormant.id, { active: false })).status).toBe(200);
      expect((await patch(c.ownerToken, ownerId, { role: 'manager' })).status).toBe(409);
      // A manager trying it is told the same: no one could make this change.
      const mgr = await member(c, 'manager');
      expect((await patch(mgr.token, ownerId, { active: false })).body.error).toBe('last_owner');
      expect((await team(c)).find((m) => m.id === ownerId)).toMatchObject({ role: 'owner', active: true });
      expect((await me(c.ownerToken)).status).toBe(200);
      // With another active owner, the first may step down.
      expect((await patch(c.ownerToken, dormant.id, { active: true })).status).toBe(200);
      const down = await patch(c.ownerToken, ownerId, { role: 'manager' });
      expect(down.status).toBe(200);
      expect(down.body.role).toBe('manager');
    });

    it('two owners demoting each other in parallel: exactly one succeeds, the other is 409 last_owner', async () => {
      for (let round = 0; round < 5; round++) {
        const c = await h.company();
        const other = await member(c, 'owner');
        const [x, y] = await Promise.all([
          patch(c.ownerToken, other.id, { role: 'manager' }),
          patch(other.token, c.owner.user.id, { role: 'manager' }),
        ]);
        expect([x.status, y.status].sort()).toEqual([200, 409]);
        expect([x, y].find((r) => r.status === 409)!.body.error).toBe('last_owner');
        const owners = (await h.request<Array<{ role: string; active: boolean }>>('GET', '/api/team', { token: x.status === 200 ? c.ownerToken : other.token })).body.filter(
          (m) => m.role === 'owner' && m.active,
        );
        expect(owners.length).toBe(1);
      }
    });
  });

  describe('POST /api/team/{id}/password', () => {
    it('returns a generated password once and revokes every session in one transaction', async () => {
      const s = await member(a, 'staff');
      const second = await h.login(s.email, s.password);
      const r = await h.request('POST', `/api/team/${s.id}/password`, { token: a.ownerToken, body: {} });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body)).toEqual(['password']);
      expect(r.body.password).toMatch(generatedRe);
      for (const token of [s.token, second.access_token]) expect((await me(token)).status).toBe(401);
      const rows = await h.server.store.db.select().from(sessions).where(eq(sessions.userId, s.id));
      expect(rows.length).toBe(2);
      expect(rows.every((x) => x.revokedReason === 'password_reset')).toBe(true);
      expect(new Set(rows.map((x) => x.revokedAt)).size).toBe(1); // same instant: one statement, one transaction
      expect((await h.request('POST', '/api/auth/login', { body: { email: s.email, password: s.password } })).status).toBe(401);
      await h.login(s.email, r.body.password);
      expect(JSON.stringify(await team(a))).not.toContain(r.body.password);
    });

    it('takes a supplied password of 8 or more; a shorter one is 400 and changes nothing', async () => {
      const s = await member(a, 'staff');
      const short = await h.request('POST', `/api/team/${s.email}/password`, { token: a.ownerToken, body: { password: 'short' } });
      expect(short.status).toBe(400);
      expect(short.body.message).toMatch(/password/);
      expect((await me(s.token)).status).toBe(200);
      const r = await h.request('POST', `/api/team/${s.email}/password`, { token: a.ownerToken, body: { password: 'a-new-password' } });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ password: 'a-new-password' });
      expect((await me(s.token)).status).toBe(401);
      await h.login(s.email, 'a-new-password');
    });

    it("a manager may reset staff and managers but not an owner's; staff get 403; other company and admin get 404", async () => {
      const mgr = await member(a, 'manager');
      const s = await member(a, 'staff');
      expect((await h.request('POST', `/api/team/${s.id}/password`, { token: mgr.token, body: {} })).status).toBe(200);
      const owner = await h.request('POST', `/api/team/${a.owner.user.id}/password`, { token: mgr.token, body: {} });
      expect(owner.status).toBe(403);
      expect(owner.body).toEqual({ error: 'forbidden', message: "Only an owner can reset an owner's password." });
      expect((await me(a.ownerToken)).status).toBe(200);
      const staff = await member(a, 'staff');
      const byStaff = await h.request('POST', `/api/team/${mgr.id}/password`, { token: staff.token, body: {} });
      expect(byStaff.status).toBe(403);
      expect(byStaff.body).toEqual({ error: 'forbidden', message: "Only a manager or owner can reset a member's password." });
      const other = await member(b, 'staff');
      const cross = await h.request('POST', `/api/team/${other.id}/password`, { token: a.ownerToken, body: {} });
      expect(cross.status).toBe(404);
      expect((await me(other.token)).status).toBe(200);
      expect((await h.request('POST', `/api/team/${other.id}/password`, { token: await h.adminToken(), body: {} })).status).toBe(404);
    });
  });
  describe('phone (staff phone sign-in)', () => {
    let n = 0;
    const number = () => `+4477009${String(process.pid % 100).padStart(2, '0')}${String(++n).padStart(3, '0')}`;
    const add = (c: Company, body: Record<string, unknown>) => h.request('POST', '/api/team/members', { token: c.ownerToken, body: { email: address('ph'), full_name: 'Phone Person', ...body } });

    it('is optional on creation (null when none), stored in E.164 with spaces, dashes, dots and brackets dropped', async () => {
      const none = await add(a, {});
      expect(none.body.phone).toBe(null);
      const nul = await add(a, { phone: null });
      expect(nul.status).toBe(201);
      expect(nul.body.phone).toBe(null);
      const p = number();
      const typed = `${p.slice(0, 3)} (${p.slice(3, 7)}) ${p.slice(7, 10)}-${p.slice(10)}`;
      const r = await add(a, { phone: typed });
      expect(r.status).toBe(201);
      expect(r.body.phone).toBe(p);
      expect((await team(a)).find((m) => m.id === r.body.id)!.phone).toBe(p);
    });

    it('400 for a number that is not E.164 or not a string', async () => {
      for (const phone of ['07700900123', '+0447700900123', '+44', '+44 7700 abc', 447700900123, '']) {
        const r = await add(a, { phone });
        expect(r.status, String(phone)).toBe(400);
        expect(r.body).toEqual({ error: 'invalid_request', message: expect.stringContaining('phone') });
      }
    });

    it('unique among the active members of a company (409); another company, or an inactive member, may hold it', async () => {
      const p = number();
      const first = await add(a, { phone: p });
      expect(first.status).toBe(201);
      const dup = await add(a, { phone: p });
      expect(dup.status).toBe(409);
      expect(dup.body).toEqual({ error: 'conflict', message: expect.stringContaining('phone number') });
      expect((await add(b, { phone: p })).status).toBe(201);
      // Deactivated, the number is free; reactivating the first holder while someone else has it is 409.
      expect((await patch(a.ownerToken, first.body.id, { active: false })).status).toBe(200);
      const second = await add(a, { phone: p });
      expect(second.status).toBe(201);
      const back = await patch(a.ownerToken, first.body.id, { active: true });
      expect(back.status).toBe(409);
      expect((await team(a)).find((m) => m.id === first.body.id)!.active).toBe(false);
    });

    it('PATCH sets, changes and clears it (null); omitted leaves it; a number another active member has is 409', async () => {
      const m = await add(a, {});
      const p = number();
      const set = await patch(a.ownerToken, m.body.id, { phone: p });
      expect(set.status).toBe(200);
      expect(Object.keys(set.body).sort()).toEqual(memberKeys);
      expect(set.body.phone).toBe(p);
      expect((await patch(a.ownerToken, m.body.id, { role: 'manager' })).body).toMatchObject({ role: 'manager', phone: p });
      const other = await add(a, {});
      const taken = await patch(a.ownerToken, other.body.id, { phone: p });
      expect(taken.status).toBe(409);
      expect((await patch(a.ownerToken, m.body.id, { phone: null })).body.phone).toBe(null);
      expect((await patch(a.ownerToken, other.body.id, { phone: p })).body.phone).toBe(p);
      expect((await patch(a.ownerToken, other.body.id, { phone: 'not a number' })).status).toBe(400);
    });
  });
});
