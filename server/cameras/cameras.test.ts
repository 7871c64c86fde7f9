import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';
import { downFilter } from '../../shared/topics.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addCamera, connectPc, enrol, inbox, jpeg, memberToken, openShop, upload } from '../../test/support/shop-pc.js';
import { eq } from 'drizzle-orm';
import { one } from '../db/query.js';
import { cameras } from '../db/tables.js';

describe('cameras', () => {
  let h: Harness;
  let owner: string;
  let manager: string;
  let staff: string;
  let other: string;
  let company: string;
  let shop: any;
  let shop2: any;
  let e: Awaited<ReturnType<typeof enrol>>;
  let pc: MqttClient;
  let box: ReturnType<typeof inbox>;

  beforeAll(async () => {
    h = await startHarness();
    const c = await h.company('Cam Co');
    owner = c.ownerToken;
    company = c.slug;
    [manager, staff, other] = await Promise.all([memberToken(h, owner, 'manager'), memberToken(h, owner, 'staff'), h.company('Cam Rival').then((o) => o.ownerToken)]);
    shop = await openShop(h, owner, { name: 'Main Street' });
    shop2 = await openShop(h, owner, { name: 'High Street' });
    e = await enrol(h, manager, shop.slug);
    pc = await connectPc(h, e);
    box = inbox(pc);
    await pc.subscribeAsync(downFilter(company, shop.slug), { qos: 1 });
  });
  afterAll(async () => {
    await pc.endAsync(true);
    await h.close();
  });

  it('adds a camera with defaults; the password is never returned; connected is null until reported', async () => {
    const since = box.seen.length;
    const r = await h.request('POST', `/api/sites/${shop.slug}/cameras`, {
      token: manager,
      body: { camera_id: 'entrance', host: '192.168.1.64', username: 'admin', password: 's3cret!', path: '/Streaming/Channels/101' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.any(String),
      site_id: shop.site_id,
      site: 'Main Street',
      site_slug: 'main-street',
      camera_id: 'entrance',
      label: 'entrance',
      host: '192.168.1.64',
      port: 554,
      path: '/Streaming/Channels/101',
      username: 'admin',
      has_password: true,
      max_width: 1280,
      tuning: { detect_fps: 8, min_face_px: 64, rotate: 0, role: 'faces' },
      enabled: true,
      revision: 1,
      connected: null,
      connection_reason: null,
      last_seen_at: null,
      snapshot: { available: false, url: `/api/cameras/${r.body.id}/snapshot.jpg`, auth: true, reason: expect.any(String) },
      snapshot_at: null,
      check: expect.objectContaining({ kind: '', state: 'absent', ok: false, verdict: '', advice: expect.any(Array), image: expect.objectContaining({ available: false }) }),
      counting: null,
    });
    expect(JSON.stringify(r.body)).not.toContain('s3cret');
    // Sealed at rest.
    const row = (await one(h.server.store.db.select().from(cameras).where(eq(cameras.id, r.body.id))))!;
    expect(row.password).toMatch(/^v1:/);
    expect(row.password).not.toContain('s3cret');
    // The shop PC is told, and its pull carries the password in clear.
    await box.next((m) => m.topic.endsWith('/down/cameras') && m.body.kind === 'cameras_changed', 3000, since);
    const list = await h.request('GET', '/api/agent/cameras', { token: e.token });
    expect(list.body.cameras.find((c: any) => c.id === r.body.id)).toMatchObject({ camera_id: 'entrance', password: 's3cret!', revision: 1 });
    // Everyone in the company sees it.
    const all = await h.request('GET', '/api/cameras', { token: staff });
    expect(all.body.map((c: any) => c.id)).toContain(r.body.id);
    expect(JSON.stringify(all.body)).not.toContain('s3cret');
  });

  it('PATCH: omitted fields stay, blank strings are values, every edit bumps revision, camera_id is refused', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'till', label: 'Till', username: 'u', password: 'p', tuning: { detect_fps: 5 } });
    expect(cam.tuning).toEqual({ detect_fps: 5, min_face_px: 64, rotate: 0, role: 'faces' });
    let r = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { label: '' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ label: '', username: 'u', has_password: true, host: cam.host, revision: 2 });
    r = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { password: '', tuning: { rotate: 90 } } });
    expect(r.body).toMatchObject({ has_password: false, revision: 3, tuning: { detect_fps: 5, min_face_px: 64, rotate: 90 } });
    r = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: {} });
    expect(r.body.revision).toBe(4);
    const refused = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { camera_id: 'other' } });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(/^camera_id: cannot be changed/) });
    for (const body of [{ port: 0 }, { port: '554' }, { host: 'http://cam/x' }, { host: '' }, { max_width: 10 }, { tuning: { detect_fps: 99 } }, { tuning: { zoom: 2 } }, { enabled: 'yes' }, { bogus: 1 }, { path: 'a b' }]) {
      const bad = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
    expect((await h.request('GET', '/api/cameras', { token: manager })).body.find((c: any) => c.id === cam.id).revision).toBe(4);
  });

  it('tuning.line: set on POST and PATCH, kept by other tuning edits, carried to the shop PC, cleared with null; bad lines are 400', async () => {
    const line = { a: [0.1, 0.5], b: [0.9, 0.5], inside: 'right' };
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'door', tuning: { line } });
    expect(cam.tuning).toEqual({ detect_fps: 8, min_face_px: 64, rotate: 0, line, role: 'door' });
    // Another tuning edit keeps the line; a new line replaces it.
    let r = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { tuning: { detect_fps: 4 } } });
    expect(r.status).toBe(200);
    expect(r.body.tuning).toEqual({ detect_fps: 4, min_face_px: 64, rotate: 0, line, role: 'door' });
    const moved = { a: [0.2, 0.1], b: [0.2, 0.9], inside: 'left' };
    r = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { tuning: { line: moved } } });
    expect(r.body.tuning).toEqual({ detect_fps: 4, min_face_px: 64, rotate: 0, line: moved, role: 'door' });
    // The shop PC's pull and every list carry it.
    const pulled = (await h.request('GET', '/api/agent/cameras', { token: e.token })).body.cameras.find((c: any) => c.id === cam.id);
    expect(pulled.tuning).toEqual({ detect_fps: 4, min_face_px: 64, rotate: 0, line: moved, role: 'door' });
    expect((await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id).tuning.line).toEqual(moved);
    // Bad lines: too short (under 5 % of the picture), outside the picture, no inside side, not two points.
    const bad: [unknown, RegExp][] = [
      [{ a: [0.5, 0.5], b: [0.52, 0.51], inside: 'left' }, /^tuning\.line\.b: the line must be at least 5 % of the picture long$/],
      [{ a: [0.5, 0.5], b: [1.2, 0.5], inside: 'left' }, /^tuning\.line\.b\.0: /],
      [{ a: [-0.1, 0.5], b: [0.5, 0.5], inside: 'left' }, /^tuning\.line\.a\.0: /],
      [{ a: [0.1, 0.5], b: [0.9, 0.5] }, /^tuning\.line\.inside: /],
      [{ a: [0.1, 0.5], b: [0.9, 0.5], inside: 'up' }, /^tuning\.line\.inside: /],
      [{ a: [0.1], b: [0.9, 0.5], inside: 'left' }, /^tuning\.line\.a/],
      ['door', /^tuning\.line: /],
    ];
    for (const [value, message] of bad) {
      const refused = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { tuning: { line: value } } });
      expect(refused.status, JSON.stringify(value)).toBe(400);
      expect(refused.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(message) });
      const created = await h.request('POST', `/api/sites/${shop.slug}/cameras`, { token: manager, body: { camera_id: 'door-2', host: '192.168.1.65', tuning: { line: value } } });
      expect(created.status, JSON.stringify(value)).toBe(400);
    }
    expect((await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id).tuning.line).toEqual(moved);
    // null clears it (the camera counts nothing), for people and the shop PC.
    r = await h.request('PATCH', `/api/cameras/${cam.id}`, { token: manager, body: { tuning: { line: null } } });
    expect(r.status).toBe(200);
    expect(r.body.tuning).toEqual({ detect_fps: 4, min_face_px: 64, rotate: 0, line: null, role: 'faces' });
    const cleared = (await h.request('GET', '/api/agent/cameras', { token: e.token })).body.cameras.find((c: any) => c.id === cam.id);
    expect(cleared.tuning.line).toBeNull();
    await h.request('DELETE', `/api/cameras/${cam.id}`, { token: manager });
  });

  it('camera_id: unique within a shop, allowed in two shops; a bare ambiguous camera_id resolves to nothing', async () => {
    const a = await addCamera(h, manager, shop.slug, { camera_id: 'door' });
    const dup = await h.request('POST', `/api/sites/${shop.slug}/cameras`, { token: manager, body: { camera_id: 'door', host: 'x.local' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('conflict');
    // Unique so far: the bare camera_id works in a path.
    expect((await h.request('PATCH', '/api/cameras/door', { token: manager, body: { label: 'Front door' } })).status).toBe(200);
    const b = await addCamera(h, manager, shop2.slug, { camera_id: 'door' });
    const ambiguous = await h.request('PATCH', '/api/cameras/door', { token: manager, body: { label: 'x' } });
    expect(ambiguous.status).toBe(404);
    expect(ambiguous.body.message).toMatch(/more than one camera/);
    expect((await h.request('PATCH', `/api/cameras/${a.id}`, { token: manager, body: { label: 'A' } })).status).toBe(200);
    expect((await h.request('PATCH', `/api/cameras/${b.id}`, { token: manager, body: { label: 'B' } })).status).toBe(200);
    for (const bad of ['', '-x', 'a b', 'x'.repeat(65), '0b9e0b9e-0b9e-4b9e-8b9e-0b9e0b9e0b9e']) {
      const r = await h.request('POST', `/api/sites/${shop.slug}/cameras`, { token: manager, body: { camera_id: bad, host: 'cam.local' } });
      expect(r.status, bad).toBe(400);
    }
  });

  it('DELETE leaves a tombstone the shop PC is told about; the camera_id can be reused', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'back', password: 'pw' });
    const open = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: manager, body: { kind: 'connection' } });
    const since = box.seen.length;
    const r = await h.request('DELETE', `/api/cameras/${cam.id}`, { token: manager });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ deleted: cam.id, camera_id: 'back', site_id: shop.site_id });
    await box.next((m) => m.topic === `ff/${company}/${shop.slug}/down/cameras` && m.body.kind === 'cameras_changed', 3000, since);
    const list = await h.request('GET', '/api/agent/cameras', { token: e.token });
    expect(list.body.cameras.map((c: any) => c.id)).not.toContain(cam.id);
    expect(list.body.removed).toContainEqual({ id: cam.id, camera_id: 'back', removed_at: expect.any(String) });
    expect((await h.request('GET', '/api/cameras', { token: manager })).body.map((c: any) => c.id)).not.toContain(cam.id);
    for (const [method, p] of [
      ['PATCH', `/api/cameras/${cam.id}`],
      ['DELETE', `/api/cameras/${cam.id}`],
      ['POST', `/api/cameras/${cam.id}/check`],
      ['GET', `/api/cameras/${cam.id}/snapshot.jpg`],
      ['GET', `/api/cameras/${cam.id}/live`],
    ] as const) {
      const body = method === 'PATCH' ? { label: 'x' } : method === 'POST' ? { kind: 'connection' } : undefined;
      expect((await h.request(method, p, { token: manager, body })).status, `${method} ${p}`).toBe(404);
    }
    // Its open check was released with it: nothing to claim, a late answer is refused.
    expect((await h.request('POST', '/api/agent/checks/claim', { token: e.token })).body).toEqual({ job: null });
    expect((await h.request('POST', `/api/agent/checks/${open.body.id}/answer`, { token: e.token, body: { verdict: 'good' } })).status).toBe(409);
    const again = await addCamera(h, manager, shop.slug, { camera_id: 'back' });
    expect(again.id).not.toBe(cam.id);
    // A retained notice is waiting for a shop PC that connects later.
    const late = await connectPc(h, e);
    const lateBox = inbox(late);
    await late.subscribeAsync(downFilter(company, shop.slug), { qos: 1 });
    await lateBox.next((m) => m.body?.kind === 'cameras_changed');
    await late.endAsync(true);
  });

  it('camera state reports: connected and last_seen_at; unknown cameras listed back', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'aisle' });
    let r = await h.request('POST', '/api/agent/cameras/state', { token: e.token, body: { cameras: [{ camera: 'aisle', connected: false, reason: 'unreachable' }, { camera: 'ghost', connected: true }] } });
    expect(r.body).toEqual({ updated: 1, unknown: ['ghost'] });
    let row = (await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id);
    expect(row).toMatchObject({ connected: false, connection_reason: 'unreachable', last_seen_at: null });
    r = await h.request('POST', '/api/agent/cameras/state', { token: e.token, body: { cameras: [{ camera: cam.id, connected: true, reason: 'ok' }] } });
    row = (await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id);
    expect(row).toMatchObject({ connected: true, last_seen_at: expect.any(String), revision: 1 });
    for (const body of [{}, { cameras: [] }, { cameras: [{ camera: 'aisle', connected: 'yes' }] }, { cameras: [{ camera: 'aisle', connected: true, reason: 'Bad Words' }] }]) {
      expect((await h.request('POST', '/api/agent/cameras/state', { token: e.token, body })).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('check: 202 requested -> notice -> claim -> answer -> done; marginal is a fail; one at a time', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'checked' });
    const since = box.seen.length;
    const r = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: manager, body: { kind: 'placement', seconds: 20 } });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ kind: 'placement', state: 'requested', ok: false, seconds: 20, headline: expect.stringContaining('20 seconds') });
    const notice = await box.next((m) => m.topic.endsWith('/down/check'), 3000, since);
    expect(notice.body).toMatchObject({ kind: 'check_requested', check_id: r.body.id, camera: cam.id, camera_id: 'checked', check_kind: 'placement', seconds: 20 });
    expect((await h.request('POST', `/api/cameras/${cam.id}/check`, { token: manager, body: { kind: 'connection' } })).status).toBe(409);

    const claim = await h.request('POST', '/api/agent/checks/claim', { token: e.token });
    expect(claim.body.job).toEqual({ check_id: r.body.id, camera: cam.id, camera_id: 'checked', kind: 'placement', seconds: 20, requested_at: expect.any(String), release_at: expect.any(String) });
    expect((await h.request('POST', '/api/agent/checks/claim', { token: e.token })).body).toEqual({ job: null });

    const picture = (await jpeg(80, 60)).toString('base64');
    const ans = await h.request('POST', `/api/agent/checks/${r.body.id}/answer`, {
      token: e.token,
      body: { verdict: 'marginal', detail: { faces: 14, fraction_below_gate: 0.36 }, reason: 'faces small', image: picture },
    });
    expect(ans.status).toBe(200);
    expect(ans.body).toEqual({ state: 'done', ok: false, verdict: 'marginal' });
    expect((await h.request('POST', `/api/agent/checks/${r.body.id}/answer`, { token: e.token, body: { verdict: 'good' } })).status).toBe(409);

    const view = (await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id);
    expect(view.check).toMatchObject({
      id: r.body.id,
      kind: 'placement',
      state: 'done',
      ok: false,
      verdict: 'marginal',
      headline: expect.stringContaining('36%'),
      detail: { faces: 14, fraction_below_gate: 0.36 },
      image: { available: true, url: `/api/cameras/${cam.id}/snapshot.jpg`, auth: true },
    });
    expect(view.check.advice).toContain('The shop PC says: faces small');
    const snap = await fetch(`${h.url}/api/cameras/${cam.id}/snapshot.jpg`, { headers: { Authorization: `Bearer ${staff}` } });
    expect(Buffer.from(await snap.arrayBuffer()).toString('base64')).toBe(picture);

    // A new check may start now; a connection check that passes is ok.
    const again = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: manager, body: { kind: 'connection' } });
    expect(again.status).toBe(202);
    await h.request('POST', `/api/agent/checks/${again.body.id}/answer`, { token: e.token, body: { verdict: 'good' } });
    const good = (await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id).check;
    expect(good).toMatchObject({ state: 'done', ok: true, verdict: 'good', image: { available: false } });
  });

  it('check input and answer errors', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'errs' });
    for (const body of [{}, { kind: 'zoom' }, { kind: 'placement' }, { kind: 'placement', seconds: 2 }, { kind: 'placement', seconds: 999 }, { kind: 'connection', seconds: 5 }]) {
      const r = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: manager, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    }
    const req = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: manager, body: { kind: 'connection' } });
    for (const body of [{}, { verdict: 'great' }, { verdict: 'good', image: 'not base64!' }, { verdict: 'good', image: Buffer.from('hello').toString('base64') }, { verdict: 'good', detail: { faces: -1, fraction_below_gate: null } }]) {
      const r = await h.request('POST', `/api/agent/checks/${req.body.id}/answer`, { token: e.token, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
    expect((await h.request('POST', '/api/agent/checks/not-a-uuid/answer', { token: e.token, body: { verdict: 'good' } })).status).toBe(404);
    expect((await h.request('POST', '/api/agent/checks/0b9e0b9e-0b9e-4b9e-8b9e-0b9e0b9e0b9e/answer', { token: e.token, body: { verdict: 'good' } })).status).toBe(404);
    // Another shop's PC cannot answer it.
    const e2 = await enrol(h, owner, shop2.slug);
    expect((await h.request('POST', `/api/agent/checks/${req.body.id}/answer`, { token: e2.token, body: { verdict: 'good' } })).status).toBe(404);
    expect((await h.request('POST', '/api/agent/checks/claim', { token: e2.token })).body).toEqual({ job: null });
    expect((await h.request('POST', `/api/agent/checks/${req.body.id}/answer`, { token: e.token, body: { verdict: 'not_set_up' } })).body.ok).toBe(false);
  });

  it('snapshots: shop PC uploads a JPEG, people get it as snapshot.jpg', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'snap' });
    const none = await h.request('GET', `/api/cameras/${cam.id}/snapshot.jpg`, { token: staff });
    expect(none.status).toBe(404);
    expect(none.body.error).toBe('no_image');
    const picture = await jpeg(320, 240);
    const up = await upload(h, 'PUT', '/api/agent/cameras/snap/snapshot', e.token, picture);
    expect(up.status).toBe(200);
    expect(up.body).toEqual({ snapshot_at: expect.any(String) });
    const got = await fetch(`${h.url}/api/cameras/${cam.id}/snapshot.jpg`, { headers: { Authorization: `Bearer ${staff}` } });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await got.arrayBuffer()).equals(picture)).toBe(true);
    const view = (await h.request('GET', '/api/cameras', { token: staff })).body.find((c: any) => c.id === cam.id);
    expect(view.snapshot).toEqual({ available: true, url: `/api/cameras/${cam.id}/snapshot.jpg`, auth: true });
    expect(view.snapshot_at).toBe(up.body.snapshot_at);

    expect((await upload(h, 'PUT', '/api/agent/cameras/snap/snapshot', e.token, 'hello', 'text/plain')).status).toBe(415);
    expect((await upload(h, 'PUT', '/api/agent/cameras/snap/snapshot', e.token, Buffer.from('not a jpeg at all'))).status).toBe(400);
    expect((await upload(h, 'PUT', '/api/agent/cameras/snap/snapshot', e.token, Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 5]))).status).toBe(400);
    expect((await upload(h, 'PUT', '/api/agent/cameras/snap/snapshot', e.token, Buffer.alloc(0))).status).toBe(400);
    const huge = await upload(h, 'PUT', '/api/agent/cameras/snap/snapshot', e.token, Buffer.concat([picture, Buffer.alloc(3 * 1024 * 1024)]));
    expect(huge.status).toBe(413);
    expect(huge.body.error).toBe('payload_too_large');
    expect((await upload(h, 'PUT', '/api/agent/cameras/nope/snapshot', e.token, picture)).status).toBe(404);
    // Another shop's PC cannot upload for this camera.
    const e2 = await enrol(h, owner, shop2.slug);
    expect((await upload(h, 'PUT', `/api/agent/cameras/${cam.id}/snapshot`, e2.token, picture)).status).toBe(404);
  });

  it('roles: staff read, managers change; admin and anonymous never reach the data', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'roles' });
    expect((await h.request('POST', `/api/sites/${shop.slug}/cameras`, { token: staff, body: { camera_id: 'x1', host: 'h' } })).body).toEqual({
      error: 'forbidden',
      message: 'Only a manager or owner can add, change or remove cameras.',
    });
    expect((await h.request('PATCH', `/api/cameras/${cam.id}`, { token: staff, body: { label: 'x' } })).status).toBe(403);
    expect((await h.request('DELETE', `/api/cameras/${cam.id}`, { token: staff })).status).toBe(403);
    expect((await h.request('POST', `/api/cameras/${cam.id}/check`, { token: staff, body: { kind: 'connection' } })).status).toBe(403);
    expect((await h.request('GET', '/api/cameras', { token: staff })).status).toBe(200);
    for (const [method, p] of [
      ['GET', '/api/cameras'],
      ['POST', `/api/sites/${shop.slug}/cameras`],
      ['PATCH', `/api/cameras/${cam.id}`],
      ['DELETE', `/api/cameras/${cam.id}`],
      ['POST', `/api/cameras/${cam.id}/check`],
      ['GET', `/api/cameras/${cam.id}/snapshot.jpg`],
      ['GET', `/api/cameras/${cam.id}/live`],
    ] as const) {
      expect((await h.request(method, p)).status, `${method} ${p}`).toBe(401);
      expect((await h.request(method, p, { token: e.token })).status, `agent token ${method} ${p}`).toBe(401);
      expect((await h.request(method, p, { token: await h.adminToken() })).status, `admin ${method} ${p}`).toBe(404);
    }
  });

  it('another tenant: every camera route is 404 and its lists are empty of ours', async () => {
    const cam = await addCamera(h, manager, shop.slug, { camera_id: 'secret-cam' });
    for (const ref of [cam.id, 'secret-cam']) {
      for (const [method, p, body] of [
        ['PATCH', `/api/cameras/${ref}`, { label: 'x' }],
        ['DELETE', `/api/cameras/${ref}`, undefined],
        ['POST', `/api/cameras/${ref}/check`, { kind: 'connection' }],
        ['GET', `/api/cameras/${ref}/snapshot.jpg`, undefined],
        ['GET', `/api/cameras/${ref}/live`, undefined],
      ] as const) {
        const r = await h.request(method, p, { token: other, body });
        expect(r.status, `${method} ${p}`).toBe(404);
        expect(r.body.error).toBe('not_found');
      }
    }
    expect((await h.request('POST', `/api/sites/${shop.site_id}/cameras`, { token: other, body: { camera_id: 'x', host: 'h' } })).status).toBe(404);
    expect((await h.request('GET', '/api/cameras', { token: other })).body.map((c: any) => c.id)).not.toContain(cam.id);
  });
});

