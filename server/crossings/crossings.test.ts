import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrolResponse } from '../../shared/agent-api.js';
import type { CrossingMessage } from '../../shared/messages.js';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { addCamera, closed, connectPc, enrol, memberToken, openShop } from '../../test/support/shop-pc.js';
import { zoneAwayFromMidnight } from '../../test/support/visits.js';
import { addDays, localToUtc, todayIn } from '../reports/calendar.js';
import { shopsToday } from './service.js';
import { crossings } from '../db/tables.js';

const LINE = { a: [0.1, 0.5], b: [0.9, 0.5], inside: 'right' };

/** An enrolled shop whose PC publishes crossings like the agent: QoS 1, the PUBACK only once stored. */
interface DoorPc {
  shop: { site_id: string; slug: string; name: string };
  enrolment: EnrolResponse;
  client: MqttClient;
  topic: string;
  publish(msg: CrossingMessage | string, client?: MqttClient): Promise<void>;
}

async function doorPc(h: Harness, c: Company, name: string, timezone = 'Asia/Kolkata'): Promise<DoorPc> {
  const shop = await openShop(h, c.ownerToken, { name, timezone });
  const enrolment = await enrol(h, c.ownerToken, shop.slug);
  const client = await connectPc(h, enrolment);
  const topic = upTopic(c.slug, shop.slug, 'crossing');
  return {
    shop,
    enrolment,
    client,
    topic,
    async publish(msg, other) {
      await (other ?? client).publishAsync(topic, typeof msg === 'string' ? msg : JSON.stringify(msg), { qos: 1 });
    },
  };
}

function crossing(over: Partial<CrossingMessage> = {}): CrossingMessage {
  return { crossing_id: randomUUID(), occurred_at: new Date().toISOString(), camera_id: 'door', direction: 'in', track_id: 't1', ...over };
}

