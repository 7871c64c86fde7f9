import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { buildApp } from '../app.js';
import { actorOf, tenantOf, type AppRouter } from '../context.js';
import { auth } from '../http/auth.js';
import { rule } from '../policy.js';
import { personRef } from '../references/people.js';
import { resolve } from '../references/resolver.js';
import { hashPassword, passwordHashing } from '../auth/passwords.js';
import { newToken } from '../auth/tokens.js';
import { companyImagesDir } from '../photos/local-store.js';
import type { CompanyPurger } from './deletion.js';
import { one } from '../db/query.js';
import { sessions, users } from '../db/tables.js';
import { statementOn } from '../db/statement.js';
import { sqliteOnly } from '../../test/support/stores.js';
import { storedFaces } from '../../test/support/pictures.js';

const uuidRe = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const generatedRe = /^[a-z2-9]{5}(-[a-z2-9]{5}){3}$/;

function expectEnvelope(body: unknown, code: string) {
  expect(body).toEqual({ error: code, message: expect.any(String) });
}

async function addUser(h: Harness, companyId: string, email: string, role: 'staff' | 'manager' | 'owner', password: string) {
  const id = randomUUID();
  await h.server.store.db
    .insert(users)
    .values({ id, companyId, email, fullName: `User ${email}`, role, passwordHash: await hashPassword(password), active: true, createdAt: new Date().toISOString() });
  return id;
}

