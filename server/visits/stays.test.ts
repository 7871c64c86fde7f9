import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFace, type RealFaces } from '../../test/support/faces.js';
import { memberToken } from '../../test/support/shop-pc.js';
import { arrivals, openStream, settled, shopPc, type ShopPc } from '../../test/support/visits.js';
import { feedCursors } from './cursor.js';
import { statementOn } from '../db/statement.js';

/**
 * A visit is a stay (docs/visits-and-customers.md): sightings of one customer in one shop within FOOTFALL_VISIT_GAP_S
 * (the default, 30 minutes, here) are one visit, across cameras and whatever the order of delivery; staff make no
 * arrivals and reports leave them out; the feed cursor reveals nothing. Real broker, real faces, real HTTP.
 */
describe('visits are stays; staff; sealed cursors', () => {
  let h: Harness;
  let faces: RealFaces;
  const minute = 60_000;
  /** The visits' day, D0 (and D1 after it): 30 days ago in UTC, so that a window from it to today stays under a year. */
  const D0 = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  const D1 = new Date(Date.parse(D0) + 86_400_000).toISOString().slice(0, 10);
  const day = Date.parse(`${D0}T09:00:00Z`);
  const at = (minutes: number) => new Date(day + minutes * minute).toISOString();
  /** A pass from `from` to `to` minutes after 09:00 UTC on D0. */
  const pass = (face: RealFace | undefined, from: number, to = from, camera = 'entrance') =>
    visitOf(faces, face, { occurred_at: at(from), camera_id: camera, track: { id: `t-${from}-${camera}`, first_seen_at: at(from), last_seen_at: at(to), frames: 10 } });
  const footfall = (token: string, q = '') => h.request('GET', `/api/reports/footfall?from=${D0}&to=${D0}&tz=UTC${q}`, { token });

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness({ FOOTFALL_INGEST_BATCH_MS: 30 }), realFaces()]);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function company(name: string): Promise<{ c: Company; pc: ShopPc; staff: string }> {
    const c = await h.company(name);
    const pc = await shopPc(h, c.ownerToken, c.slug, 'Main Street');
    return { c, pc, staff: await memberToken(h, c.ownerToken, 'staff') };
  }

  it('one stay across cameras: later sightings extend the visit (no arrival, no history row), a pause longer than the gap makes a returning visit', async () => {
    const { c, pc, staff } = await company('Stays Cameras');
    try {
      const s = await openStream(h, staff);
      try {
        const [p1, p2] = faces.same;
        await pc.publish(pass(p1, 0, 2, 'entrance'));
        await settled(h);
        await pc.publish(pass(p2, 10, 12, 'till'));
        await settled(h);
        await pc.publish(pass(p1, 40, 41, 'door')); // 28 minutes after the till: still the same visit
        await settled(h);
        await pc.publish(pass(p2, 80, 80, 'entrance')); // 39 minutes later: back again
        await pc.publish(pass(undefined, 81)); // somebody nobody knows
        const got = await s.reader.next(3);
        expect(got.map((e) => [e.arrival.visitor_ref, e.arrival.camera_id, e.arrival.is_new_visitor])).toEqual([
          ['V-1', 'entrance', true],
          ['V-1', 'entrance', false],
          [undefined, 'entrance', false],
        ]);
        await settled(h);
        expect(s.reader.events.filter((e) => e.event === 'arrival')).toHaveLength(3);
      } finally {
        await s.close();
      }
      const feed = await arrivals(h, staff, 3);
      expect(feed).toHaveLength(3);
      expect(feed[0]).toMatchObject({ occurred_at: at(0), last_seen_at: at(41), dwell_s: 41 * 60, camera_id: 'entrance', is_new_visitor: true });
      expect(feed[1]).toMatchObject({ occurred_at: at(80), last_seen_at: at(80), dwell_s: 0, is_new_visitor: false });
      expect(feed[2]).toMatchObject({ occurred_at: at(81), dwell_s: 0 });
      const history = (await h.request('GET', '/api/visitors/V-1/history', { token: staff })).body;
      expect(history.map((r: any) => [r.occurred_at, r.last_seen_at, r.dwell_s, r.is_new_visitor])).toEqual([
        [at(80), at(80), 0, false],
        [at(0), at(41), 41 * 60, true],
      ]);
      expect((await h.request('GET', '/api/visitors/V-1', { token: staff })).body).toMatchObject({ visit_count: 2, first_seen_at: at(0), last_seen_at: at(80) });
      const r = await footfall(staff);
      expect(r.body).toMatchObject({ total: 2, visits: 3, average_dwell_s: (41 * 60) / 3 });
      expect(r.body.points).toMatchObject([{ bucket: D0, visitors: 2, new: 1, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null }]);
      expect(await statementOn(h.server.store, 'select count(*) as n from sightings where company_id = ?').get(c.id)).toEqual({ n: 5 });

      // One meaning of "returning", the report's: seen on a visit before this one's local day (the shop's zone,
      // Asia/Kolkata here). Back the next day: returning; the second visit of the first day was not.
      expect(feed.map((r: any) => r.returning)).toEqual([false, false, false]);
      const head = (await h.request('GET', '/api/visits?limit=1', { token: staff })).body.cursor;
      await pc.publish(pass(faces.same[0], 24 * 60 + 60));
      const [nextDay] = await arrivals(h, staff, 1, `&cursor=${head}`);
      expect(nextDay).toMatchObject({ visitor_ref: 'V-1', is_new_visitor: false, returning: true });
      const days = (await h.request('GET', `/api/reports/footfall?from=${D0}&to=${D1}`, { token: staff })).body;
      expect(days.timezone).toBe('Asia/Kolkata');
      expect(days.points).toMatchObject([
        { bucket: D0, visitors: 2, new: 1, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null },
        { bucket: D1, visitors: 1, new: 0, returning: 1, entries: 0, exits: 0, capture_rate: null, open: null },
      ]);
    } finally {
      await pc.close();
    }
  });

  /** Minutes of the passes of one person; in order (gap 30): [0-40] (20 bridges 0 and 40), [100-110], [200]. */
  const script: [number, number][] = [
    [0, 1],
    [20, 22],
    [40, 40],
    [100, 101],
    [110, 110],
    [200, 203],
  ];
  const orders: Record<string, number[]> = {
    'in order': [0, 1, 2, 3, 4, 5],
    reversed: [5, 4, 3, 2, 1, 0],
    // 0 and 40 first (two visits), then 20 bridges them: they become one.
    bridging: [2, 0, 5, 3, 1, 4],
    // 110 then 100: the visit is extended backwards.
    'late start': [4, 5, 2, 1, 0, 3],
  };

  async function playOut(name: string, order: number[], together: boolean) {
    const { c, pc, staff } = await company(`Stays ${name}${together ? ' batch' : ''}`);
    try {
      const msgs = order.map((i) => pass(faces.same[i % 2], script[i]![0], script[i]![1], i % 2 ? 'till' : 'entrance'));
      if (together) await Promise.all(msgs.map((m) => pc.publish(m)));
      else
        for (const m of msgs) {
          await pc.publish(m);
          await settled(h);
        }
      await settled(h);
      const history = (await h.request('GET', '/api/visitors/V-1/history', { token: staff })).body;
      const customer = (await h.request('GET', '/api/visitors/V-1', { token: staff })).body;
      const feed = (await h.request('GET', '/api/visits?limit=1000', { token: staff })).body.arrivals;
      const report = (await footfall(staff)).body;
      return {
        c,
        stays: history.map((r: any) => ({ from: r.occurred_at, to: r.last_seen_at, dwell: r.dwell_s, first: r.is_new_visitor })),
        feed: feed.map((a: any) => [a.occurred_at, a.last_seen_at, a.is_new_visitor]).sort(),
        customer: [customer.visit_count, customer.first_seen_at, customer.last_seen_at],
        report: [report.total, report.visits, report.average_dwell_s, report.points],
      };
    } finally {
      await pc.close();
    }
  }

  it('late and out-of-order delivery gives the same visits as in-order delivery (extended backwards, bridged visits joined), in one batch or many', async () => {
    const expected = [
      { from: at(200), to: at(203), dwell: 180, first: false },
      { from: at(100), to: at(110), dwell: 600, first: false },
      { from: at(0), to: at(40), dwell: 2400, first: true },
    ];
    const seen = new Set<string>();
    for (const [name, order] of Object.entries(orders)) {
      for (const together of [false, true]) {
        const got = await playOut(name, order, together);
        expect(got.stays, `${name}${together ? ' in one batch' : ''}`).toEqual(expected);
        expect(got.feed, name).toEqual(expected.map((s) => [s.from, s.to, s.first]).sort());
        expect(got.customer, name).toEqual([3, at(0), at(203)]);
        expect(got.report, name).toMatchObject([1, 3, 1060, [{ bucket: D0, visitors: 1, new: 1, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null }]]);
        seen.add(got.c.id);
      }
    }
    expect(seen.size).toBe(Object.keys(orders).length * 2);
  });

  it('staff (manager+): no arrivals, left out of footfall and conversion, past windows included; false undoes it; 403 for staff, 404 across companies', async () => {
    const { c, pc, staff } = await company('Stays Staff');
    const other = await company('Stays Staff Other');
    try {
      const manager = await memberToken(h, c.ownerToken, 'manager');
      // Purchases are recorded now: the conversion window runs from the visits' day to today.
      const conversionQuery = `/api/reports/conversion?from=${D0}&to=${new Date().toISOString().slice(0, 10)}&tz=UTC`;
      const [clerk, shopper] = faces.others as [RealFace, RealFace];
      await pc.publish(pass(clerk, 0, 5));
      await settled(h);
      await pc.publish(pass(shopper, 10, 12));
      await settled(h);
      await pc.publish(pass(undefined, 20));
      await arrivals(h, staff, 3);
      for (const ref of ['V-1', 'V-2']) {
        const sale = await h.request('POST', '/api/purchases', { token: staff, body: { visitor_id: ref, site_id: pc.shop.slug, amount: 100, currency: 'INR' } });
        expect(sale.status).toBe(201);
      }
      const before = (await footfall(staff)).body;
      expect(before).toMatchObject({ total: 3, visits: 3 });
      expect(before.points[0]).toMatchObject({ visitors: 3, new: 2 });
      expect((await h.request('GET', conversionQuery, { token: staff })).body).toMatchObject({ visitors: 3, purchasers: 2, revenue: 200 });

      // Who may: a manager (or owner); staff 403; another company's manager 404; bad bodies 400.
      const patch = (token: string, body: unknown, ref = 'V-1') => h.request('PATCH', `/api/visitors/${ref}`, { token, body });
      expect((await patch(staff, { staff: true })).status).toBe(403);
      expect((await patch(other.c.ownerToken, { staff: true })).status).toBe(404);
      expect((await patch(other.c.ownerToken, { staff: true }, (await h.request('GET', '/api/visitors/V-1', { token: staff })).body.id)).status).toBe(404);
      expect((await patch(await h.adminToken(), { staff: true })).status).toBe(404);
      for (const body of [{}, { staff: 'yes' }, { staff: true, full_name: 'x' }]) expect((await patch(manager, body)).status, JSON.stringify(body)).toBe(400);
      const marked = await patch(manager, { staff: true });
      expect(marked.status).toBe(200);
      expect(marked.body).toMatchObject({ ref: 'V-1', staff: true });

      // Lists: ?staff=true only staff, ?staff=false the others.
      const refs = async (q: string) => (await h.request('GET', `/api/visitors${q}`, { token: staff })).body.map((x: any) => x.ref);
      expect(await refs('?staff=true')).toEqual(['V-1']);
      expect(await refs('?staff=false')).toEqual(['V-2']);
      expect((await h.request('GET', '/api/visitors?staff=maybe', { token: staff })).status).toBe(400);
      expect(await refs('')).toEqual(['V-2', 'V-1']);

      // Reports of the past window leave the clerk out; the feed no longer lists the clerk's arrival.
      const after = (await footfall(staff)).body;
      expect(after).toMatchObject({ total: 2, visits: 2 });
      expect(after.points[0]).toMatchObject({ visitors: 2, new: 1, returning: 0 });
      expect((await h.request('GET', conversionQuery, { token: staff })).body).toMatchObject({ visitors: 2, purchasers: 1, revenue: 100 });
      expect((await h.request('GET', '/api/visits?limit=100', { token: staff })).body.arrivals.map((a: any) => a.visitor_ref ?? '-')).toEqual(['V-2', '-']);

      // From now on the clerk's sightings make no arrival (feed or stream); history still has them.
      const s = await openStream(h, staff);
      try {
        await pc.publish(pass(clerk, 120, 125));
        await settled(h);
        await pc.publish(pass(undefined, 130));
        const got = await s.reader.next(1);
        expect(got[0]!.arrival.visitor_ref).toBeUndefined();
        await settled(h);
        expect(s.reader.events.filter((e) => e.event === 'arrival')).toHaveLength(1);
      } finally {
        await s.close();
      }
      expect((await h.request('GET', '/api/visitors/V-1/history', { token: staff })).body).toHaveLength(2);
      expect((await footfall(staff)).body).toMatchObject({ total: 3, visits: 3 }); // V-2 and two unidentified

      // Undone: the clerk counts again, past visits included.
      const undone = await patch(c.ownerToken, { staff: false });
      expect(undone.body).toMatchObject({ staff: false });
      expect((await footfall(staff)).body).toMatchObject({ total: 4, visits: 5 });
      expect(await refs('?staff=true')).toEqual([]);
      const audit = await statementOn(h.server.store, "select action from audit_log where target = ? and action like 'customer.%staff' order by id").all(marked.body.id);
      expect(audit).toEqual([{ action: 'customer.staff' }, { action: 'customer.not_staff' }]);
    } finally {
      await Promise.all([pc.close(), other.pc.close()]);
    }
  });

  it('a merge joins the survivor\'s visits that now fall within the gap in one shop into one stay; visits apart stay apart', async () => {
    const { c, pc, staff } = await company('Stays Merge');
    const manager = await memberToken(h, c.ownerToken, 'manager');
    try {
      // One person enrolled twice (two customers): 09:00-09:05 as V-1, 09:15-09:20 and 12:20 as V-2.
      const [a, b] = faces.others;
      await pc.publish(pass(a, 0, 5));
      await settled(h);
      await pc.publish(pass(b, 15, 20, 'till'));
      await pc.publish(pass(b, 200, 201));
      await settled(h);
      expect((await footfall(staff)).body).toMatchObject({ total: 2, visits: 3 });
      const r = await h.request('POST', '/api/visitors/V-2/merge', { token: manager, body: { into: 'V-1' } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ ref: 'V-1', visit_count: 2, merged: { ref: 'V-2', visits_moved: 2, visits_joined: 1 } });
      const history = (await h.request('GET', '/api/visitors/V-1/history', { token: staff })).body;
      expect(history.map((x: any) => [x.occurred_at, x.last_seen_at, x.dwell_s, x.is_new_visitor])).toEqual([
        [at(200), at(201), 60, false],
        [at(0), at(20), 20 * 60, true],
      ]);
      const feed = await arrivals(h, staff, 2);
      expect(feed.map((x: any) => [x.visitor_ref, x.occurred_at, x.last_seen_at])).toEqual([
        ['V-1', at(0), at(20)],
        ['V-1', at(200), at(201)],
      ]);
      expect((await footfall(staff)).body).toMatchObject({ total: 1, visits: 2, points: [{ bucket: D0, visitors: 1, new: 1, returning: 0 }] });
      // A later sighting in the gap of the joined stay extends it, as for any stay.
      await pc.publish(pass(a, 40, 41));
      await settled(h);
      expect((await h.request('GET', '/api/visitors/V-1/history', { token: staff })).body.map((x: any) => [x.occurred_at, x.last_seen_at])).toEqual([
        [at(200), at(201)],
        [at(0), at(41)],
      ]);
    } finally {
      await pc.close();
    }
  });

  it('the feed cursor reveals nothing: sealed per company, the same position reads differently in another company, old cursors are dropped', async () => {
    const one = await company('Cursor One');
    const two = await company('Cursor Two');
    try {
      await one.pc.publish(pass(undefined, 300));
      await two.pc.publish(pass(undefined, 301));
      await arrivals(h, one.staff, 1);
      await arrivals(h, two.staff, 1);
      const c1 = (await h.request('GET', '/api/visits?limit=1', { token: one.staff })).body.cursor as string;
      const c2 = (await h.request('GET', '/api/visits?limit=1', { token: two.staff })).body.cursor as string;
      for (const cur of [c1, c2]) {
        expect(cur).toMatch(/^[A-Za-z0-9_-]{48}$/);
        expect(Buffer.from(cur, 'base64url').toString('latin1')).not.toMatch(/^v\d:/);
      }
      // The same position is another string for another company, and does not open there.
      const cursors = feedCursors(h.server.deps.keys);
      const seq = cursors.decode(one.c.id, c1)!;
      expect(seq).toBeGreaterThan(0);
      expect(cursors.encode(two.c.id, seq)).not.toBe(c1);
      const cross = await h.request('GET', `/api/visits?cursor=${c1}`, { token: two.staff });
      expect(cross.status).toBe(400);
      expect(cross.body.error).toBe('invalid_cursor');
      // Consecutive positions do not look consecutive.
      const next = cursors.encode(one.c.id, seq + 1);
      expect([...Buffer.from(next, 'base64url')].filter((b, i) => b === Buffer.from(c1, 'base64url')[i]).length).toBeLessThan(8);
      // An old cursor (base64url of `v1:<n>`): 400 invalid_cursor telling the client to poll without one, which works.
      const old = await h.request('GET', `/api/visits?cursor=${Buffer.from(`v1:${seq}`).toString('base64url')}`, { token: one.staff });
      expect(old.status).toBe(400);
      expect(old.body).toMatchObject({ error: 'invalid_cursor', message: expect.stringMatching(/poll without a cursor/) });
      const fresh = await h.request('GET', '/api/visits', { token: one.staff });
      expect(fresh.status).toBe(200);
      expect(fresh.body.cursor).toBe(c1);
      const empty = await h.request('GET', `/api/visits?cursor=${fresh.body.cursor}`, { token: one.staff });
      expect(empty.body).toMatchObject({ arrivals: [], cursor: c1 });
    } finally {
      await Promise.all([one.pc.close(), two.pc.close()]);
    }
  });
});