describe('check release', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_CHECK_RELEASE_S: 1 });
  });
  afterAll(() => h.close());

  it('a requested check nobody answers is released as timed_out; a late answer is refused; the button works again', async () => {
    const c = await h.company('Slow Co');
    const shop = await openShop(h, c.ownerToken, { name: 'Slow' });
    const cam = await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'cam' });
    const e = await enrol(h, c.ownerToken, shop.slug);
    const req = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: c.ownerToken, body: { kind: 'connection' } });
    expect(req.status).toBe(202);
    expect(req.body.release_at).toBeDefined();
    expect((await h.request('POST', '/api/agent/checks/claim', { token: e.token })).body.job.check_id).toBe(req.body.id);
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(req.body.release_at) - Date.now() + 50)));
    const view = (await h.request('GET', '/api/cameras', { token: c.ownerToken })).body[0];
    expect(view.check).toMatchObject({ id: req.body.id, state: 'timed_out', ok: false, verdict: 'no_answer', headline: expect.any(String) });
    const late = await h.request('POST', `/api/agent/checks/${req.body.id}/answer`, { token: e.token, body: { verdict: 'good' } });
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('conflict');
    const again = await h.request('POST', `/api/cameras/${cam.id}/check`, { token: c.ownerToken, body: { kind: 'connection' } });
    expect(again.status).toBe(202);
    expect(again.body.state).toBe('requested');
  });
});
