import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MqttClient } from 'mqtt';
import { downFilter, upTopic } from '../../shared/topics.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { dynsecAsAdmin, mosquittoMissing, startMosquitto, type TestMosquitto } from '../../test/support/mosquitto.js';
import { addCamera, closed, connectPc, enrol, heartbeat, inbox, openShop, pcClients, reEnrolled, twoShopPcs, waitFor } from '../../test/support/shop-pc.js';
import { noteSkip } from '../../test/support/skips.js';
import { arrivals, settled } from '../../test/support/visits.js';
import { visitOf } from '../../test/support/faces.js';
import type { ExternalBroker } from './external-mosquitto.js';

const FILE = 'server/broker/external-mosquitto.test.ts';
const missing = mosquittoMissing();
if (missing) noteSkip(FILE, missing);

/** A footfall visit (no face), as a shop PC publishes it. */
const footfall = (over: Parameters<typeof visitOf>[2] = {}) => visitOf({ model: 'none' }, undefined, over);

/** mqtt.js turns a SUBACK failure code into an error: 128 for a refusal, else the granted QoS. */
async function granted(client: MqttClient, filter: string): Promise<number | string> {
  return client.subscribeAsync(filter, { qos: 1 }).then(
    (g) => g[0]!.qos,
    (err: Error) => (/Unspecified error|Not authorized/i.test(err.message) ? 128 : err.message),
  );
}

