import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_ROUTES, AgentIdentity, CameraList, EnrolResponse } from '../../shared/agent-api.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addCamera, enrol, enrolmentCode, jpeg, memberToken, openShop, upload } from '../../test/support/shop-pc.js';
import { storedFace } from '../../test/support/pictures.js';
import { agentRoutes } from './routes.js';
import { auditLog, enrolmentCodes } from '../db/tables.js';

describe('shop-PC routes', () => {
  let h: Harness;
  let owner: string;
  let manager: string;
  let companyId: string;
  let shop: any;

  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_IMAGES: 'local' });
    const c = await h.company('Agent Co');
    owner = c.ownerToken;
    companyId = c.id;
    manager = await memberToken(h, owner, 'manager');
    shop = await openShop(h, owner, { name: 'Agent Shop', timezone: 'Europe/London' });
  });
  afterAll(() => h.close());

  it('there are exactly the ten documented routes', () => {
    const routes = agentRoutes()
      .stack.filter((l) => l.methods.length > 0)
      .flatMap((l) => l.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${String(l.path).replace(/:(\w+)/g, '{$1}')}`));
    expect(routes.sort()).toEqual(Object.values(AGENT_ROUTES).sort());
  });

  it('enrolment: the code (any case, any dashes) gives a token and broker login matching the contract; single use; audited', async () => {
    const code = await enrolmentCode(h, manager, shop.slug, { label: 'till' });
    const typed = code.toLowerCase().replace(/-/g, ' ');
    const r = await h.request('POST', '/api/agent/enrol', { body: { code: typed, hostname: 'till-pc-1', agent_version: '1.0.0' } });
    expect(r.status).toBe(201);
    expect(EnrolResponse.safeParse(r.body).success).toBe(true);
    expect(r.body).toMatchObject({
      token: expect.stringMatching(/^ffs_/),
      site: { id: shop.site_id, slug: 'agent-shop', name: 'Agent Shop', timezone: 'Europe/London' },
      company: { slug: 'agent-co', name: 'Agent Co' },
      broker: { host: null, port: h.server.mqttPort, username: 'agent-co.agent-shop', client_id: 'agent-co.agent-shop', topic_prefix: 'ff/agent-co/agent-shop/', password: expect.any(String) },
      images: 'local',
    });
    const again = await h.request('POST', '/api/agent/enrol', { body: { code } });
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('invalid_code');
    const audit = await h.server.store.db.select().from(auditLog).where(eq(auditLog.action, 'shop.enrol'));
    expect(audit.at(-1)).toMatchObject({ companyId, target: shop.site_id, detail: expect.objectContaining({ hostname: 'till-pc-1', code_requested_by: expect.stringMatching(/^manager-/) }) });
    const me = await h.request('GET', '/api/agent/me', { token: r.body.token });
    expect(me.status).toBe(200);
    expect(AgentIdentity.safeParse(me.body).success).toBe(true);
    expect(me.body.broker.password).toBeUndefined();
    const sites = await h.request('GET', '/api/sites', { token: owner });
    expect(sites.body.find((s: any) => s.site_id === shop.site_id)).toMatchObject({ enrolled_at: expect.any(String), agent_version: '1.0.0' });
  });

  it('enrolment: wrong, malformed and expired codes are all invalid_code; a bad body is 400', async () => {
    for (const code of ['AAAAAA-BBBBBB-CCCCCC-DDDDDD', 'short', 'x'.repeat(64)]) {
      const r = await h.request('POST', '/api/agent/enrol', { body: { code } });
      expect(r.status, code).toBe(404);
      expect(r.body).toEqual({ error: 'invalid_code', message: expect.any(String) });
    }
    const code = await enrolmentCode(h, manager, shop.slug);
    const row = (await h.server.store.db.select().from(enrolmentCodes)).at(-1)!;
    await h.server.store.db.update(enrolmentCodes).set({ expiresAt: new Date(Date.now() - 1000).toISOString() }).where(eq(enrolmentCodes.id, row.id));
    const expired = await h.request('POST', '/api/agent/enrol', { body: { code } });
    expect(expired.status).toBe(404);
    expect(expired.body.error).toBe('invalid_code');
    for (const body of [{}, { code: 42 }, { code: '' }]) {
      const r = await h.request('POST', '/api/agent/enrol', { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    }
    expect((await h.request('POST', '/api/agent/enrol', { raw: '{"code":' })).status).toBe(400);
  });

  it('agent routes take only the shop PC token; user routes refuse it', async () => {
    const e = await enrol(h, manager, shop.slug);
    const paths: [string, string][] = [
      ['GET', '/api/agent/me'],
      ['GET', '/api/agent/cameras'],
      ['POST', '/api/agent/cameras/state'],
      ['PUT', '/api/agent/cameras/x/snapshot'],
      ['POST', '/api/agent/faces'],
      ['POST', '/api/agent/checks/claim'],
      ['POST', '/api/agent/checks/0b9e0b9e-0b9e-4b9e-8b9e-0b9e0b9e0b9e/answer'],
      ['GET', '/api/agent/live'],
      ['POST', '/api/agent/live/x/frames'],
    ];
    for (const [method, p] of paths) {
      const user = await h.request(method, p, { token: owner, body: method === 'GET' ? undefined : {} });
      expect(user.status, `${method} ${p}`).toBe(401);
      expect(user.body.message).toMatch(/never a user session/);
      expect((await h.request(method, p)).status).toBe(401);
      expect((await h.request(method, p, { token: 'ffs_forged' })).status).toBe(401);
    }
    for (const [method, p] of [
      ['GET', '/api/sites'],
      ['GET', '/api/cameras'],
      ['GET', '/api/auth/me'],
    ] as const) {
      const r = await h.request(method, p, { token: e.token });
      expect(r.status).toBe(401);
      expect(r.body.message).toMatch(/Shop-PC tokens/);
    }
  });

  it('camera list: present cameras in full, tombstones listed as removed', async () => {
    const e = await enrol(h, manager, shop.slug);
    const a = await addCamera(h, manager, shop.slug, { camera_id: 'a', password: 'pa', tuning: { min_face_px: 40 } });
    const b = await addCamera(h, manager, shop.slug, { camera_id: 'b', enabled: false });
    await h.request('DELETE', `/api/cameras/${b.id}`, { token: manager });
    const list = await h.request('GET', '/api/agent/cameras', { token: e.token });
    expect(list.status).toBe(200);
    expect(CameraList.safeParse(list.body).success).toBe(true);
    expect(list.body.cameras).toEqual([expect.objectContaining({ id: a.id, camera_id: 'a', password: 'pa', enabled: true, tuning: { detect_fps: 8, min_face_px: 40, rotate: 0, role: 'faces' } })]);
    expect(list.body.removed).toEqual([{ id: b.id, camera_id: 'b', removed_at: expect.any(String) }]);
    await h.request('DELETE', `/api/cameras/${a.id}`, { token: manager });
  });

  it('face images: stored under the company with a random id; bad bodies refused; 501 when images are off', async () => {
    const e = await enrol(h, manager, shop.slug);
    const face = await jpeg(112, 112);
    const r = await upload(h, 'POST', '/api/agent/faces', e.token, face);
    expect(r.status).toBe(201);
    expect(r.body.face_image_id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect((await storedFace(h, companyId, r.body.face_image_id))?.equals(face)).toBe(true);
    const second = await upload(h, 'POST', '/api/agent/faces', e.token, face);
    expect(second.body.face_image_id).not.toBe(r.body.face_image_id);
    expect((await upload(h, 'POST', '/api/agent/faces', e.token, face, 'application/octet-stream')).status).toBe(415);
    expect((await upload(h, 'POST', '/api/agent/faces', e.token, JSON.stringify({ a: 1 }), 'application/json')).status).toBe(415);
    expect((await upload(h, 'POST', '/api/agent/faces', e.token, Buffer.from('GIF89a....'))).status).toBe(400);
    expect((await upload(h, 'POST', '/api/agent/faces', e.token, Buffer.concat([face, Buffer.alloc(600 * 1024)]))).status).toBe(413);
    const config = h.server.deps.config;
    config.FOOTFALL_IMAGES = 'off';
    try {
      const off = await upload(h, 'POST', '/api/agent/faces', e.token, face);
      expect(off.status).toBe(501);
      expect(off.body.error).toBe('images_disabled');
    } finally {
      config.FOOTFALL_IMAGES = 'local';
    }
  });

  it('live: nothing is watched, so no demands and uploads are told to stop', async () => {
    const e = await enrol(h, manager, shop.slug);
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'live-idle' });
    expect((await h.request('GET', '/api/agent/live', { token: e.token })).body).toEqual({ cameras: [] });
    const r = await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, e.token, await jpeg());
    expect(r.body).toEqual({ watching: false, until: null });
    expect((await upload(h, 'POST', '/api/agent/live/nope/frames', e.token, await jpeg())).status).toBe(404);
    expect((await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, e.token, Buffer.from('nope'))).status).toBe(400);
  });

  it('503 no_encryption_key: enrolment and camera pulls with passwords need the key', async () => {
    const { unusableKeys } = await import('../crypto/keys.js');
    const e = await enrol(h, manager, shop.slug);
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'locked', password: 'pw' });
    const code = await enrolmentCode(h, manager, shop.slug);
    const deps = h.server.deps;
    const keys = deps.keys;
    deps.keys = unusableKeys('test');
    try {
      expect((await h.request('POST', '/api/agent/enrol', { body: { code } })).body.error).toBe('no_encryption_key');
      const pull = await h.request('GET', '/api/agent/cameras', { token: e.token });
      expect(pull.status).toBe(503);
      expect(pull.body.error).toBe('no_encryption_key');
    } finally {
      deps.keys = keys;
    }
    // The code was not spent by the refused attempt.
    expect((await h.request('POST', '/api/agent/enrol', { body: { code } })).status).toBe(201);
    await h.request('DELETE', `/api/cameras/${cam.id}`, { token: manager });
  });
});
