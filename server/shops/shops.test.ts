import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolmentCodePattern } from '../../shared/agent-api.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addCamera, enrol, memberToken, openShop, upload, jpeg } from '../../test/support/shop-pc.js';
import { unusableKeys } from '../crypto/keys.js';
import { eq } from 'drizzle-orm';
import { embeddedOf } from '../broker/embedded.js';
import { auditLog } from '../db/tables.js';
import { storedCameraPictures } from '../../test/support/pictures.js';

describe('shops over HTTP', () => {
  let h: Harness;
  let owner: string;
  let manager: string;
  let staff: string;
  let other: string; // owner of another company
  let companyId: string;

  beforeAll(async () => {
    h = await startHarness();
    const c = await h.company('Chai Point');
    owner = c.ownerToken;
    companyId = c.id;
    [manager, staff, other] = await Promise.all([memberToken(h, owner, 'manager'), memberToken(h, owner, 'staff'), h.company('Other Co').then((o) => o.ownerToken)]);
  });
  afterAll(() => h.close());

  it('opens a shop: slug derived from the name, default timezone, broker login named after both slugs', async () => {
    const r = await h.request('POST', '/api/sites', { token: owner, body: { name: 'Andheri West #1' } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ site_id: expect.any(String), slug: 'andheri-west-1', name: 'Andheri West #1', timezone: 'Asia/Kolkata', broker_username: 'chai-point.andheri-west-1' });
    const list = await h.request('GET', '/api/sites', { token: staff });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      expect.objectContaining({
        site_id: r.body.site_id,
        slug: 'andheri-west-1',
        online: false,
        last_heartbeat_at: null,
        last_event_at: null,
        recognition_model: '',
        agent_version: '',
        cameras_up: 0,
        cameras_total: 0,
        fraction_below_gate: null,
        queued: 0,
        dropped: 0,
      }),
    ]);
    // The admin's company list counts shops.
    const admin = await h.request('GET', '/api/admin/clients', { token: await h.adminToken() });
    expect(admin.body.find((c: any) => c.id === companyId).sites).toBe(1);
  });

  it('slug rules: given slugs are validated, taken ones conflict, derived ones get a suffix', async () => {
    expect((await h.request('POST', '/api/sites', { token: owner, body: { name: 'X', slug: 'ab' } })).status).toBe(400);
    expect((await h.request('POST', '/api/sites', { token: owner, body: { name: 'X', slug: 'Bad Slug' } })).body.error).toBe('invalid_request');
    expect((await h.request('POST', '/api/sites', { token: owner, body: { name: '!!' } })).status).toBe(400);
    const a = await openShop(h, owner, { name: 'Bandra', slug: 'Bandra' });
    expect(a.slug).toBe('bandra');
    const dup = await h.request('POST', '/api/sites', { token: owner, body: { name: 'Other', slug: 'bandra' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('conflict');
    const b = await openShop(h, owner, { name: 'Bandra' });
    expect(b.slug).toBe('bandra-2');
    // Another company may use the same slug.
    const o = await openShop(h, other, { name: 'Bandra' });
    expect(o.slug).toBe('bandra');
    expect(o.broker_username).not.toBe(a.broker_username);
  });

  it('timezones: IANA names only, canonical spelling kept', async () => {
    const ok = await openShop(h, owner, { name: 'London', timezone: 'europe/london' });
    expect(ok.timezone).toBe('Europe/London');
    expect((await openShop(h, owner, { name: 'Kolkata', timezone: 'Asia/Kolkata' })).timezone).toBe('Asia/Kolkata');
    expect((await openShop(h, owner, { name: 'Utc', timezone: 'UTC' })).timezone).toBe('UTC');
    for (const timezone of ['Mars/Olympus', '+05:30', 'IST ', 'EST5EDT', 'Asia/Nowhere', '']) {
      const r = await h.request('POST', '/api/sites', { token: owner, body: { name: 'Tz Shop', timezone } });
      if (timezone.trim() === '') expect(r.status).toBe(201);
      else expect(r.status, timezone).toBe(400);
    }
  });

  it('roles: only owners open and remove shops; managers create codes; staff read', async () => {
    const forbidden = await h.request('POST', '/api/sites', { token: manager, body: { name: 'Nope' } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ error: 'forbidden', message: 'Only an owner can open shops.' });
    const shop = await openShop(h, owner, { name: 'Roles' });
    expect((await h.request('DELETE', `/api/sites/${shop.slug}`, { token: manager })).status).toBe(403);
    expect((await h.request('POST', `/api/sites/${shop.slug}/enrolment-code`, { token: staff, body: {} })).status).toBe(403);
    expect((await h.request('POST', `/api/sites/${shop.slug}/enrolment-code`, { token: manager, body: {} })).status).toBe(201);
    expect((await h.request('GET', `/api/sites/${shop.slug}/check`, { token: staff })).status).toBe(200);
    // No session: 401; the platform admin: 404 on tenant routes.
    expect((await h.request('GET', '/api/sites')).status).toBe(401);
    expect((await h.request('GET', '/api/sites', { token: await h.adminToken() })).status).toBe(404);
  });

  it('another tenant: every shop route answers 404, and lists never show its shops', async () => {
    const mine = await openShop(h, owner, { name: 'Private' });
    for (const ref of [mine.slug, mine.site_id]) {
      expect((await h.request('DELETE', `/api/sites/${ref}`, { token: other })).status).toBe(404);
      expect((await h.request('GET', `/api/sites/${ref}/check`, { token: other })).status).toBe(404);
      expect((await h.request('POST', `/api/sites/${ref}/enrolment-code`, { token: other, body: {} })).status).toBe(404);
      expect((await h.request('POST', `/api/sites/${ref}/cameras`, { token: other, body: { camera_id: 'c1', host: 'cam.local' } })).status).toBe(404);
    }
    const theirs = await h.request('GET', '/api/sites', { token: other });
    expect(theirs.body.map((s: any) => s.site_id)).not.toContain(mine.site_id);
  });

  it('enrolment codes: four groups of six, default and maximum days, audited with the requester', async () => {
    const shop = await openShop(h, owner, { name: 'Codes' });
    const r = await h.request('POST', `/api/sites/${shop.slug}/enrolment-code`, { token: manager, body: { label: 'till PC' } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ code: expect.stringMatching(enrolmentCodePattern), site_id: shop.site_id, site_name: 'Codes', label: 'till PC', expires_at: expect.any(String) });
    const days = (Date.parse(r.body.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.99);
    expect(days).toBeLessThan(7.01);
    const thirty = await h.request('POST', `/api/sites/${shop.slug}/enrolment-code`, { token: manager, body: { days: 30 } });
    expect(thirty.status).toBe(201);
    for (const days of [31, 0, 1.5, 'x']) {
      const bad = await h.request('POST', `/api/sites/${shop.slug}/enrolment-code`, { token: manager, body: { days } });
      expect(bad.status, String(days)).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
    const rows = await h.server.store.db.select().from(auditLog).where(eq(auditLog.action, 'shop.enrolment_code'));
    const row = rows.find((a) => a.target === shop.site_id && (a.detail as any).label === 'till PC');
    expect(row?.actorEmail).toMatch(/^manager-/);
    expect(JSON.stringify(rows)).not.toContain(r.body.code);
  });

  it('removing a shop: owner only, refused while it has cameras (site_not_empty), then 200 and gone', async () => {
    const shop = await openShop(h, owner, { name: 'Removable' });
    const cam = await addCamera(h, owner, shop.slug, { camera_id: 'door' });
    const blocked = await h.request('DELETE', `/api/sites/${shop.slug}`, { token: owner });
    expect(blocked.status).toBe(409);
    expect(blocked.body.error).toBe('site_not_empty');
    expect((await h.request('DELETE', `/api/cameras/${cam.id}`, { token: owner })).status).toBe(200);
    const gone = await h.request('DELETE', `/api/sites/${shop.site_id}`, { token: owner });
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ deleted: 'removable', site_id: shop.site_id });
    expect((await h.request('GET', `/api/sites/${shop.slug}/check`, { token: owner })).status).toBe(404);
    // The slug is free again.
    expect((await openShop(h, owner, { name: 'Removable' })).slug).toBe('removable');
  });

  it('bad input answers the envelope, never 500', async () => {
    const cases: [string, string, unknown][] = [
      ['POST', '/api/sites', {}],
      ['POST', '/api/sites', { name: 42 }],
      ['POST', '/api/sites', { name: 'x'.repeat(201) }],
      ['POST', '/api/sites', { name: 'Ok', slug: 7 }],
      ['POST', '/api/sites', []],
      ['POST', '/api/sites/nope/enrolment-code', { days: 3 }],
      ['GET', '/api/sites/%E0%A4%A/check', undefined],
    ];
    for (const [method, p, body] of cases) {
      const r = await h.request(method, p, { token: owner, body });
      expect(r.status, `${method} ${p} ${JSON.stringify(body)}`).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body).toEqual({ error: expect.any(String), message: expect.any(String) });
    }
    const malformed = await h.request('POST', '/api/sites', { token: owner, raw: '{"name":' });
    expect(malformed.status).toBe(400);
  });

  it('503 no_encryption_key when the server has no usable key; nothing is created', async () => {
    const deps = h.server.deps;
    const keys = deps.keys;
    deps.keys = unusableKeys('test: key file unreadable');
    try {
      const before = (await h.request('GET', '/api/sites', { token: owner })).body.length;
      const r = await h.request('POST', '/api/sites', { token: owner, body: { name: 'Keyless' } });
      expect(r.status).toBe(503);
      expect(r.body.error).toBe('no_encryption_key');
      expect((await h.request('GET', '/api/sites', { token: owner })).body.length).toBe(before);
      const code = await h.request('POST', '/api/sites/bandra/enrolment-code', { token: owner, body: {} });
      expect(code.status).toBe(503);
      const cam = await h.request('POST', '/api/sites/bandra/cameras', { token: owner, body: { camera_id: 'k1', host: 'cam', password: 'pw' } });
      expect(cam.status).toBe(503);
      expect((await h.request('GET', '/api/cameras', { token: owner })).body.map((c: any) => c.camera_id)).not.toContain('k1');
    } finally {
      deps.keys = keys;
    }
  });

  it('company deletion removes shop logins and camera pictures, then the rows', async () => {
    const c = await h.company('Doomed Co');
    const shop = await openShop(h, c.ownerToken, { name: 'Doomed' });
    const cam = await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'cam' });
    const e = await enrol(h, c.ownerToken, shop.slug);
    expect((await upload(h, 'PUT', `/api/agent/cameras/${cam.id}/snapshot`, e.token, await jpeg())).status).toBe(200);
    expect(await storedCameraPictures(h, c.id)).toBe(1);
    const admin = await h.adminToken();
    expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: false } })).status).toBe(200);
    const del = await h.request('DELETE', `/api/admin/clients/${c.id}`, { token: admin, body: { confirm: c.slug } });
    expect(del.status).toBe(200);
    expect(await storedCameraPictures(h, c.id)).toBe(0);
    expect(await h.server.deps.shopLogins.authenticate(e.broker.username, e.broker.password)).toBe(false);
    expect((await h.request('GET', '/api/agent/me', { token: e.token })).status).toBe(401);
  });
});

describe('broker refusal', () => {
  it('502 broker_unavailable and nothing created when the broker is closed', async () => {
    const h = await startHarness();
    try {
      const c = await h.company('Brokerless');
      await new Promise<void>((resolve) => embeddedOf(h.server.broker).aedes.close(() => resolve()));
      const r = await h.request('POST', '/api/sites', { token: c.ownerToken, body: { name: 'Never' } });
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ error: 'broker_unavailable', message: expect.stringContaining('nothing was created') });
      expect((await h.request('GET', '/api/sites', { token: c.ownerToken })).body).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