describe('crossings: ingest over the real broker, and the shops\' day at the door', () => {
  let h: Harness;
  let a: Company;
  let b: Company;
  let pcA: DoorPc;
  let pcA2: DoorPc;
  let pcB: DoorPc;
  let staffA: string;
  let doorA: any;

  const rowsOf = async (shopId: string) => await h.server.store.db.select().from(crossings).where(eq(crossings.shopId, shopId));
  const site = async (token: string, slug: string) => {
    const list = await h.request('GET', '/api/sites', { token });
    expect(list.status).toBe(200);
    const one = await h.request('GET', `/api/sites/${slug}`, { token });
    expect(one.status).toBe(200);
    const row = list.body.find((s: any) => s.slug === slug);
    expect(one.body).toEqual({ ...row, online: one.body.online, last_heartbeat_at: one.body.last_heartbeat_at });
    return row;
  };

  beforeAll(async () => {
    h = await startHarness();
    a = await h.company('Door Alpha');
    b = await h.company('Door Beta');
    pcA = await doorPc(h, a, 'Andheri');
    pcA2 = await doorPc(h, a, 'Bandra', 'Europe/London');
    pcB = await doorPc(h, b, 'Andheri');
    staffA = await memberToken(h, a.ownerToken, 'staff');
    doorA = await addCamera(h, a.ownerToken, pcA.shop.slug, { camera_id: 'door', tuning: { line: LINE } });
  });
  afterAll(async () => {
    await Promise.all([pcA, pcA2, pcB].map((p) => p?.client.endAsync(true).catch(() => {})));
    await h?.close();
  });

  it('stores a crossing once it is acknowledged, with its camera; re-sends (also on a new connection) are counted once', async () => {
    const before = h.server.crossings.stats;
    const m = crossing({ direction: 'in' });
    await pcA.publish(m);
    // The PUBACK came after the write: the row is there now.
    let rows = await rowsOf(pcA.shop.site_id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ crossingId: m.crossing_id, cameraId: 'door', cameraUuid: doorA.id, direction: 'in', occurredAt: m.occurred_at, trackId: 't1' });
    // The shop PC did not see the PUBACK and sends it again, on this connection and after reconnecting.
    await pcA.publish(m);
    await pcA.publish({ ...m, crossing_id: m.crossing_id.toUpperCase() });
    const again = await connectPc(h, pcA.enrolment);
    await pcA.publish(m, again);
    await again.endAsync(true);
    rows = await rowsOf(pcA.shop.site_id);
    expect(rows).toHaveLength(1);
    const s = h.server.crossings.stats;
    expect(s.stored - before.stored).toBe(1);
    expect(s.duplicates - before.duplicates).toBe(3);
    const row = await site(staffA, pcA.shop.slug);
    expect(row).toMatchObject({ occupancy: 1, entries_today: 1, exits_today: 0 });
  });

  it("the same crossing_id from another shop (and another company) is that shop's own: no collision, nothing leaks", async () => {
    const id = randomUUID();
    await pcA.publish(crossing({ crossing_id: id, direction: 'in' }));
    await pcA2.publish(crossing({ crossing_id: id, direction: 'out' }));
    await pcB.publish(crossing({ crossing_id: id, direction: 'out' }));
    expect((await rowsOf(pcA.shop.site_id)).filter((r) => r.crossingId === id)).toMatchObject([{ direction: 'in' }]);
    expect(await rowsOf(pcA2.shop.site_id)).toMatchObject([{ crossingId: id, direction: 'out' }]);
    expect(await rowsOf(pcB.shop.site_id)).toMatchObject([{ crossingId: id, direction: 'out', companyId: b.id }]);
    expect(await site(staffA, pcA.shop.slug)).toMatchObject({ occupancy: 2, entries_today: 2, exits_today: 0 });
    // Company B sees only its own shops, and its Andheri has no line: null.
    const bList = (await h.request('GET', '/api/sites', { token: b.ownerToken })).body;
    expect(bList.map((s: any) => s.site_id)).toEqual([pcB.shop.site_id]);
    expect(bList[0]).toMatchObject({ occupancy: null, entries_today: null, exits_today: null });
    expect((await h.request('GET', `/api/sites/${pcA.shop.site_id}`, { token: b.ownerToken })).status).toBe(404);
  });

  it("a shop PC publishing under another shop's topic is refused (connection closed) and nothing is stored", async () => {
    const intruder = await connectPc(h, pcA.enrolment);
    const gone = closed(intruder);
    const id = randomUUID();
    intruder.publish(pcB.topic, JSON.stringify(crossing({ crossing_id: id })), { qos: 1 });
    await gone;
    const otherShop = await connectPc(h, pcA.enrolment);
    const gone2 = closed(otherShop);
    otherShop.publish(pcA2.topic, JSON.stringify(crossing({ crossing_id: id })), { qos: 1 });
    await gone2;
    expect((await rowsOf(pcB.shop.site_id)).some((r) => r.crossingId === id)).toBe(false);
    expect((await rowsOf(pcA2.shop.site_id)).some((r) => r.crossingId === id)).toBe(false);
  });

  it('bad payloads are logged and dropped (acknowledged, connection kept, nothing stored); a good one after them is stored', async () => {
    const before = h.server.crossings.stats;
    const count = (await rowsOf(pcA.shop.site_id)).length;
    const bad = [
      'not json',
      '[]',
      JSON.stringify({ ...crossing(), direction: 'sideways' }),
      JSON.stringify({ ...crossing(), crossing_id: 'not-a-uuid' }),
      JSON.stringify({ ...crossing(), occurred_at: 'yesterday' }),
      JSON.stringify({ ...crossing(), camera_id: '' }),
      JSON.stringify({ direction: 'in' }),
    ];
    for (const p of bad) await pcA.publish(p);
    expect(pcA.client.connected).toBe(true);
    expect(h.server.crossings.stats.invalid - before.invalid).toBe(bad.length);
    expect(await rowsOf(pcA.shop.site_id)).toHaveLength(count);
    await pcA.publish(crossing({ direction: 'out' }));
    expect(await rowsOf(pcA.shop.site_id)).toHaveLength(count + 1);
  });

  it("a suspended company's crossings are dropped (acknowledged, not stored); once active again they count", async () => {
    const c = await h.company('Door Suspended');
    const pc = await doorPc(h, c, 'Only');
    try {
      const admin = await h.adminToken();
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: false } })).status).toBe(200);
      const before = h.server.crossings.stats.suspended;
      await pc.publish(crossing());
      expect(h.server.crossings.stats.suspended - before).toBe(1);
      expect(await rowsOf(pc.shop.site_id)).toHaveLength(0);
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: true } })).status).toBe(200);
      await pc.publish(crossing());
      expect(await rowsOf(pc.shop.site_id)).toHaveLength(1);
    } finally {
      await pc.client.endAsync(true).catch(() => {});
    }
  });

  it('a camera_id the shop does not have: stored for the shop without a camera (counted, logged)', async () => {
    const before = h.server.crossings.stats.unknownCamera;
    const m = crossing({ camera_id: 'side-door' });
    await pcA.publish(m);
    expect((await rowsOf(pcA.shop.site_id)).find((r) => r.crossingId === m.crossing_id)).toMatchObject({ cameraId: 'side-door', cameraUuid: null });
    expect(h.server.crossings.stats.unknownCamera - before).toBe(1);
  });

  it('occupancy: in time order, never below zero (an exit before any entry leaves 0), reset at the local midnight; null without a line', async () => {
    const c = await h.company('Door Gamma');
    const pc = await doorPc(h, c, 'Juhu', 'America/New_York');
    try {
      // No camera yet, then a camera without a line: null.
      expect(await site(c.ownerToken, pc.shop.slug)).toMatchObject({ occupancy: null, entries_today: null, exits_today: null });
      const cam = await addCamera(h, c.ownerToken, pc.shop.slug, { camera_id: 'door' });
      expect(await site(c.ownerToken, pc.shop.slug)).toMatchObject({ occupancy: null });
      await h.request('PATCH', `/api/cameras/${cam.id}`, { token: c.ownerToken, body: { tuning: { line: LINE } } });
      expect(await site(c.ownerToken, pc.shop.slug)).toMatchObject({ occupancy: 0, entries_today: 0, exits_today: 0 });

      const tz = 'America/New_York';
      const today = todayIn(tz, new Date());
      const midnight = localToUtc(tz, today);
      const at = (ms: number) => new Date(midnight + ms).toISOString();
      // Yesterday evening: three in, not counted today.
      for (let i = 1; i <= 3; i++) await pc.publish(crossing({ direction: 'in', occurred_at: at(-i * 60_000) }));
      // Today: an exit before any entry (someone who came in yesterday), then in, in, out, out, out, in.
      const seq: ['in' | 'out', number][] = [['out', 1], ['in', 2], ['in', 3], ['out', 4], ['out', 5], ['out', 6], ['in', 7]]; // seconds after midnight
      // Sent out of order (the shop PC's disk queue gives no order guarantee); counted in time order.
      for (const [direction, second] of [...seq].reverse()) await pc.publish(crossing({ direction, occurred_at: at(second * 1000) }));
      expect(await site(c.ownerToken, pc.shop.slug)).toMatchObject({ occupancy: 1, entries_today: 3, exits_today: 4 });

      // The same shop seen at fixed instants: before midnight (yesterday's three), just after it (the exit: 0).
      const shopRow = { id: pc.shop.site_id, timezone: tz };
      const db = h.server.store.db;
      expect((await shopsToday(db, [shopRow], new Date(midnight - 1))).get(shopRow.id)).toEqual({ occupancy: 3, entriesToday: 3, exitsToday: 0 });
      expect((await shopsToday(db, [shopRow], new Date(midnight + 1500))).get(shopRow.id)).toEqual({ occupancy: 1, entriesToday: 3, exitsToday: 4 });
      // Tomorrow: nothing yet.
      const tomorrow = localToUtc(tz, addDays(today, 1));
      expect((await shopsToday(db, [shopRow], new Date(tomorrow + 1))).get(shopRow.id)).toEqual({ occupancy: 0, entriesToday: 0, exitsToday: 0 });

      // Clearing the line: null again.
      await h.request('PATCH', `/api/cameras/${cam.id}`, { token: c.ownerToken, body: { tuning: { line: null } } });
      expect(await site(c.ownerToken, pc.shop.slug)).toMatchObject({ occupancy: null, entries_today: null, exits_today: null });
    } finally {
      await pc.client.endAsync(true).catch(() => {});
    }
  });

  it('polled occupancy stays exact: nothing new, later crossings (walk continued), a late one with an earlier time (walked again)', async () => {
    const c = await h.company('Door Epsilon');
    // Crossings a minute past the shop's last midnight, polled as today's: a zone where that midnight is hours ago and
    // the next one hours away (in UTC, at 00:00 UTC the day could turn between them and the polls).
    const tz = zoneAwayFromMidnight();
    const pc = await doorPc(h, c, 'Colaba', tz);
    try {
      await addCamera(h, c.ownerToken, pc.shop.slug, { camera_id: 'door', tuning: { line: LINE } });
      const midnight = localToUtc(tz, todayIn(tz, new Date()));
      const at = (s: number) => new Date(midnight + s * 1000).toISOString();
      const poll = async () => {
        const r = await site(c.ownerToken, pc.shop.slug);
        return [r.occupancy, r.entries_today, r.exits_today];
      };
      await pc.publish(crossing({ direction: 'in', occurred_at: at(10) }));
      await pc.publish(crossing({ direction: 'in', occurred_at: at(20) }));
      expect(await poll()).toEqual([2, 2, 0]);
      expect(await poll()).toEqual([2, 2, 0]); // nothing new
      await pc.publish(crossing({ direction: 'out', occurred_at: at(30) }));
      await pc.publish(crossing({ direction: 'out', occurred_at: at(40) }));
      await pc.publish(crossing({ direction: 'out', occurred_at: at(50) })); // at 0 already: stays 0
      expect(await poll()).toEqual([0, 2, 3]);
      await pc.publish(crossing({ direction: 'in', occurred_at: at(60) }));
      expect(await poll()).toEqual([1, 3, 3]);
      // Delivered late with an earlier time: in at 45 s, then the exit at 50 s takes it back out; the entry at 60 s: 1.
      await pc.publish(crossing({ direction: 'in', occurred_at: at(45) }));
      expect(await poll()).toEqual([1, 4, 3]);
      // Another late one: in at 5 s (before everything): 10, 20, 5 in; 30, 40 out -> 1; 45 in -> 2; 50 out -> 1; 60 in -> 2.
      await pc.publish(crossing({ direction: 'in', occurred_at: at(5) }));
      expect(await poll()).toEqual([2, 5, 3]);
      // The same instant as the last one walked: entries count before exits there.
      await pc.publish(crossing({ direction: 'out', occurred_at: at(60) }));
      expect(await poll()).toEqual([1, 5, 4]);
    } finally {
      await pc.client.endAsync(true).catch(() => {});
    }
  });

  it('a DST day: the local day is 23 hours and its midnight is where the clocks say', async () => {
    // Europe/London 2026-03-29: clocks go 01:00 -> 02:00. Local midnight is 00:00 GMT; the next one 23:00 UTC.
    const shopRow = { id: pcA2.shop.site_id, timezone: 'Europe/London' };
    const db = h.server.store.db;
    const msgs: CrossingMessage[] = [
      crossing({ direction: 'in', occurred_at: '2026-03-28T23:59:59.000Z' }), // Saturday
      crossing({ direction: 'in', occurred_at: '2026-03-29T00:00:00.000Z' }), // Sunday 00:00 GMT
      crossing({ direction: 'in', occurred_at: '2026-03-29T22:59:59.000Z' }), // Sunday 23:59:59 BST
      crossing({ direction: 'in', occurred_at: '2026-03-29T23:00:00.000Z' }), // Monday 00:00 BST
    ];
    for (const m of msgs) await pcA2.publish(m);
    expect((await shopsToday(db, [shopRow], new Date('2026-03-29T12:00:00Z'))).get(shopRow.id)).toEqual({ occupancy: null, entriesToday: null, exitsToday: null });
    await addCamera(h, a.ownerToken, pcA2.shop.slug, { camera_id: 'door', tuning: { line: LINE } });
    expect((await shopsToday(db, [shopRow], new Date('2026-03-29T12:00:00Z'))).get(shopRow.id)).toEqual({ occupancy: 2, entriesToday: 2, exitsToday: 0 });
    expect((await shopsToday(db, [shopRow], new Date('2026-03-29T23:30:00Z'))).get(shopRow.id)).toEqual({ occupancy: 1, entriesToday: 1, exitsToday: 0 });
  });

  it('a burst of concurrent publishes: every one stored (batched), counted in time order', async () => {
    const before = await site(staffA, pcA.shop.slug);
    const stored = h.server.crossings.stats.stored;
    const at = new Date().toISOString();
    // Same instant: entries count first, so 25 in and 25 out leave the occupancy as it was.
    const burst = Array.from({ length: 50 }, (_, i) => crossing({ direction: i % 2 ? 'out' : 'in', occurred_at: at }));
    await Promise.all(burst.map((m) => pcA.publish(m)));
    expect(h.server.crossings.stats.stored - stored).toBe(50);
    expect(await site(staffA, pcA.shop.slug)).toMatchObject({
      occupancy: before.occupancy,
      entries_today: before.entries_today + 25,
      exits_today: before.exits_today + 25,
    });
  });

  it('a shop with entry and exit history is not removed (site_not_empty), like one with visits', async () => {
    const c = await h.company('Door Delta');
    const pc = await doorPc(h, c, 'Versova');
    try {
      await pc.publish(crossing({ camera_id: 'gone' }));
      const blocked = await h.request('DELETE', `/api/sites/${pc.shop.slug}`, { token: c.ownerToken });
      expect(blocked.status).toBe(409);
      expect(blocked.body).toEqual({ error: 'site_not_empty', message: expect.stringContaining('entry and exit history (1 crossing)') });
      expect(await rowsOf(pc.shop.site_id)).toHaveLength(1);
    } finally {
      await pc.client.endAsync(true).catch(() => {});
    }
  });
});