describe('platform administration', () => {
  let h: Harness;
  let admin: string;
  let a: Company;
  let b: Company;
  let n = 0;
  const fresh = (what: string) => `${what}-${++n}@new.test`;

  beforeAll(async () => {
    h = await startHarness();
    admin = await h.adminToken();
    a = await h.company('Alpha Retail');
    b = await h.company('Beta Retail');
  });
  afterAll(() => h.close());

  const create = (body: Record<string, unknown>) => h.request('POST', '/api/admin/clients', { token: admin, body });
  const list = async () => (await h.request('GET', '/api/admin/clients', { token: admin })).body as { id: string; slug: string; users: number; active: boolean }[];
  const suspend = (id: string, active = false) => h.request('PATCH', `/api/admin/clients/${id}`, { token: admin, body: { active } });

  describe('POST /api/admin/clients', () => {
    it('creates company and owner: 201 with the generated password once, and it signs in', async () => {
      const r = await create({ company_name: 'Gamma Foods', owner_email: 'Owner@Gamma.TEST', owner_name: 'Gita Gamma' });
      expect(r.status).toBe(201);
      expect(Object.keys(r.body).sort()).toEqual(['client_id', 'owner_email', 'password', 'slug']);
      expect(r.body).toMatchObject({ client_id: expect.stringMatching(uuidRe), slug: 'gamma-foods', owner_email: 'owner@gamma.test' });
      expect(r.body.password).toMatch(generatedRe);

      const s = await h.login('owner@gamma.test', r.body.password);
      expect(s.user).toEqual({ id: expect.stringMatching(uuidRe), email: 'owner@gamma.test', full_name: 'Gita Gamma', role: 'owner', client_id: r.body.client_id, client_name: 'Gamma Foods' });

      // Shown once: not in the list, not in the audit log, not stored in plain.
      const listed = await h.request('GET', '/api/admin/clients', { token: admin });
      expect(JSON.stringify(listed.body)).not.toContain(r.body.password);
      const audit = await statementOn(h.server.store, 'select * from audit_log').all();
      expect(JSON.stringify(audit)).not.toContain(r.body.password);
      const row = await one(h.server.store.db.select().from(users).where(eq(users.email, 'owner@gamma.test')));
      const { memoryCost: m, parallelism: p, timeCost: t } = passwordHashing();
      expect(row?.passwordHash?.startsWith(`$argon2id$v=19$m=${m},p=${p},t=${t}$`)).toBe(true);
    });

    it('uses a supplied password (8 characters at least); an empty one means generate', async () => {
      const supplied = await create({ company_name: 'Delta Shoes', owner_email: fresh('delta'), owner_name: 'D', password: 'chosen-password' });
      expect(supplied.status).toBe(201);
      expect(supplied.body.password).toBe('chosen-password');
      expect((await h.request('POST', '/api/auth/login', { body: { email: supplied.body.owner_email, password: 'chosen-password' } })).status).toBe(200);
      const empty = await create({ company_name: 'Delta Two', owner_email: fresh('delta'), owner_name: 'D', password: '' });
      expect(empty.status).toBe(201);
      expect(empty.body.password).toMatch(generatedRe);
      const short = await create({ company_name: 'Delta Three', owner_email: fresh('delta'), owner_name: 'D', password: 'short' });
      expect(short.status).toBe(400);
      expectEnvelope(short.body, 'invalid_request');
      expect(short.body.message).toMatch(/^password: must be at least 8 characters/);
    });

    it('derives the slug from the name with /, + and # stripped; a taken one gets a number', async () => {
      const cases: [string, string][] = [
        ['Tea/Leaf+Co #7', 'tealeafco-7'],
        ['Café Ünïcode & Sons', 'cafe-unicode-sons'],
        ['A very long company name that goes on and on', 'a-very-long-company-name-that-go'],
        ['Alpha Retail', 'alpha-retail-2'],
        ['alpha retail', 'alpha-retail-3'],
      ];
      for (const [name, slug] of cases) {
        const r = await create({ company_name: name, owner_email: fresh('slug'), owner_name: 'S' });
        expect(r.status, name).toBe(201);
        expect(r.body.slug, name).toBe(slug);
      }
      const none = await create({ company_name: '#/+', owner_email: fresh('slug'), owner_name: 'S' });
      expect(none.status).toBe(400);
      expectEnvelope(none.body, 'invalid_request');
      expect(none.body.message).toMatch(/^slug: /);
    });

    it('validates an explicit slug; /, + and # are stripped from it too', async () => {
      const ok = await create({ company_name: 'Epsilon', slug: 'eps+ilon/#1', owner_email: fresh('eps'), owner_name: 'E' });
      expect(ok.status).toBe(201);
      expect(ok.body.slug).toBe('epsilon1');
      for (const slug of ['ab', 'has space', '-lead', 'trail-', 'double--dash', 'x'.repeat(33), 'ünï-code', 'under_score']) {
        const r = await create({ company_name: 'Bad Slug Co', slug, owner_email: fresh('bad'), owner_name: 'B' });
        expect(r.status, slug).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
        expect(r.body.message, slug).toMatch(/^slug: /);
      }
      expect((await list()).some((c) => c.slug.startsWith('bad-slug'))).toBe(false);
    });

    it('a duplicate explicit slug is 409 conflict and creates nothing', async () => {
      const before = (await list()).length;
      const email = fresh('dup');
      const r = await create({ company_name: 'Someone Else', slug: a.slug, owner_email: email, owner_name: 'X' });
      expect(r.status).toBe(409);
      expectEnvelope(r.body, 'conflict');
      expect((await list()).length).toBe(before);
      expect((await h.request('POST', '/api/auth/login', { body: { email, password: 'anything-1' } })).status).toBe(401);
    });

    it('an owner email that has an account anywhere is 409 conflict, and the company is not made', async () => {
      for (const email of [a.ownerEmail, a.ownerEmail.toUpperCase(), h.admin.email]) {
        const r = await create({ company_name: 'Zeta Mart', slug: 'zeta-mart', owner_email: email, owner_name: 'Z' });
        expect(r.status, email).toBe(409);
        expectEnvelope(r.body, 'conflict');
      }
      // One transaction: the slug was not taken by the refused attempt.
      const r = await create({ company_name: 'Zeta Mart', slug: 'zeta-mart', owner_email: fresh('zeta'), owner_name: 'Z' });
      expect(r.status).toBe(201);
      expect(r.body.slug).toBe('zeta-mart');
    });

    it('refuses malformed bodies with 400', async () => {
      const bodies: Record<string, unknown>[] = [
        {},
        { owner_email: fresh('m'), owner_name: 'M' },
        { company_name: 'M Co', owner_name: 'M' },
        { company_name: 'M Co', owner_email: fresh('m') },
        { company_name: 'M Co', owner_email: 'not-an-email', owner_name: 'M' },
        { company_name: '   ', owner_email: fresh('m'), owner_name: 'M' },
        { company_name: 42, owner_email: fresh('m'), owner_name: 'M' },
        { company_name: 'M Co', slug: 7, owner_email: fresh('m'), owner_name: 'M' },
      ];
      for (const body of bodies) {
        const r = await create(body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
      }
      const raw = await h.request('POST', '/api/admin/clients', { token: admin, raw: '{"company_name": "M"' });
      expect(raw.status).toBe(400);
      expectEnvelope(raw.body, 'invalid_request');
    });
  });

  describe('GET /api/admin/clients', () => {
    it('lists every company with its counts', async () => {
      const c = await h.company('Counted Co');
      await addUser(h, c.id, fresh('counted'), 'staff', 'staff-password');
      await addUser(h, c.id, fresh('counted'), 'manager', 'staff-password');
      const r = await h.request('GET', '/api/admin/clients', { token: admin });
      expect(r.status).toBe(200);
      expect(Array.isArray(r.body)).toBe(true);
      // The counts, and each company's health (additive: server/clients/health.ts).
      const keys = ['active', 'created_at', 'id', 'last_heartbeat_at', 'last_login_at', 'last_visit_at', 'name', 'shops_online', 'sites', 'slug', 'users'];
      for (const row of r.body) expect(Object.keys(row).sort()).toEqual(keys);
      const counted = r.body.find((x: { id: string }) => x.id === c.id);
      expect(counted).toEqual({
        id: c.id,
        slug: 'counted-co',
        name: 'Counted Co',
        sites: 0,
        users: 3,
        created_at: expect.stringMatching(/Z$/),
        active: true,
        shops_online: 0,
        last_heartbeat_at: null,
        last_visit_at: null,
        last_login_at: expect.stringMatching(/Z$/), // the owner signed in when the company was made
      });
      expect(r.body.find((x: { id: string }) => x.id === a.id)).toMatchObject({ slug: a.slug, users: 1 });
      const created = r.body.map((x: { created_at: string }) => x.created_at);
      expect(created).toEqual([...created].sort());
    });
  });

  describe('PATCH /api/admin/clients/{id}', () => {
    it('suspending revokes every session of the company at once and reports how many', async () => {
      const c = await h.company('Suspend Me');
      const staffEmail = fresh('staff');
      await addUser(h, c.id, staffEmail, 'staff', 'staff-password');
      const owner2 = await h.login(c.ownerEmail, c.ownerPassword, 'Second');
      const staff = await h.login(staffEmail, 'staff-password');
      const staff2 = await h.login(staffEmail, 'staff-password');
      await h.request('POST', '/api/auth/logout', { token: staff2.access_token }); // already revoked: not counted

      const r = await suspend(c.id);
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['client', 'sessions_revoked']);
      expect(r.body.sessions_revoked).toBe(3);
      expect(r.body.client).toEqual({ id: c.id, slug: c.slug, name: 'Suspend Me', sites: 0, users: 2, created_at: expect.any(String), active: false });

      for (const s of [c.owner, owner2, staff]) {
        const me = await h.request('GET', '/api/auth/me', { token: s.access_token });
        expect(me.status).toBe(401);
        expectEnvelope(me.body, 'unauthorized');
        expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: s.refresh_token } })).status).toBe(401);
      }
      const login = await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } });
      expect(login.status).toBe(403);
      expectEnvelope(login.body, 'forbidden');
      // Other companies are untouched.
      expect((await h.request('GET', '/api/auth/me', { token: a.ownerToken })).status).toBe(200);
      expect((await list()).find((x) => x.id === c.id)?.active).toBe(false);

      const again = await suspend(c.id);
      expect(again.body).toMatchObject({ client: { active: false }, sessions_revoked: 0 });
    });

    it('reactivating restores logins but no session', async () => {
      const c = await h.company('Back Again');
      const before = await h.login(c.ownerEmail, c.ownerPassword);
      expect((await suspend(c.id)).body.sessions_revoked).toBe(2);
      const r = await suspend(c.slug, true); // a slug works as well as the id
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ client: expect.objectContaining({ id: c.id, active: true }), sessions_revoked: 0 });
      for (const s of [c.owner, before]) {
        expect((await h.request('GET', '/api/auth/me', { token: s.access_token })).status).toBe(401);
        expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: s.refresh_token } })).status).toBe(401);
      }
      const s = await h.login(c.ownerEmail, c.ownerPassword);
      expect((await h.request('GET', '/api/auth/me', { token: s.access_token })).status).toBe(200);
    });

    it('unknown company 404; a bad body 400', async () => {
      const missing = await h.request('PATCH', `/api/admin/clients/${randomUUID()}`, { token: admin, body: { active: false } });
      expect(missing.status).toBe(404);
      expectEnvelope(missing.body, 'not_found');
      expect((await h.request('PATCH', '/api/admin/clients/no-such-slug', { token: admin, body: { active: false } })).status).toBe(404);
      for (const body of [{}, { active: 'no' }, { active: 0 }, { active: null }]) {
        const r = await h.request('PATCH', `/api/admin/clients/${b.id}`, { token: admin, body });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
        expect(r.body.message).toMatch(/^active: /);
      }
      expect((await list()).find((x) => x.id === b.id)?.active).toBe(true);
    });
  });

  describe('POST /api/admin/clients/{id}/owner-password', () => {
    it('one owner: a new password once, the old one dead, and every session that owner held revoked', async () => {
      const c = await h.company('Reset Co');
      const staffEmail = fresh('staff');
      await addUser(h, c.id, staffEmail, 'staff', 'staff-password');
      const staff = await h.login(staffEmail, 'staff-password');
      const r = await h.request('POST', `/api/admin/clients/${c.id}/owner-password`, { token: admin, body: {} });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ email: c.ownerEmail, password: expect.stringMatching(generatedRe) });
      const old = await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } });
      expect(old.status).toBe(401);
      expectEnvelope(old.body, 'bad_credentials');
      expect((await h.request('GET', '/api/auth/me', { token: c.ownerToken })).status).toBe(401);
      expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: c.owner.refresh_token } })).status).toBe(401);
      expect((await h.request('GET', '/api/auth/me', { token: staff.access_token })).status).toBe(200);
      await h.login(c.ownerEmail, r.body.password);
      // No body at all works too.
      const bare = await h.request('POST', `/api/admin/clients/${c.slug}/owner-password`, { token: admin });
      expect(bare.status).toBe(200);
      expect(bare.body.email).toBe(c.ownerEmail);
    });

    it('several owners: 400 listing them unless email says which; email must be one of them', async () => {
      const c = await h.company('Two Owners');
      const second = fresh('second-owner');
      await addUser(h, c.id, second, 'owner', 'second-password');
      const staffEmail = fresh('staff');
      await addUser(h, c.id, staffEmail, 'staff', 'staff-password');

      const r = await h.request('POST', `/api/admin/clients/${c.id}/owner-password`, { token: admin, body: {} });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: 'invalid_request', message: expect.any(String), owners: [c.ownerEmail, second] });
      expect(r.body.message).toContain(c.ownerEmail);
      expect(r.body.message).toContain(second);

      const chosen = await h.request('POST', `/api/admin/clients/${c.id}/owner-password`, { token: admin, body: { email: second.toUpperCase() } });
      expect(chosen.status).toBe(200);
      expect(chosen.body).toEqual({ email: second, password: expect.stringMatching(generatedRe) });
      await h.login(second, chosen.body.password);
      await h.login(c.ownerEmail, c.ownerPassword); // the other owner is untouched

      for (const email of [staffEmail, a.ownerEmail, 'nobody@new.test']) {
        const bad = await h.request('POST', `/api/admin/clients/${c.id}/owner-password`, { token: admin, body: { email } });
        expect(bad.status, email).toBe(400);
        expectEnvelope({ error: bad.body.error, message: bad.body.message }, 'invalid_request');
        expect(bad.body.owners).toEqual([c.ownerEmail, second]);
      }
      await h.login(staffEmail, 'staff-password');
      await h.login(a.ownerEmail, a.ownerPassword);

      const malformed = await h.request('POST', `/api/admin/clients/${c.id}/owner-password`, { token: admin, body: { email: 'not-an-email' } });
      expect(malformed.status).toBe(400);
      const missing = await h.request('POST', `/api/admin/clients/${randomUUID()}/owner-password`, { token: admin, body: {} });
      expect(missing.status).toBe(404);
      expectEnvelope(missing.body, 'not_found');
    });
  });

  describe('DELETE /api/admin/clients/{id}', () => {
    const del = (id: string, body?: unknown) => h.request('DELETE', `/api/admin/clients/${id}`, { token: admin, ...(body === undefined ? {} : { body }) });
    const userRows = async (companyId: string) => (await h.server.store.db.select().from(users).where(eq(users.companyId, companyId))).length;
    const sessionRows = async (companyId: string) => (await h.server.store.db.select().from(sessions).where(eq(sessions.companyId, companyId))).length;
    /** Face photos of the company where the store keeps them: files under its image folder, or rows on PostgreSQL. */
    async function storeImages(companyId: string, files: string[]) {
      const store = h.server.store;
      if (store.dialect === 'postgres') {
        for (const f of files) {
          const id = randomUUID();
          await statementOn(store, "insert into face_images (id, company_id, path, created_at) values (?, ?, '', now())").run(id, companyId);
          await statementOn(store, 'insert into face_image_bytes (face_image_id, jpeg) values (?, ?)').run(id, Buffer.from(`jpeg ${f}`));
        }
        return;
      }
      const dir = companyImagesDir(h.dataDir, companyId);
      for (const f of files) {
        fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        fs.writeFileSync(path.join(dir, f), 'jpeg');
      }
    }

    it('an active company is 409 still_active, confirm or not', async () => {
      const c = await h.company('Still Here');
      for (const body of [{ confirm: c.slug }, { confirm: 'wrong' }]) {
        const r = await del(c.id, body);
        expect(r.status).toBe(409);
        expectEnvelope(r.body, 'still_active');
      }
      expect(await userRows(c.id)).toBe(1);
    });

    it('confirm must be given and equal the slug', async () => {
      const c = await h.company('Confirm Me');
      await suspend(c.id);
      for (const body of [undefined, {}, { confirm: 'confirm-m' }, { confirm: a.slug }, { confirm: c.id }, { confirm: 5 }]) {
        const r = await del(c.id, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expectEnvelope(r.body, 'invalid_request');
        expect(r.body.message).toMatch(/confirm/);
      }
      expect(await userRows(c.id)).toBe(1);
      expect((await list()).some((x) => x.id === c.id)).toBe(true);
    });

    it('deletes a suspended company: stored images first (counted), then every row', async () => {
      const c = await h.company('Doomed Co');
      await addUser(h, c.id, fresh('doomed'), 'staff', 'staff-password');
      await storeImages(c.id, ['a.jpg', 'faces/b.jpg', 'faces/2024/c.jpg']);
      await storeImages(a.id, ['keep.jpg']);
      const kept = await storedFaces(h, a.id);
      expect(await storedFaces(h, c.id)).toBe(3);
      await suspend(c.id);
      expect(await userRows(c.id)).toBe(2);
      expect(await sessionRows(c.id)).toBe(1);

      const r = await del(c.id, { confirm: c.slug });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ deleted: c.slug, images_deleted: 3 });
      expect(await storedFaces(h, c.id)).toBe(0);
      expect(await storedFaces(h, a.id)).toBe(kept);
      expect(await userRows(c.id)).toBe(0);
      expect(await sessionRows(c.id)).toBe(0);
      expect((await statementOn(h.server.store, 'select count(*) as n from companies where id = ?').get<{ n: number }>(c.id))?.n).toBe(0);
      expect((await list()).some((x) => x.id === c.id)).toBe(false);
      const login = await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } });
      expect(login.status).toBe(401);
      expectEnvelope(login.body, 'bad_credentials');
      expect((await del(c.id, { confirm: c.slug })).status).toBe(404);
      expect((await suspend(c.id)).status).toBe(404);
      // The slug and the owner's address are free again.
      const again = await create({ company_name: 'Doomed Co', slug: c.slug, owner_email: c.ownerEmail, owner_name: 'New' });
      expect(again.status).toBe(201);
    });

    it('a company with no stored images reports images_deleted 0; the slug works in the path', async () => {
      const c = await h.company('No Images');
      await suspend(c.id);
      const r = await del(c.slug, { confirm: c.slug });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ deleted: c.slug, images_deleted: 0 });
    });

    // On PostgreSQL the photos are rows, deleted by the database: no folder to fail.
    it.skipIf(sqliteOnly('server/clients/clients.test.ts', 'an image folder that cannot be read'))('when the image store fails: 502 storage_error and nothing else is touched', async () => {
      const c = await h.company('Broken Store');
      await suspend(c.id);
      // A file where the company's image folder should be: the real purger cannot read it.
      fs.mkdirSync(path.join(h.dataDir, 'images'), { recursive: true });
      fs.writeFileSync(companyImagesDir(h.dataDir, c.id), 'not a folder');
      const r = await del(c.id, { confirm: c.slug });
      expect(r.status).toBe(502);
      expectEnvelope(r.body, 'storage_error');
      expect(await userRows(c.id)).toBe(1);
      expect((await list()).some((x) => x.id === c.id)).toBe(true);
      fs.rmSync(companyImagesDir(h.dataDir, c.id));
    });

    it('runs the purgers in order; the first failure stops later ones and keeps every row', async () => {
      const original = h.server.deps.purgers;
      const ran: string[] = [];
      const purger = (name: string, fail = false): CompanyPurger => ({
        name,
        failure: { status: 502, code: 'storage_error', message: `${name} failed` },
        async purge(companyId) {
          ran.push(name);
          // Rows are still there while purgers run.
          expect(await userRows(companyId)).toBeGreaterThan(0);
          if (fail) throw new Error(`${name} exploded`);
          return 4;
        },
      });
      try {
        const c = await h.company('Ordered Co');
        await storeImages(c.id, ['x.jpg']);
        await suspend(c.id);

        h.server.deps.purgers = [purger('images', true), purger('broker-logins')];
        const failed = await del(c.id, { confirm: c.slug });
        expect(failed.status).toBe(502);
        expect(failed.body).toEqual({ error: 'storage_error', message: 'images failed' });
        expect(ran).toEqual(['images']);
        expect(await userRows(c.id)).toBe(1);
        expect(await storedFaces(h, c.id)).toBe(1);
        expect((await list()).find((x) => x.id === c.id)?.active).toBe(false);

        ran.length = 0;
        h.server.deps.purgers = [purger('images'), purger('broker-logins', true)];
        const second = await del(c.id, { confirm: c.slug });
        expect(second.status).toBe(502);
        expect(ran).toEqual(['images', 'broker-logins']);
        expect(await userRows(c.id)).toBe(1);

        ran.length = 0;
        h.server.deps.purgers = [purger('images'), purger('broker-logins')];
        const ok = await del(c.id, { confirm: c.slug });
        expect(ok.status).toBe(200);
        expect(ok.body).toEqual({ deleted: c.slug, images_deleted: 4 });
        expect(ran).toEqual(['images', 'broker-logins']);
        expect(await userRows(c.id)).toBe(0);
      } finally {
        h.server.deps.purgers = original;
      }
    });
  });

  describe('who may call the admin routes', () => {
    let staffToken: string;
    let managerToken: string;
    let target: Company;
    beforeAll(async () => {
      const staffEmail = fresh('staff');
      const managerEmail = fresh('manager');
      await addUser(h, a.id, staffEmail, 'staff', 'staff-password');
      await addUser(h, a.id, managerEmail, 'manager', 'manager-password');
      staffToken = (await h.login(staffEmail, 'staff-password')).access_token;
      managerToken = (await h.login(managerEmail, 'manager-password')).access_token;
      target = await h.company('Target Co');
      await suspend(target.id);
    });

    it('every admin route is 404, exactly like an unknown route, to anyone but the platform admin', async () => {
      const routes: [string, string, unknown][] = [
        ['GET', '/api/admin/clients', undefined],
        ['POST', '/api/admin/clients', { company_name: 'Sneaky', owner_email: 'sneaky@new.test', owner_name: 'S' }],
        ['PATCH', `/api/admin/clients/${target.id}`, { active: true }],
        ['POST', `/api/admin/clients/${target.id}/owner-password`, {}],
        ['DELETE', `/api/admin/clients/${target.id}`, { confirm: target.slug }],
        ['PATCH', `/api/admin/clients/${a.id}`, { active: false }],
      ];
      const callers: [string, string | undefined][] = [
        ['no token', undefined],
        ['garbage token', 'garbage'],
        ['unknown access token', newToken('access')],
        ['shop-PC token', newToken('agent')],
        ['owner', a.ownerToken],
        ['manager', managerToken],
        ['staff', staffToken],
        ['owner of the target', target.ownerToken],
      ];
      for (const [method, p, body] of routes) {
        for (const [who, token] of callers) {
          const r = await h.request(method, p, { ...(token ? { token } : {}), ...(body === undefined ? {} : { body }) });
          expect(r.status, `${who}: ${method} ${p}`).toBe(404);
          expect(r.body, `${who}: ${method} ${p}`).toEqual({ error: 'not_found', message: `There is no ${method} ${p}.` });
        }
      }
      // Nothing happened.
      const now = await list();
      expect(now.find((x) => x.id === target.id)?.active).toBe(false);
      expect(now.find((x) => x.id === a.id)?.active).toBe(true);
      expect(now.some((x) => x.slug === 'sneaky')).toBe(false);
      expect((await h.request('GET', '/api/auth/me', { token: a.ownerToken })).status).toBe(200);
      // And the unknown route answers the same.
      const unknown = await h.request('GET', '/api/admin/nothing-here', { token: a.ownerToken });
      expect(unknown.body).toEqual({ error: 'not_found', message: 'There is no GET /api/admin/nothing-here.' });
      // A body that does not parse is no clue either: the same 404 (only a route that reads the body reports it).
      for (const token of [a.ownerToken, undefined]) {
        const bad = await h.request('POST', '/api/admin/clients', token ? { token, raw: '{"company_name":' } : { raw: '{"company_name":' });
        expect(bad.status).toBe(404);
        expect(bad.body).toEqual({ error: 'not_found', message: 'There is no POST /api/admin/clients.' });
      }
      const adminBad = await h.request('POST', '/api/admin/clients', { token: admin, raw: '{"company_name":' });
      expect(adminBad.status).toBe(400);
      expect(adminBad.body.error).toBe('invalid_request');
      // A method the admin router does not have is the same 404, not a 405 that would reveal the path.
      for (const token of [a.ownerToken, undefined]) {
        const put = await h.request('PUT', '/api/admin/clients', token ? { token, body: {} } : { body: {} });
        expect(put.status).toBe(404);
        expect(put.body).toEqual({ error: 'not_found', message: 'There is no PUT /api/admin/clients.' });
      }
    });

    it('the platform admin is 404 on tenant routes; tenant roles are strictly nested', async () => {
      // A tenant-only route built with the real auth() and policy rules, mounted on a copy of the app.
      const extra: AppRouter = new Router({ prefix: '/test-only' });
      extra.get('/tenant', auth(rule('staff', 'see this page')), (ctx) => {
        ctx.body = { tenant: tenantOf(ctx), role: actorOf(ctx).role };
      });
      extra.get('/managers', auth(rule('manager', 'see the managers page')), (ctx) => {
        ctx.body = { ok: true };
      });
      extra.get('/owners', auth(rule('owner', 'see the owners page')), (ctx) => {
        ctx.body = { ok: true };
      });
      extra.get('/people/:ref', auth(rule('staff', 'look people up')), async (ctx) => {
        ctx.body = { id: await resolve(ctx.deps.store.db, personRef, tenantOf(ctx), ctx.params.ref!, 'path') };
      });
      await withApp(h, extra, async (get) => {
        const byAdmin = await get('/test-only/tenant', admin);
        expect(byAdmin.status).toBe(404);
        expectEnvelope(byAdmin.body, 'not_found');
        expect((await get('/test-only/owners', admin)).status).toBe(404);
        expect((await get('/test-only/tenant', a.ownerToken)).body).toEqual({ tenant: a.id, role: 'owner' });
        expect((await get('/test-only/tenant', staffToken)).body).toEqual({ tenant: a.id, role: 'staff' });
        expect((await get('/test-only/tenant')).status).toBe(401);

        const staffOnManagers = await get('/test-only/managers', staffToken);
        expect(staffOnManagers.status).toBe(403);
        expect(staffOnManagers.body).toEqual({ error: 'forbidden', message: 'Only a manager or owner can see the managers page.' });
        expect((await get('/test-only/managers', managerToken)).status).toBe(200);
        expect((await get('/test-only/managers', a.ownerToken)).status).toBe(200);
        const managerOnOwners = await get('/test-only/owners', managerToken);
        expect(managerOnOwners.status).toBe(403);
        expect(managerOnOwners.body.message).toBe('Only an owner can see the owners page.');
        expect((await get('/test-only/owners', a.ownerToken)).status).toBe(200);
      });
    });

    it('cross-tenant: an owner of A can neither see nor touch anything of B', async () => {
      const extra: AppRouter = new Router({ prefix: '/test-only' });
      extra.get('/people/:ref', auth(rule('staff', 'look people up')), async (ctx) => {
        ctx.body = { id: await resolve(ctx.deps.store.db, personRef, tenantOf(ctx), ctx.params.ref!, 'path') };
      });
      await withApp(h, extra, async (get) => {
        expect((await get(`/test-only/people/${encodeURIComponent(a.ownerEmail)}`, a.ownerToken)).body).toEqual({ id: a.owner.user.id });
        for (const ref of [b.ownerEmail, b.owner.user.id]) {
          const r = await get(`/test-only/people/${encodeURIComponent(ref)}`, a.ownerToken);
          expect(r.status, ref).toBe(404);
          expectEnvelope(r.body, 'not_found');
        }
      });
      const bSessions = await h.request('GET', '/api/auth/sessions', { token: b.ownerToken });
      const bSession = bSessions.body.find((s: { current: boolean }) => s.current).id;
      const aSessions = await h.request('GET', '/api/auth/sessions', { token: a.ownerToken });
      expect(aSessions.body.some((s: { id: string }) => s.id === bSession)).toBe(false);
      const del = await h.request('DELETE', `/api/auth/sessions/${bSession}`, { token: a.ownerToken });
      expect(del.status).toBe(404);
      expectEnvelope(del.body, 'not_found');
      expect((await h.request('GET', '/api/auth/me', { token: b.ownerToken })).body.client_id).toBe(b.id);
      expect((await h.request('GET', '/api/admin/clients', { token: a.ownerToken })).status).toBe(404);
    });
  });
});

/** Runs `fn` against a copy of the real app with one extra (test-only) router mounted after the real ones. */
async function withApp(h: Harness, extra: AppRouter, fn: (get: (p: string, token?: string) => Promise<{ status: number; body: any }>) => Promise<void>) {
  const app = buildApp(h.server.deps);
  app.use(extra.routes());
  const server = http.createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await fn(async (p, token) => {
      const res = await fetch(base + p, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
      return { status: res.status, body: await res.json() };
    });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}
