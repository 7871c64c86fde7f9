import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';
import { LIVE_RENEW_S } from '../../shared/messages.js';
import { downFilter } from '../../shared/topics.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { pumpSse, type SseEvent } from '../../test/support/sse.js';
import { addCamera, connectPc, enrol, inbox, jpeg, memberToken, openShop, upload, waitFor } from '../../test/support/shop-pc.js';

/** A live-view client: reads the server-sent events as they come. */
async function watch(h: Harness, cameraId: string, token: string, path = `/api/cameras/${cameraId}/live`) {
  const abort = new AbortController();
  const res = await fetch(`${h.url}${path}`, { headers: { Authorization: `Bearer ${token}` }, signal: abort.signal });
  const events: SseEvent[] = [];
  let ended = false;
  const pump = pumpSse(res, (e) => {
    if (e.event !== 'comment') events.push(e);
  }).finally(() => {
    ended = true;
  });
  return {
    res,
    events,
    isEnded: () => ended,
    next: (event: string, from = 0) => waitFor(() => events.slice(from).find((e) => e.event === event)),
    async close() {
      abort.abort();
      await pump;
    },
  };
}

describe('live view', () => {
  let h: Harness;
  let owner: string;
  let staff: string;
  let company: string;
  let pc: MqttClient;
  let box: ReturnType<typeof inbox>;
  let token: string;
  let shop: any;

  beforeAll(async () => {
    h = await startHarness();
    const c = await h.company('Live Co');
    owner = c.ownerToken;
    company = c.slug;
    staff = await memberToken(h, owner, 'staff');
    shop = await openShop(h, owner, { name: 'Live Shop' });
    const e = await enrol(h, owner, shop.slug);
    token = e.token;
    pc = await connectPc(h, e);
    box = inbox(pc);
    await pc.subscribeAsync(downFilter(company, shop.slug), { qos: 1 });
  });
  afterAll(async () => {
    await pc.endAsync(true);
    await h.close();
  });

  it('waiting at once, demand to the shop PC, frames relayed, upload stops after the viewer leaves', async () => {
    const cam = await addCamera(h, owner, shop.slug, { camera_id: 'live-1' });
    const since = box.seen.length;
    const view = await watch(h, cam.id, staff);
    expect(view.res.status).toBe(200);
    expect(view.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // Additive: the camera's last reported state (null: never reported).
    expect(await view.next('waiting')).toMatchObject({ event: 'waiting', data: '{"connected":null,"connection_reason":null}' });

    // Head office asks the shop PC (MQTT) and lists the demand (HTTP).
    const demand = await box.next((m) => m.topic.endsWith('/down/live') && m.body.camera === cam.id, 3000, since);
    expect(demand.body).toMatchObject({ kind: 'live', camera_id: 'live-1', watch: true });
    expect(Date.parse(demand.body.until)).toBeGreaterThan(Date.now());
    expect((await h.request('GET', '/api/agent/live', { token })).body.cameras).toEqual([{ camera: cam.id, camera_id: 'live-1', until: expect.any(String) }]);

    // The shop PC uploads; the viewer gets each frame as base64.
    const frames = await Promise.all([1, 2, 3].map((n) => jpeg(640, 360, n * 40)));
    for (const f of frames) {
      const r = await upload(h, 'POST', `/api/agent/live/live-1/frames`, token, f);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ watching: true, until: expect.any(String) });
    }
    await waitFor(() => view.events.filter((e) => e.event === 'frame').length === 3);
    expect(view.events.filter((e) => e.event === 'frame').map((e) => e.data)).toEqual(frames.map((f) => f.toString('base64')));

    // The viewer leaves: the shop PC, uploading like an agent does, is told to stop within seconds.
    const leftAt = Date.now();
    const beforeStop = box.seen.length;
    await view.close();
    let uploads = 0;
    await waitFor(
      async () => {
        uploads++;
        const r = await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, token, frames[0]!);
        return r.body.watching === false;
      },
      3000,
      75,
    );
    expect(Date.now() - leftAt).toBeLessThan(2000);
    expect(uploads).toBeLessThan(30);
    const stop = await box.next((m) => m.topic.endsWith('/down/live') && m.body.camera === cam.id && m.body.watch === false, 3000, beforeStop);
    expect(stop.body.watch).toBe(false);
    expect((await h.request('GET', '/api/agent/live', { token })).body.cameras).toEqual([]);
  });

  it('two viewers share the uploads; the demand is renewed while anyone watches', async () => {
    const cam = await addCamera(h, owner, shop.slug, { camera_id: 'live-2' });
    const since = box.seen.length;
    const a = await watch(h, cam.id, staff);
    const b = await watch(h, cam.id, owner);
    await a.next('waiting');
    await b.next('waiting');
    const frame = await jpeg(640, 360);
    await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, token, frame);
    await a.next('frame');
    await b.next('frame');
    await a.close();
    expect((await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, token, frame)).body.watching).toBe(true);
    // A renewal arrives within LIVE_RENEW_S.
    await waitFor(() => box.seen.slice(since).filter((m) => m.body?.kind === 'live' && m.body.camera === cam.id && m.body.watch).length >= 2, (LIVE_RENEW_S + 2) * 1000);
    await b.close();
    await waitFor(async () => (await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, token, frame)).body.watching === false);
  });

  it('a view ends at the configured cap with event end', async () => {
    const cam = await addCamera(h, owner, shop.slug, { camera_id: 'live-3' });
    const config = h.server.deps.config;
    const cap = config.FOOTFALL_LIVE_VIEW_MAX_S;
    config.FOOTFALL_LIVE_VIEW_MAX_S = 1;
    try {
      const view = await watch(h, cam.id, staff);
      await view.next('waiting');
      const end = await waitFor(() => view.events.find((e) => e.event === 'end'));
      expect(JSON.parse(end!.data)).toEqual({ reason: 'max_duration' });
      await waitFor(() => view.isEnded());
      expect((await upload(h, 'POST', `/api/agent/live/${cam.id}/frames`, token, await jpeg())).body.watching).toBe(false);
    } finally {
      config.FOOTFALL_LIVE_VIEW_MAX_S = cap;
    }
  });

  it('no session is 401, another tenant 404', async () => {
    const cam = await addCamera(h, owner, shop.slug, { camera_id: 'live-4' });
    expect((await fetch(`${h.url}/api/cameras/${cam.id}/live`)).status).toBe(401);
    const rival = await h.company('Live Rival');
    const r = await fetch(`${h.url}/api/cameras/${cam.id}/live`, { headers: { Authorization: `Bearer ${rival.ownerToken}` } });
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ error: 'not_found' });
    expect(h.server.deps.live.viewers(cam.id)).toBe(0);
  });
  it('a shop-wide stream carries every switched-on camera of the shop in one connection (the live grid)', async () => {
    const gridShop = await openShop(h, owner, { name: 'Grid Shop' });
    const e = await enrol(h, owner, gridShop.slug);
    const gridPc = await connectPc(h, e);
    const gridBox = inbox(gridPc);
    await gridPc.subscribeAsync(downFilter(company, gridShop.slug), { qos: 1 });
    try {
      // Eight cameras: more than the six connections a browser opens to one host over HTTP/1.1.
      const ids = ['g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8'];
      const cams: { id: string; camera_id: string }[] = [];
      for (const id of ids) cams.push(await addCamera(h, owner, gridShop.slug, { camera_id: id }));
      const off = await addCamera(h, owner, gridShop.slug, { camera_id: 'g9-off' });
      expect((await h.request('PATCH', `/api/cameras/${off.id}`, { token: owner, body: { enabled: false } })).status).toBe(200);

      const view = await watch(h, '', staff, `/api/sites/${gridShop.slug}/live`);
      expect(view.res.status).toBe(200);
      const waiting = JSON.parse((await view.next('waiting'))!.data);
      expect(waiting.cameras).toEqual(cams.map((c) => ({ camera: c.id, camera_id: c.camera_id, connected: null, connection_reason: null })));
      // One demand per switched-on camera reaches the shop PC; none for the switched-off one.
      await waitFor(() => new Set(gridBox.seen.filter((m) => m.topic.endsWith('/down/live') && m.body.watch).map((m) => m.body.camera_id)).size === 8);
      expect(gridBox.seen.some((m) => m.topic.endsWith('/down/live') && m.body.camera_id === 'g9-off')).toBe(false);

      const frames = await Promise.all(ids.map((_, i) => jpeg(64, 36, 20 + i * 25)));
      for (const [i, id] of ids.entries()) expect((await upload(h, 'POST', `/api/agent/live/${id}/frames`, e.token, frames[i]!)).body.watching).toBe(true);
      await waitFor(() => view.events.filter((ev) => ev.event === 'frame').length === 8);
      const got = view.events.filter((ev) => ev.event === 'frame').map((ev) => JSON.parse(ev.data));
      expect(got).toEqual(ids.map((id, i) => ({ camera: cams[i]!.id, camera_id: id, jpeg: frames[i]!.toString('base64') })));

      // Leaving ends every camera's upload; another tenant gets 404, nobody signed in 401.
      await view.close();
      for (const id of ids) await waitFor(async () => (await upload(h, 'POST', `/api/agent/live/${id}/frames`, e.token, frames[0]!)).body.watching === false, undefined, 75);
      expect((await fetch(`${h.url}/api/sites/${gridShop.slug}/live`)).status).toBe(401);
      const rival = await h.company('Grid Rival');
      const r = await fetch(`${h.url}/api/sites/${gridShop.slug}/live`, { headers: { Authorization: `Bearer ${rival.ownerToken}` } });
      expect(r.status).toBe(404);
      for (const c of cams) expect(h.server.deps.live.viewers(c.id)).toBe(0);
    } finally {
      await gridPc.endAsync(true);
    }
  });
});
