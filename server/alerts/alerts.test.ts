import { randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import type { Heartbeat } from '../../shared/messages.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { addCamera, connectPc, enrol, heartbeat, openShop, waitFor } from '../../test/support/shop-pc.js';
import { zoneAwayFromMidnight } from '../../test/support/visits.js';

/**
 * The rules other than "shop PC offline" and "camera down" (those run end to end with the real shop PC in
 * test/alerts-e2e.test.ts), through a shop PC speaking MQTT: occupancy over the limit, faces too poor (naming the
 * camera), door not counting while open, the `after_minutes` wait, a rule switched off clearing its alert, each
 * raised once and cleared once. Passes run by hand (AlertRunner.tick) at chosen instants.
 */
describe('alert rules', () => {
  let h: Harness;
  let c: Company;
  let other: Company;
  let pc: MqttClient;
  let shop: { site_id: string; slug: string };
  const LINE = { a: [0.5, 0.95], b: [0.5, 0.05], inside: 'right' };

  const beat = async (over: Partial<Heartbeat>) => {
    // Head office writes heartbeats together every 500 ms: wait for this one to be stored (its time), not only for a
    // value that the one before may already have had.
    const site = async () => (await h.request('GET', `/api/sites/${shop.slug}`, { token: c.ownerToken })).body;
    const before = (await site()).last_heartbeat_at;
    const sent = new Date().toISOString();
    await pc.publishAsync(upTopic(c.slug, shop.slug, 'heartbeat'), JSON.stringify(heartbeat({ sent_at: sent, ...over })), { qos: 1 });
    await waitFor(async () => {
      const now = await site();
      return now.last_heartbeat_at !== before && now.fraction_below_gate === (over.fraction_below_gate ?? 0.1);
    }, 5000);
  };
  const cross = async (direction: 'in' | 'out') => {
    const before = h.server.crossings.stats.stored;
    await pc.publishAsync(upTopic(c.slug, shop.slug, 'crossing'), JSON.stringify({ crossing_id: randomUUID(), occurred_at: new Date().toISOString(), camera_id: 'door', direction }), { qos: 1 });
    await waitFor(() => h.server.crossings.stats.stored === before + 1, 5000);
  };
  const open = async () => ((await h.request('GET', '/api/alerts?state=open', { token: c.ownerToken })).body.alerts as any[]).map((a) => a.kind).sort();
  const history = async () => (await h.request('GET', '/api/alerts', { token: c.ownerToken })).body.alerts as any[];

  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_ALERT_INTERVAL_S: 3600 });
    [c, other] = await Promise.all([h.company('Rules Co'), h.company('Rules Other')]);
    // Occupancy is today's: a zone where it is not near midnight, so the entries and the passes fall on one day.
    shop = await openShop(h, c.ownerToken, { name: 'Fort', timezone: zoneAwayFromMidnight() });
    pc = await connectPc(h, await enrol(h, c.ownerToken, shop.slug));
    await addCamera(h, c.ownerToken, shop.slug, { camera_id: 'door', label: 'Front door', tuning: { line: LINE } });
    const allDay = [{ open: '00:00', close: '24:00' }];
    await h.request('PATCH', `/api/sites/${shop.slug}`, { token: c.ownerToken, body: { occupancy_limit: 1, opening_hours: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, allDay])) } });
    await h.request('PATCH', '/api/alerts/settings', { token: c.ownerToken, body: { email_to: [] } });
  });
  afterAll(async () => {
    await pc?.endAsync(true);
    await h?.close();
  });

  it('raises occupancy, poor faces and a door not counting while open, each once, and clears each once', async () => {
    await beat({ fraction_below_gate: 0.7, worst_camera_id: 'door' });
    await cross('in');
    await cross('in');
    await h.server.alerts.tick();
    await h.server.alerts.tick();
    expect(await open()).toEqual(['faces_too_poor', 'occupancy_over_limit']);
    const faces = (await history()).find((a) => a.kind === 'faces_too_poor');
    expect(faces.message).toMatch(/camera "Front door" sees 70 % of faces too poor/);
    expect((await history()).find((a) => a.kind === 'occupancy_over_limit').message).toMatch(/2 people in, over its limit of 1/);

    await beat({ fraction_below_gate: 0.7, worst_camera_id: 'door', door_counting_problem: 'the person detector would not load' });
    await h.server.alerts.tick();
    expect(await open()).toEqual(['door_not_counting', 'faces_too_poor', 'occupancy_over_limit']);
    expect((await history()).find((a) => a.kind === 'door_not_counting').message).toMatch(/not counting while the shop is open: the person detector would not load/);

    await cross('out');
    await beat({ fraction_below_gate: 0.1 });
    await h.server.alerts.tick();
    await h.server.alerts.tick();
    expect(await open()).toEqual([]);
    const all = await history();
    expect(all.map((a) => a.kind).sort()).toEqual(['door_not_counting', 'faces_too_poor', 'occupancy_over_limit']);
    expect(all.every((a) => a.cleared_at !== null && !a.open)).toBe(true);
  });

  it('waits after_minutes before raising; a rule switched off clears its alert; another company sees nothing', async () => {
    await h.request('PATCH', '/api/alerts/settings', { token: c.ownerToken, body: { rules: { faces_too_poor: { after_minutes: 1, threshold: 0.6 } } } });
    await beat({ fraction_below_gate: 0.65 });
    const now = Date.now();
    await h.server.alerts.tick(now);
    expect(await open()).toEqual([]);
    await h.server.alerts.tick(now + 61_000);
    expect(await open()).toEqual(['faces_too_poor']);

    const off = await h.request('PATCH', '/api/alerts/settings', { token: c.ownerToken, body: { rules: { faces_too_poor: { enabled: false } } } });
    expect(off.body.rules.faces_too_poor).toEqual({ enabled: false, after_minutes: 1, threshold: 0.6 });
    await h.server.alerts.tick(now + 62_000);
    expect(await open()).toEqual([]);

    expect((await h.request('GET', '/api/alerts', { token: other.ownerToken })).body).toEqual({ alerts: [], next_cursor: null, open_count: 0 });
    expect((await h.request('GET', '/api/alerts/settings', { token: other.ownerToken })).body.rules.faces_too_poor).toEqual({ enabled: true, after_minutes: 0, threshold: 0.5 });
  });
});
