import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrolResponse } from '../../shared/agent-api.js';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { addCamera, connectPc, enrol, heartbeat, memberToken, openShop, waitFor } from '../../test/support/shop-pc.js';
import { shops, cameras } from '../db/tables.js';

const LINE = { a: [0.1, 0.5], b: [0.9, 0.5], inside: 'right' };

/** Camera roles (tuning.role) and counting health (Camera.counting), over real HTTP and the real broker. */
describe('camera roles and counting health', () => {
  let h: Harness;
  let c: Company;
  let staff: string;
  let shop: any;
  let e: EnrolResponse;
  let pc: MqttClient;
  const cams: Record<string, any> = {};

  const list = async () => {
    const r = await h.request('GET', '/api/cameras', { token: staff });
    expect(r.status).toBe(200);
    return Object.fromEntries(r.body.map((x: any) => [x.camera_id, x]));
  };
  const publish = (kind: 'heartbeat' | 'crossing', body: unknown) => pc.publishAsync(upTopic(c.slug, shop.slug, kind), JSON.stringify(body), { qos: 1 });

  beforeAll(async () => {
    h = await startHarness();
    c = await h.company('Roles Co');
    staff = await memberToken(h, c.ownerToken, 'staff');
    shop = await openShop(h, c.ownerToken, { name: 'Roles Street' });
    e = await enrol(h, c.ownerToken, shop.slug);
    pc = await connectPc(h, e);
    cams.entrance = await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'entrance' });
    cams.door = await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'door', tuning: { line: LINE } });
    cams.walkway = await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'walkway', label: 'Walkway', tuning: { line: LINE, role: 'both' } });
    cams.side = await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'side', tuning: { role: 'door' } });
  });
  afterAll(async () => {
    await pc?.endAsync(true).catch(() => {});
    await h?.close();
  });

  it('roles: absent means door with a line and faces without; set, validated with the error envelope, and carried to the shop PC', async () => {
    expect(cams.entrance.tuning.role).toBe('faces');
    expect(cams.entrance.counting).toBeNull();
    expect(cams.door.tuning.role).toBe('door');
    expect(cams.door.counting).toMatchObject({ role: 'door', counted_last_hour: 0, last_crossing_at: null, detector_keeps_up: null, stats: null });
    expect(cams.walkway.counting).toMatchObject({ role: 'both' });
    // A door role without a line counts nobody, and says so.
    expect(cams.side.counting).toMatchObject({ role: 'door', state: 'no_line', problem: expect.stringMatching(/^No counting line/) });

    for (const [body, message] of [
      [{ tuning: { role: 'count' } }, /^tuning\.role: must be "faces" \(recognise faces\), "door" \(count entries and exits only\) or "both"$/],
      [{ tuning: { role: null } }, /^tuning\.role: /],
      [{ tuning: { role: 1 } }, /^tuning\.role: /],
    ] as const) {
      const r = await h.request('PATCH', `/api/cameras/${cams.door.id}`, { token: c.ownerToken, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(message) });
    }
    const created = await h.request('POST', `/api/sites/${shop.slug}/cameras`, { token: c.ownerToken, body: { camera_id: 'x', host: '10.0.0.9', tuning: { role: 'everything' } } });
    expect(created.status).toBe(400);
    expect(created.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(/^tuning\.role: /) });
    expect((await h.request('PATCH', `/api/cameras/${cams.door.id}`, { token: staff, body: { tuning: { role: 'both' } } })).status).toBe(403);

    // faces: the line is kept but not counted; back to door.
    let r = await h.request('PATCH', `/api/cameras/${cams.door.id}`, { token: c.ownerToken, body: { tuning: { role: 'faces' } } });
    expect(r.status).toBe(200);
    expect(r.body.tuning).toMatchObject({ role: 'faces', line: LINE });
    expect(r.body.counting).toBeNull();
    r = await h.request('PATCH', `/api/cameras/${cams.door.id}`, { token: c.ownerToken, body: { tuning: { role: 'door' } } });
    expect(r.body.counting).toMatchObject({ role: 'door' });
    const pulled = (await h.request('GET', '/api/agent/cameras', { token: e.token })).body.cameras;
    expect(Object.fromEntries(pulled.map((x: any) => [x.camera_id, x.tuning.role]))).toEqual({ entrance: 'faces', door: 'door', walkway: 'both', side: 'door' });
  });

  it("counting health: the last hour's crossings, the last crossing, and whether the detector keeps up (heartbeat `doors`)", async () => {
    const state = await h.request('POST', '/api/agent/cameras/state', {
      token: e.token,
      body: { cameras: ['entrance', 'door', 'walkway', 'side'].map((camera) => ({ camera, connected: true })) },
    });
    expect(state.status).toBe(200);
    const old = new Date(Date.now() - 2 * 3_600_000).toISOString();
    const recent = new Date(Date.now() - 60_000).toISOString();
    await publish('crossing', { crossing_id: randomUUID(), occurred_at: old, camera_id: 'door', direction: 'in' });
    for (const direction of ['in', 'in', 'out'] as const) await publish('crossing', { crossing_id: randomUUID(), occurred_at: recent, camera_id: 'door', direction });
    const stats = (id: string, skipped: number, analysed: number) => ({ camera_id: id, window_s: 300, frames: 3000, paced: 1000, held: 2000 - skipped - analysed, skipped, analysed, in: 2, out: 1 });
    await publish('heartbeat', heartbeat({ cameras_up: 4, cameras_total: 4, doors: [stats('door', 12, 388), stats('walkway', 300, 300), stats('gone', 0, 0)] }));
    const all = await waitFor(async () => {
      const x = await list();
      return x.door.counting.stats ? x : undefined;
    }).then((x) => x!);
    expect(all.door.counting).toMatchObject({
      state: 'counting',
      problem: null,
      counted_last_hour: 3,
      entries_last_hour: 2,
      exits_last_hour: 1,
      last_crossing_at: recent,
      detector_keeps_up: true,
      frames_dropped_share: 0.03,
      stats: { window_s: 300, frames: 3000, skipped: 12, analysed: 388 },
    });
    expect(all.walkway.counting).toMatchObject({ state: 'counting', detector_keeps_up: false, frames_dropped_share: 0.5, problem: expect.stringMatching(/drops 50% of this camera's frames/) });
    expect(all.entrance.counting).toBeNull();
  });

  it('a door that counts nobody for an hour while other cameras see people is not_counting, on the camera and on the shop', async () => {
    const db = h.server.store.db;
    // The walkway's line has been in place for two hours; the door counted people in the last hour, the walkway none.
    await db.update(cameras).set({ updatedAt: new Date(Date.now() - 2 * 3_600_000).toISOString() }).where(eq(cameras.id, cams.walkway.id));
    let all = await list();
    expect(all.walkway.counting).toMatchObject({ state: 'not_counting', counted_last_hour: 0, problem: expect.stringMatching(/^Counted nobody in the last hour while door counted people/) });
    expect(all.door.counting.state).toBe('counting');
    let site = (await h.request('GET', `/api/sites/${shop.slug}`, { token: staff })).body;
    expect(site.door_counting_problem).toMatch(/^Walkway counted nobody in the last hour while the shop's other cameras saw people/);
    expect((await h.request('GET', '/api/sites', { token: staff })).body.find((s: any) => s.slug === shop.slug).door_counting_problem).toBe(site.door_counting_problem);
    // The shop check fails its cameras step on it, as for a camera that does not connect.
    const check = await h.request('GET', `/api/sites/${shop.slug}/check`, { token: staff });
    expect(check.status).toBe(200);
    expect(check.body.ok).toBe(false);
    expect(check.body.steps[2]).toMatchObject({ name: 'Cameras are connected', status: 'fail', detail: expect.stringMatching(/^1 camera connected but not counting entries: Walkway \(Counted nobody/) });

    // The shop PC's own words come first.
    await publish('heartbeat', heartbeat({ cameras_up: 4, cameras_total: 4, door_counting_problem: 'person detector would not load: no model' }));
    site = await waitFor(async () => {
      const s = (await h.request('GET', `/api/sites/${shop.slug}`, { token: staff })).body;
      return s.door_counting_problem?.startsWith('person detector') ? s : undefined;
    }).then((x) => x!);
    all = await list();
    expect(all.door.counting).toMatchObject({ state: 'not_counting', problem: 'The shop PC is not counting: person detector would not load: no model.' });

    // An offline shop PC: unknown, not a false alarm.
    await db.update(shops).set({ lastHeartbeatAt: new Date(Date.now() - 3_600_000).toISOString(), doorCountingProblem: null }).where(eq(shops.id, shop.site_id));
    all = await list();
    expect(all.walkway.counting).toMatchObject({ state: 'unknown', detector_keeps_up: null });
    expect((await h.request('GET', `/api/sites/${shop.slug}`, { token: staff })).body.door_counting_problem).toBeNull();
  });
});
