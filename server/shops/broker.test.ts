import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { downFilter, upTopic } from '../../shared/topics.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addCamera, closed, connectPc, enrol, heartbeat, openShop, pcClients, reEnrolled, twoShopPcs, waitFor } from '../../test/support/shop-pc.js';

describe('shop PCs on the broker (real aedes over TCP, real mqtt client)', () => {
  let h: Harness;
  let owner: string;
  let company: string;
  const { track, endAll } = pcClients();

  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1 });
    const c = await h.company('Mqtt Co');
    owner = c.ownerToken;
    company = c.slug;
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  afterAll(async () => {
    await endAll();
    await h.close();
  });

  const shopRow = async (slug: string) => (await h.request('GET', '/api/sites', { token: owner })).body.find((s: any) => s.slug === slug);

  it('heartbeat -> online with the reported fields -> offline after three missed heartbeats', async () => {
    const shop = await openShop(h, owner, { name: 'Beat' });
    const e = await enrol(h, owner, shop.slug);
    expect(e.broker).toMatchObject({ username: `${company}.beat`, topic_prefix: `ff/${company}/beat/`, host: null, port: h.server.mqttPort });
    expect(e.timing.heartbeat_interval_s).toBe(1);
    const pc = track(await connectPc(h, e));
    await pc.publishAsync(upTopic(company, 'beat', 'heartbeat'), JSON.stringify(heartbeat({ cameras_up: 2, cameras_total: 3, queued: 5, dropped: 1, fraction_below_gate: 0.25, agent_version: '9.9.9' })));
    const row = await waitFor(async () => {
      const s = await shopRow('beat');
      return s.online ? s : undefined;
    });
    expect(row).toMatchObject({ online: true, agent_version: '9.9.9', recognition_model: 'arcface-test', cameras_up: 2, cameras_total: 3, queued: 5, dropped: 1, fraction_below_gate: 0.25 });
    expect(Date.parse(row.last_heartbeat_at)).toBeGreaterThan(Date.now() - 5000);
    // Online up to three intervals after the last heartbeat, offline after. Told on the test's clock (Date faked in
    // this process, head office's included; "online" is worked out when asked), so a loaded machine cannot oversleep
    // the first look past the three intervals.
    const last = Date.parse(row.last_heartbeat_at);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(last + 3000);
      expect((await shopRow('beat')).online).toBe(true);
      vi.setSystemTime(last + 3001);
      expect((await shopRow('beat')).online).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a heartbeat that breaks the contract is dropped; the connection and the shop stay as they were', async () => {
    const shop = await openShop(h, owner, { name: 'Garbage' });
    const e = await enrol(h, owner, shop.slug);
    const pc = track(await connectPc(h, e));
    const topic = upTopic(company, 'garbage', 'heartbeat');
    await pc.publishAsync(topic, 'not json');
    await pc.publishAsync(topic, JSON.stringify({ ...heartbeat(), cameras_up: 5, cameras_total: 1 }));
    await pc.publishAsync(topic, JSON.stringify({ ...heartbeat(), fraction_below_gate: 2 }));
    await new Promise((r) => setTimeout(r, 150));
    expect((await shopRow('garbage')).last_heartbeat_at).toBeNull();
    expect(pc.connected).toBe(true);
  });

  it('ACL: a shop PC cannot subscribe to or publish on another shop’s topics', async () => {
    const { ea, pcA, pcB } = await twoShopPcs(h, owner, track);

    // Own notices: granted.
    const own = await pcA.subscribeAsync(downFilter(company, 'shop-a'), { qos: 1 });
    expect(own[0]!.qos).toBe(1);
    // Someone else's, wide filters, its own upward topics: refused (0x80).
    for (const filter of [downFilter(company, 'shop-b'), `ff/${company}/+/down/#`, '#', `ff/${company}/shop-a/#`, `ff/${company}/shop-a/up/heartbeat`, '$SYS/#']) {
      // mqtt.js turns the SUBACK failure code (0x80) into an error.
      const granted = await pcA.subscribeAsync(filter, { qos: 1 }).then(
        (g) => g[0]!.qos,
        (err: Error) => (/Unspecified error/.test(err.message) ? 128 : err.message),
      );
      expect(granted, filter).toBe(128);
    }
    expect(pcA.connected).toBe(true);

    // B listens to its own notices; A publishing on B's topics is refused and A is disconnected.
    const got: string[] = [];
    await pcB.subscribeAsync(downFilter(company, 'shop-b'), { qos: 0 });
    pcB.on('message', (t) => got.push(t));
    const gone = closed(pcA);
    pcA.publish(upTopic(company, 'shop-b', 'heartbeat'), JSON.stringify(heartbeat()), { qos: 0 });
    await gone;
    expect((await shopRow('shop-b')).last_heartbeat_at).toBeNull();

    // A publishing on its own down topic (pretending to be head office) is refused too.
    const pcA2 = track(await connectPc(h, ea));
    const gone2 = closed(pcA2);
    pcA2.publish(`ff/${company}/shop-b/down/cameras`, JSON.stringify({ kind: 'cameras_changed', at: new Date().toISOString() }), { qos: 0 });
    pcA2.publish(`ff/${company}/shop-a/down/cameras`, JSON.stringify({ kind: 'cameras_changed', at: new Date().toISOString() }), { qos: 0 });
    await gone2;
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toEqual([]);
  });

  it('a reconnect with the same client id takes over and keeps working', async () => {
    const shop = await openShop(h, owner, { name: 'Takeover' });
    const e = await enrol(h, owner, shop.slug);
    const first = track(await connectPc(h, e, { clientId: e.broker.client_id }));
    const gone = closed(first);
    const second = track(await connectPc(h, e, { clientId: e.broker.client_id }));
    await gone;
    await second.publishAsync(upTopic(company, 'takeover', 'heartbeat'), JSON.stringify(heartbeat()));
    await waitFor(async () => (await shopRow('takeover')).online);
    expect(second.connected).toBe(true);
    expect((await second.subscribeAsync(downFilter(company, 'takeover'), { qos: 1 }))[0]!.qos).toBe(1);
  });

  it('wrong secret, unknown login and another shop’s secret are refused at connect', async () => {
    const a = await openShop(h, owner, { name: 'Login A' });
    const b = await openShop(h, owner, { name: 'Login B' });
    const ea = await enrol(h, owner, a.slug);
    const eb = await enrol(h, owner, b.slug);
    await expect(connectPc(h, { broker: { ...ea.broker, password: 'wrong' } })).rejects.toThrow();
    await expect(connectPc(h, { broker: { ...ea.broker, password: eb.broker.password } })).rejects.toThrow();
    await expect(connectPc(h, { broker: { ...ea.broker, username: 'nobody.here' } })).rejects.toThrow();
    await expect(connectPc(h, { broker: { ...ea.broker, password: '' } })).rejects.toThrow();
  });

  it('re-enrolment: the old token and broker secret stop working and the old connection is closed', async () => {
    const { first, second } = await reEnrolled(h, owner, 'Again', track);
    expect(second.token).not.toBe(first.token);
    expect(second.broker.password).not.toBe(first.broker.password);
    expect((await h.request('GET', '/api/agent/me', { token: first.token })).status).toBe(401);
    expect((await h.request('GET', '/api/agent/me', { token: second.token })).status).toBe(200);
    await expect(connectPc(h, first)).rejects.toThrow();
    track(await connectPc(h, second));
  });

  it('removing a shop disconnects its shop PC and removes the login', async () => {
    const shop = await openShop(h, owner, { name: 'Goner' });
    const e = await enrol(h, owner, shop.slug);
    const pc = track(await connectPc(h, e));
    const gone = closed(pc);
    expect((await h.request('DELETE', `/api/sites/${shop.slug}`, { token: owner })).status).toBe(200);
    await gone;
    await expect(connectPc(h, e)).rejects.toThrow();
    expect((await h.request('GET', '/api/agent/cameras', { token: e.token })).status).toBe(401);
  });

  it('shop check: five steps in order, stopping at the first failure', async () => {
    const shop = await openShop(h, owner, { name: 'Checked' });
    const check = async () => (await h.request('GET', `/api/sites/${shop.slug}/check`, { token: owner })).body;
    const statuses = (c: any) => c.steps.map((s: any) => s.status);

    let c = await check();
    expect(c).toMatchObject({ site_id: shop.site_id, site: 'Checked', ok: false });
    expect(c.steps.map((s: any) => s.name)).toEqual([
      "The shop's PC is online",
      'Recognition is running',
      'Cameras are connected',
      'Cameras can recognise faces',
      'Visits are reaching head office',
    ]);
    expect(statuses(c)).toEqual(['fail', 'unknown', 'unknown', 'unknown', 'unknown']);
    expect(c.steps[0].advice).toMatch(/enrolment code/);

    const e = await enrol(h, owner, shop.slug);
    const pc = track(await connectPc(h, e));
    // The clock stands still from here (Date faked in this process, head office's included): the shop PC stays
    // online between its heartbeats (three 1-s intervals) however long a loaded machine takes over the steps.
    vi.useFakeTimers({ toFake: ['Date'] });
    // Each heartbeat carries its own agent version: the check runs once head office has stored it (not after a fixed
    // wait, which a loaded machine outlasts).
    let beats = 0;
    const beat = async (over = {}) => {
      const version = `1.0.${++beats}`;
      await pc.publishAsync(upTopic(company, 'checked', 'heartbeat'), JSON.stringify(heartbeat({ ...over, agent_version: version })));
      await waitFor(async () => (await shopRow('checked')).agent_version === version);
    };
    await beat({ recognition_running: false, recognition_model: '', recognition_problem: 'model file missing' });
    c = await check();
    expect(statuses(c)).toEqual(['pass', 'fail', 'unknown', 'unknown', 'unknown']);
    expect(c.steps[1].detail).toMatch(/model file missing/);

    await beat();
    expect(statuses(await check())).toEqual(['pass', 'pass', 'fail', 'unknown', 'unknown']); // no cameras

    const cam = await addCamera(h, owner, shop.slug, { camera_id: 'door', label: 'Door' });
    c = await check();
    expect(statuses(c)).toEqual(['pass', 'pass', 'fail', 'unknown', 'unknown']);
    expect(c.steps[2].detail).toMatch(/not set up/);
    await h.request('POST', '/api/agent/cameras/state', { token: e.token, body: { cameras: [{ camera: cam.id, connected: false, reason: 'auth_failed' }] } });
    expect((await check()).steps[2].detail).toMatch(/Door \(auth failed\)/);
    await h.request('POST', '/api/agent/cameras/state', { token: e.token, body: { cameras: [{ camera: 'door', connected: true }] } });

    await beat({ fraction_below_gate: 0.3, worst_camera_id: 'door' });
    c = await check();
    expect(statuses(c)).toEqual(['pass', 'pass', 'pass', 'fail', 'unknown']);
    expect(c.steps[3].detail).toMatch(/marginal/);

    await beat({ fraction_below_gate: 0.05 });
    c = await check();
    expect(statuses(c)).toEqual(['pass', 'pass', 'pass', 'pass', 'warn']); // no visit yet
    expect(c.ok).toBe(true);

    await beat({ dropped: 3 });
    c = await check();
    expect(statuses(c)).toEqual(['pass', 'pass', 'pass', 'pass', 'fail']);
    expect(c.ok).toBe(false);
  });
});