describe.skipIf(missing !== undefined)('head office on an external Mosquitto 2 (real mosquitto, dynamic-security plugin)', () => {
  let mq: TestMosquitto;
  let h: Harness;
  let owner: string;
  let company: string;
  const { track, endAll } = pcClients();
  const overrides = () => ({ FOOTFALL_MQTT_URL: mq.url, FOOTFALL_MQTT_USERNAME: mq.admin.username, FOOTFALL_MQTT_PASSWORD: mq.admin.password, FOOTFALL_HEARTBEAT_INTERVAL_S: 1 });
  const shopRow = async (slug: string) => (await h.request('GET', '/api/sites', { token: owner })).body.find((s: any) => s.slug === slug);

  beforeAll(async () => {
    mq = await startMosquitto();
    h = await startHarness(overrides(), { keepDataDir: true });
    const c = await h.company('Mosquitto Co');
    owner = c.ownerToken;
    company = c.slug;
  });
  afterAll(async () => {
    await endAll();
    await h?.close();
    await mq?.close();
  });

  it('enrolment names the external broker; the shop PC’s visits arrive and are stored once; heartbeats and notices go through it', async () => {
    expect(h.server.broker.kind).toBe('external');
    const shop = await openShop(h, owner, { name: 'Front' });
    const e = await enrol(h, owner, shop.slug);
    expect(e.broker).toMatchObject({ host: '127.0.0.1', port: mq.port, username: `${company}.front`, topic_prefix: `ff/${company}/front/` });
    expect(e.broker).not.toHaveProperty('tls');
    const pc = track(await connectPc(h, e));
    const notices = inbox(pc);
    expect(await granted(pc, downFilter(company, 'front'))).toBe(1);

    const visits = [footfall(), footfall(), footfall()];
    for (const v of visits) await pc.publishAsync(upTopic(company, 'front', 'visit'), JSON.stringify(v), { qos: 1 });
    // The same visit again (a shop PC that lost the PUBACK sends it again): stored once.
    await pc.publishAsync(upTopic(company, 'front', 'visit'), JSON.stringify(visits[0]), { qos: 1 });
    const rows = await arrivals(h, owner, 3);
    await settled(h);
    expect((await h.request('GET', '/api/visits?limit=1000', { token: owner })).body.arrivals).toHaveLength(3);
    expect(rows).toHaveLength(3);
    expect((await h.request('GET', '/api/visits?limit=1000&site=front', { token: owner })).body.arrivals).toHaveLength(3);
    await waitFor(() => h.server.ingest.stats.duplicates === 1);
    expect(h.server.ingest.stats).toMatchObject({ received: 4, stored: 3, duplicates: 1 });
    // Head office acknowledged each delivery to the broker (after it was stored).
    await waitFor(() => (h.server.broker as ExternalBroker).ingestStats.acked >= 4);

    // Heartbeat (head office listens on the broker): the shop is online.
    await pc.publishAsync(upTopic(company, 'front', 'heartbeat'), JSON.stringify(heartbeat({ agent_version: '7.7.7' })));
    await waitFor(async () => (await shopRow('front')).online);

    // A notice from head office (a camera added: cameras_changed, retained) reaches the shop PC.
    await addCamera(h, owner, shop.slug, { camera_id: 'door', label: 'Door' });
    const notice = await notices.next((m) => m.topic === `ff/${company}/front/down/cameras`);
    expect(notice.body).toMatchObject({ kind: 'cameras_changed' });
  });

  it('ACL: a shop PC can neither read nor write another shop’s topics (refused by Mosquitto)', async () => {
    const { ea, eb, pcA, pcB } = await twoShopPcs(h, owner, track);

    for (const filter of [downFilter(company, 'shop-b'), `ff/${company}/+/down/#`, '#', `ff/${company}/shop-b/up/#`, `ff/${company}/shop-a/up/#`, '$CONTROL/dynamic-security/#', '$SYS/#']) {
      expect(await granted(pcA, filter), filter).toBe(128);
    }
    expect(await granted(pcA, downFilter(company, 'shop-a'))).toBe(1);

    const atB: string[] = [];
    expect(await granted(pcB, downFilter(company, 'shop-b'))).toBe(1);
    pcB.on('message', (t) => atB.push(t));
    // A writes on B's topics: B's up (as if it were B) and B's down (as if it were head office). Mosquitto drops them.
    await pcA.publishAsync(upTopic(company, 'shop-b', 'visit'), JSON.stringify(footfall()), { qos: 1 });
    await pcA.publishAsync(upTopic(company, 'shop-b', 'heartbeat'), JSON.stringify(heartbeat()), { qos: 1 });
    await pcA.publishAsync(`ff/${company}/shop-b/down/cameras`, JSON.stringify({ kind: 'cameras_changed', at: new Date().toISOString() }), { qos: 1 });
    // A's own visit, sent after those, arrives: so had the others got through, they would have arrived first.
    await pcA.publishAsync(upTopic(company, 'shop-a', 'visit'), JSON.stringify(footfall()), { qos: 1 });
    await waitFor(async () => (await h.request('GET', `/api/visits?limit=1000&site=shop-a`, { token: owner })).body.arrivals.length === 1);
    await settled(h);
    expect((await h.request('GET', `/api/visits?limit=1000&site=shop-b`, { token: owner })).body.arrivals).toEqual([]);
    expect((await shopRow('shop-b')).last_heartbeat_at).toBeNull();
    expect(atB).toEqual([]);
    // A's password does not open B's login.
    await expect(connectPc(h, { broker: { ...eb.broker, password: ea.broker.password } })).rejects.toThrow();
  });

  it('re-enrolment rotates the password: the old connection is ended and the old password refused', async () => {
    const { first, second } = await reEnrolled(h, owner, 'Rotate', track);
    expect(second.broker.password).not.toBe(first.broker.password);
    await expect(connectPc(h, first)).rejects.toThrow();
    const pc = track(await connectPc(h, second));
    await pc.publishAsync(upTopic(company, 'rotate', 'visit'), JSON.stringify(footfall()), { qos: 1 });
    await waitFor(async () => (await h.request('GET', `/api/visits?limit=10&site=rotate`, { token: owner })).body.arrivals.length === 1);
  });

  it('a disabled shop PC cannot connect (and is cut off); enabled again with a new login; a removed shop’s login is gone', async () => {
    const shop = await openShop(h, owner, { name: 'Disable' });
    const e = await enrol(h, owner, shop.slug);
    const pc = track(await connectPc(h, e));
    const gone = closed(pc);
    await h.server.broker.endLogin(e.broker.username, { remove: false });
    await gone;
    await expect(connectPc(h, e)).rejects.toThrow();
    await h.server.broker.setLogin({ username: e.broker.username, password: e.broker.password, prefix: e.broker.topic_prefix });
    track(await connectPc(h, e));

    const removed = await h.request('DELETE', `/api/sites/${shop.site_id}`, { token: owner });
    expect(removed.status).toBe(200);
    await waitFor(async () => connectPc(h, e).then((c) => (c.end(true), false), () => true));
  });

  it('visits sent while head office is down wait in the broker (unacknowledged to head office) and are stored when it is back; a login the broker lost is made again', async () => {
    const shop = await openShop(h, owner, { name: 'Away' });
    const e = await enrol(h, owner, shop.slug);
    const pc = track(await connectPc(h, e));
    const dataDir = h.dataDir;
    await h.close();
    const sent = [footfall(), footfall(), footfall(), footfall(), footfall()];
    // The broker takes them (its PUBACK to the shop PC) and holds them in head office's persistent ingest session.
    for (const v of sent) await pc.publishAsync(upTopic(company, 'away', 'visit'), JSON.stringify(v), { qos: 1 });
    // Meanwhile the broker loses this shop PC's login (say its dynamic-security.json came back from an old copy).
    const gone = closed(pc);
    expect((await dynsecAsAdmin(mq, [{ command: 'deleteClient', username: e.broker.username }]))[0]).not.toHaveProperty('error');
    await gone;
    await expect(connectPc(h, e)).rejects.toThrow();
    h = await startHarness(overrides(), { dataDir, keepDataDir: false });
    await waitFor(() => h.server.ingest.stats.stored >= 5, 10_000);
    await settled(h);
    expect(h.server.ingest.stats).toMatchObject({ stored: 5, duplicates: 0 });
    // Head office made the lost login again from the shops table: the shop PC connects with its password.
    const again = track((await waitFor(() => connectPc(h, e).catch(() => undefined), 5000))!);
    await again.publishAsync(upTopic(company, 'away', 'visit'), JSON.stringify(footfall()), { qos: 1 });
    await waitFor(() => h.server.ingest.stats.stored === 6);
  });

  it('Mosquitto restarts: head office reconnects by itself (/healthz ok again), and visits and heartbeats flow again', async () => {
    const shop = await openShop(h, owner, { name: 'Restart' });
    const e = await enrol(h, owner, shop.slug);
    const pc = track(await connectPc(h, e));
    const gone = closed(pc);
    await mq.restart();
    await gone;
    // Meanwhile /healthz said the broker was down, or head office had already reconnected; either way it ends ok.
    await waitFor(async () => (await fetch(`${h.url}/healthz`)).status === 200, 15_000, 200);
    const again = track((await waitFor(() => connectPc(h, e).catch(() => undefined), 10_000, 200))!);
    const before = h.server.ingest.stats.stored;
    await again.publishAsync(upTopic(company, 'restart', 'visit'), JSON.stringify(footfall()), { qos: 1 });
    await waitFor(() => h.server.ingest.stats.stored === before + 1, 15_000);
    await again.publishAsync(upTopic(company, 'restart', 'heartbeat'), JSON.stringify(heartbeat({ agent_version: '8.8.8' })));
    await waitFor(async () => (await shopRow('restart')).agent_version === '8.8.8', 5000);
  });

  it("a head-office login with only its own rules (a role from before shared subscriptions): the role gets the shared subscriptions' rules, and visits and heartbeats flow", async () => {
    // An operator's least-privilege login: the dynamic-security control topics, and the role an earlier version
    // made (ff/# only), instead of the plugin's all-powerful admin role.
    const limited = { username: 'footfall-limited', password: 'limited-broker-password-1' };
    // A second admin for the role change below: it ends the connections of every client with the role, and the
    // first head office gave the first admin login that role.
    const second = { username: 'second-admin', password: 'second-admin-password-1' };
    const made = await dynsecAsAdmin(mq, [
      { command: 'createClient', username: second.username, password: second.password, roles: [{ rolename: 'admin' }] },
      { command: 'createRole', rolename: 'dynsec-control', acls: [
        { acltype: 'publishClientSend', topic: '$CONTROL/dynamic-security/#', allow: true },
        { acltype: 'publishClientReceive', topic: '$CONTROL/dynamic-security/#', allow: true },
        { acltype: 'subscribePattern', topic: '$CONTROL/dynamic-security/#', allow: true },
      ] },
      { command: 'createRole', rolename: 'footfall-head-office', acls: [
        { acltype: 'publishClientSend', topic: 'ff/#', allow: true },
        { acltype: 'publishClientReceive', topic: 'ff/#', allow: true },
        { acltype: 'subscribePattern', topic: 'ff/#', allow: true },
      ] },
      { command: 'createClient', username: limited.username, password: limited.password, roles: [{ rolename: 'dynsec-control' }, { rolename: 'footfall-head-office' }] },
    ]);
    // The earlier tests' head office may have made the role already; the client is new.
    expect(made.filter((r) => r.error && !/already/i.test(r.error))).toEqual([]);
    await dynsecAsAdmin({ ...mq, admin: second }, [{ command: 'removeRoleACL', rolename: 'footfall-head-office', acltype: 'subscribePattern', topic: '$share/footfall/ff/#' }, { command: 'removeRoleACL', rolename: 'footfall-head-office', acltype: 'subscribePattern', topic: '$share/footfall-listen/ff/#' }]);
    // The same head office (its client id, so its ingest session and that session's place in the shared
    // subscription) with the new login.
    await h.close();
    h = await startHarness({ ...overrides(), FOOTFALL_MQTT_USERNAME: limited.username, FOOTFALL_MQTT_PASSWORD: limited.password });
    const c = await h.company('Limited Co');
    owner = c.ownerToken;
    company = c.slug;
    const [role] = await dynsecAsAdmin(mq, [{ command: 'getRole', rolename: 'footfall-head-office' }]);
    const topics = ((role!.data as { role: { acls: { topic: string }[] } }).role.acls).map((a) => a.topic);
    expect(topics).toEqual(expect.arrayContaining(['ff/#', '$share/footfall/ff/#', '$share/footfall-listen/ff/#']));
    const shop = await openShop(h, owner, { name: 'Limited' });
    const pc = track(await connectPc(h, await enrol(h, owner, shop.slug)));
    const before = h.server.ingest.stats.stored;
    await pc.publishAsync(upTopic(company, 'limited', 'visit'), JSON.stringify(footfall()), { qos: 1 });
    await waitFor(() => h.server.ingest.stats.stored === before + 1, 10_000);
    await pc.publishAsync(upTopic(company, 'limited', 'heartbeat'), JSON.stringify(heartbeat({ agent_version: '9.9.9' })));
    await waitFor(async () => (await shopRow('limited')).agent_version === '9.9.9', 5000);
  });
});
