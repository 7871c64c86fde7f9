import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import type { CrossingMessage, VisitMessage } from '../../shared/messages.js';
import { randomUUID } from 'node:crypto';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFace, type RealFaces } from '../../test/support/faces.js';
import { connectPc, enrol, memberToken, openShop } from '../../test/support/shop-pc.js';
import { arrivals, settled } from '../../test/support/visits.js';
import { resolveReportQuery, ReportQueryInput } from './query.js';

/** An opened, enrolled shop in a given time zone whose PC publishes visits like the agent (QoS 1). */
async function shopIn(h: Harness, c: Company, name: string, timezone?: string) {
  const shop = await openShop(h, c.ownerToken, timezone ? { name, timezone } : { name });
  const client = await connectPc(h, await enrol(h, c.ownerToken, shop.slug));
  const topic = upTopic(c.slug, shop.slug, 'visit');
  const crossingTopic = upTopic(c.slug, shop.slug, 'crossing');
  return {
    shop: shop as { site_id: string; slug: string; name: string; timezone: string },
    publish: (msg: VisitMessage) => client.publishAsync(topic, JSON.stringify(msg), { qos: 1 }),
    /** One crossing of the door's counting line (acknowledged once stored). */
    cross: (direction: 'in' | 'out', at: string) =>
      client.publishAsync(crossingTopic, JSON.stringify({ crossing_id: randomUUID(), occurred_at: at, camera_id: 'door', direction } satisfies CrossingMessage), { qos: 1 }),
    close: () => client.endAsync(true).catch(() => {}),
  };
}
type Shop = Awaited<ReturnType<typeof shopIn>>;

/** A report without the additive dwell, band and previous-period figures (docs/reports.md), as the spec shapes it. */
const POINT_EXTRAS = ['visits', 'average_dwell_s', 'median_dwell_s', 'age', 'gender', 'with_age', 'with_gender'];
const REPORT_EXTRAS = ['median_dwell_s', 'age', 'gender', 'with_age', 'with_gender', 'sites', 'previous', 'change'];
const without = (o: any, keys: string[]) => Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
const older = (body: any) => ({ ...without(body, REPORT_EXTRAS), ...(body.points ? { points: body.points.map((p: any) => without(p, POINT_EXTRAS)) } : {}) });

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
/** The points that are not all zeros, as [label, visitors, new, returning]. */
const nonEmpty = (points: any[]) => points.filter((p) => p.visitors > 0).map((p) => [p.bucket, p.visitors, p.new, p.returning]);

describe('GET /api/reports/footfall and /api/reports/conversion', () => {
  let h: Harness;
  let faces: RealFaces;
  let a: Company;
  let b: Company;
  let c: Company;
  let d: Company;
  let staff: string;
  let andheri: Shop;
  let brooklyn: Shop;
  let powai: Shop;
  let deira: Shop;
  let bandra: Shop;
  /** Visit ids by name (v1...), for checking what ingest recorded. */
  const sent: Record<string, string> = {};

  const footfall = (query: string, token = staff) => h.request('GET', `/api/reports/footfall?${query}`, { token });
  const conversion = (query: string, token = staff) => h.request('GET', `/api/reports/conversion?${query}`, { token });

  async function visit(pc: Shop, name: string, at: string, face: RealFace | undefined, over: Partial<VisitMessage> = {}) {
    const msg = visitOf(faces, face, { occurred_at: at, camera_id: 'door', ...over });
    sent[name] = msg.visit_id;
    await pc.publish(msg);
    await settled(h);
  }

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness(), realFaces()]);
    [a, b, c, d] = await Promise.all([h.company('Reports Alpha'), h.company('Reports Beta'), h.company('Reports Gamma'), h.company('Reports Delta')]);
    // Andheri is A's first shop (Asia/Kolkata, the default); Brooklyn is in New York.
    andheri = await shopIn(h, a, 'Andheri');
    brooklyn = await shopIn(h, a, 'Brooklyn', 'America/New_York');
    powai = await shopIn(h, b, 'Powai');
    // C's first shop is in Dubai; D has no shop.
    [deira, bandra] = [await shopIn(h, c, 'Deira', 'Asia/Dubai'), await shopIn(h, c, 'Bandra')];
    staff = await memberToken(h, a.ownerToken, 'staff');
    const [p1, p2, p3, p4] = faces.others as [RealFace, RealFace, RealFace, RealFace];

    // New York moves its clocks from 02:00 EST to 03:00 EDT on 2026-03-08 (07:00Z). India is UTC+05:30 all year:
    // 2026-03-09 00:00 IST is 2026-03-08T18:30Z.
    await visit(brooklyn, 'v1', '2026-03-08T06:30:00Z', p1); // 01:30 EST: P1's first visit ever
    await visit(brooklyn, 'v2', '2026-03-08T07:15:00Z', p1); // 03:15 EDT
    await visit(brooklyn, 'v3', '2026-03-08T07:40:00Z', undefined); // unidentified, below the gate
    await visit(brooklyn, 'v4', '2026-03-08T07:50:00Z', p2); // P2's first visit
    await visit(brooklyn, 'v5', '2026-03-08T13:00:00Z', p1, { passed_gate: false, quality: 0.3 }); // P1 recognised below the gate
    // P3's later visit reaches head office first (a shop PC's queue); P3's first visit ever is the earlier one, on the
    // other side of Indian midnight, and the new-visitor mark moves to it when it arrives. 45 minutes apart: two
    // visits (stays) with the default FOOTFALL_VISIT_GAP_S of 30 minutes.
    await visit(andheri, 'v6', '2026-03-08T18:45:00Z', p3); // 2026-03-09 00:15 IST
    await visit(andheri, 'v7', '2026-03-08T18:00:00Z', p3); // 2026-03-08 23:30 IST
    await visit(andheri, 'v8', '2026-03-08T18:20:00Z', undefined); // 23:50 IST, below the gate
    await visit(andheri, 'v9', '2026-03-08T19:00:00Z', undefined, { passed_gate: true, quality: 0.8 }); // 00:30 IST, unidentified
    await visit(andheri, 'v10', '2026-03-09T04:00:00Z', p1); // exactly 2026-03-09 00:00 EDT; P1 came to Brooklyn first
    await visit(andheri, 'v11', '2026-03-10T10:00:00Z', p4); // P4's first visit
    await visit(brooklyn, 'v12', '2026-03-01T15:00:00Z', undefined); // Sunday 1 March, below the gate
    await visit(andheri, 'v13', '2026-02-28T20:00:00Z', undefined, { passed_gate: true }); // 1 March 01:30 IST, 28 February 15:00 EST
    // Another company's visit in the same hours: never counted for A.
    await visit(powai, 'b1', '2026-03-08T07:20:00Z', p1);

    // Brooklyn's door (entries and exits) on the same day, across the spring-forward; none at Andheri.
    await brooklyn.cross('in', '2026-03-08T06:40:00Z'); // 01:40 EST
    await brooklyn.cross('in', '2026-03-08T07:10:00Z'); // 03:10 EDT (the first hour after the jump)
    await brooklyn.cross('in', '2026-03-08T07:20:00Z'); // 03:20 EDT
    await brooklyn.cross('out', '2026-03-08T07:55:00Z'); // 03:55 EDT
    await brooklyn.cross('in', '2026-03-08T07:59:59.999Z'); // 03:59:59.999 EDT: still the 03:00 bucket
    await brooklyn.cross('out', '2026-03-08T08:00:00Z'); // 04:00 EDT
    await brooklyn.cross('in', '2026-03-08T12:00:00Z'); // 08:00 EDT
    await brooklyn.cross('out', '2026-03-09T03:59:59Z'); // 8 March 23:59:59 EDT
    await brooklyn.cross('out', '2026-03-09T04:00:00Z'); // 9 March 00:00 EDT
    await powai.cross('in', '2026-03-08T07:20:00Z'); // another company's: never counted for A
  });
  afterAll(async () => {
    await Promise.all([andheri, brooklyn, powai, deira, bandra].map((s) => s?.close()));
    await h?.close();
  });

  it('ingest recorded what the reports rely on: P3’s new-visitor mark moved to the earlier visit that arrived later', async () => {
    const rows = await arrivals(h, a.ownerToken, 13);
    const byId = new Map(rows.map((r) => [r.visit_id, r]));
    // The mark is on the first visit ever (first ever decides "new"), whatever the order of delivery.
    expect(byId.get(sent.v6!)).toMatchObject({ is_new_visitor: false });
    expect(byId.get(sent.v7!)).toMatchObject({ is_new_visitor: true, visitor_id: byId.get(sent.v6!).visitor_id });
    expect(byId.get(sent.v5!)).toMatchObject({ visitor_id: byId.get(sent.v1!).visitor_id });
    expect(byId.get(sent.v10!)).toMatchObject({ visitor_id: byId.get(sent.v1!).visitor_id });
    expect(new Set(rows.filter((r) => r.visitor_id).map((r) => r.visitor_id)).size).toBe(4);
  });

  it('hour buckets in New York across the spring-forward: 23 local hours, no 02:00; the exact JSON shape', async () => {
    const r = await footfall('from=2026-03-08&to=2026-03-08&tz=America/New_York&bucket=hour');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body)).toEqual(['from', 'to', 'bucket', 'timezone', 'points', 'total', 'visits', 'fraction_below_gate', 'worst_site', 'average_dwell_s', 'entries', 'exits', 'capture_rate', 'region', 'open_hours', 'visitors_per_open_hour', ...REPORT_EXTRAS]);
    const labels = r.body.points.map((p: any) => p.bucket);
    expect(labels).toHaveLength(23);
    expect(labels.slice(0, 4)).toEqual(['2026-03-08T00:00', '2026-03-08T01:00', '2026-03-08T03:00', '2026-03-08T04:00']);
    expect(labels.at(-1)).toBe('2026-03-08T23:00');
    expect(without(r.body.points[0], POINT_EXTRAS)).toEqual({ bucket: '2026-03-08T00:00', visitors: 0, new: 0, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null });
    expect(nonEmpty(r.body.points)).toEqual([
      ['2026-03-08T01:00', 1, 1, 0], // P1, first ever
      ['2026-03-08T03:00', 3, 1, 1], // P1 again, P2 new, one unidentified
      ['2026-03-08T09:00', 1, 0, 1], // P1 below the gate, still recognised
      ['2026-03-08T14:00', 2, 1, 0], // P3 twice (first ever 18:00Z = 14:00 EDT), one unidentified
      ['2026-03-08T15:00', 1, 0, 0], // unidentified
    ]);
    // v10 at 04:00Z is 00:00 EDT on the 9th: outside. Unique people: P1, P2, P3 and three unidentified visits.
    expect(r.body).toMatchObject({ from: '2026-03-08', to: '2026-03-08', bucket: 'hour', timezone: 'America/New_York', total: 6, visits: 9 });
    expect(sum(r.body.points.map((p: any) => p.visitors))).toBe(8); // the points do not sum to the total
    expect(r.body.fraction_below_gate).toBe(0.3333); // v3, v5, v8 of nine
    expect(r.body.worst_site).toBe('Brooklyn'); // 2 of 5 below the gate; Andheri 1 of 4
    for (const p of r.body.points) expect(p.new + p.returning).toBeLessThanOrEqual(p.visitors);
  });

  it('day buckets in India for one shop: midnight splits P3’s visits, and new means first ever (not the new-visitor mark, not first here)', async () => {
    const r = await footfall('from=2026-03-08&to=2026-03-10&tz=Asia/Kolkata&site=andheri');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(older(r.body)).toEqual({
      from: '2026-03-08',
      to: '2026-03-10',
      bucket: 'day',
      timezone: 'Asia/Kolkata',
      points: [
        { bucket: '2026-03-08', visitors: 2, new: 1, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null }, // P3 23:30 IST (first ever), v8
        { bucket: '2026-03-09', visitors: 3, new: 0, returning: 2, entries: 0, exits: 0, capture_rate: null, open: null }, // P3 again (marked new, but not first), v9, P1 (first seen in Brooklyn)
        { bucket: '2026-03-10', visitors: 1, new: 1, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null }, // P4
      ],
      total: 5, // P1, P3, P4, v8, v9
      visits: 6,
      fraction_below_gate: 0.1667,
      worst_site: 'Andheri',
      average_dwell_s: 0, // every visit here is one sighting of one moment
      entries: 0, // Andheri has no counting line
      exits: 0,
      capture_rate: null,
      region: null,
      open_hours: null,
      visitors_per_open_hour: null,
    });
    // The same shop by uuid, by site_id, and with upper-case slug; tz defaults to the shop's.
    for (const q of [`site=${andheri.shop.site_id}`, 'site_id=andheri', 'site=ANDHERI&site_id=andheri']) {
      const same = await footfall(`from=2026-03-08&to=2026-03-10&${q}`);
      expect(same.status, q).toBe(200);
      expect(same.body, q).toEqual(r.body);
    }
    // Brooklyn's zone by default; its 8 March in local days (v1 to v5).
    const ny = await footfall('from=2026-03-08&to=2026-03-08&site=brooklyn');
    expect(ny.body).toMatchObject({ timezone: 'America/New_York', total: 3, visits: 5, fraction_below_gate: 0.4, worst_site: 'Brooklyn' });
    expect(older(ny.body).points).toEqual([{ bucket: '2026-03-08', visitors: 3, new: 2, returning: 0, entries: 5, exits: 3, capture_rate: 0.8, open: null }]);
  });

  it('entries, exits and capture rate: New York hours across the spring-forward, the site filter, tenancy', async () => {
    const r = await footfall('from=2026-03-08&to=2026-03-08&tz=America/New_York&bucket=hour');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const door = r.body.points.filter((p: any) => p.entries + p.exits > 0).map((p: any) => [p.bucket, p.entries, p.exits, p.capture_rate]);
    expect(door).toEqual([
      ['2026-03-08T01:00', 1, 0, 1], // 01:40 EST; P1 identified
      ['2026-03-08T03:00', 3, 1, 0.6667], // 03:10, 03:20, 03:59:59.999 EDT in, 03:55 out; P1 and P2 identified, v3 not
      ['2026-03-08T04:00', 0, 1, null], // an exit only: no rate
      ['2026-03-08T08:00', 1, 0, 0], // nobody identified
      ['2026-03-08T23:00', 0, 1, null], // 23:59:59 EDT; the one at 00:00 EDT is the 9th's
    ]);
    for (const p of r.body.points) if (p.entries === 0) expect(p.capture_rate).toBeNull();
    // Totals: the sums of the points; the rate over the day counts only the shops with entries (Brooklyn: v1, v2,
    // v4, v5 of five entries), not Andheri's identified visits (no counting line there).
    expect(r.body).toMatchObject({ entries: 5, exits: 3, capture_rate: 0.8 });
    expect(sum(r.body.points.map((p: any) => p.entries))).toBe(r.body.entries);
    expect(sum(r.body.points.map((p: any) => p.exits))).toBe(r.body.exits);
    // The site filter: Andheri has no crossings; Brooklyn has them all.
    const andheriOnly = await footfall('from=2026-03-08&to=2026-03-08&tz=America/New_York&bucket=hour&site=andheri');
    expect(andheriOnly.body).toMatchObject({ entries: 0, exits: 0, capture_rate: null });
    expect(andheriOnly.body.points.every((p: any) => p.entries === 0 && p.exits === 0 && p.capture_rate === null)).toBe(true);
    const brooklynOnly = await footfall('from=2026-03-08&to=2026-03-08&tz=America/New_York&bucket=hour&site=brooklyn');
    expect(brooklynOnly.body.points.map((p: any) => [p.entries, p.exits, p.capture_rate])).toEqual(r.body.points.map((p: any) => [p.entries, p.exits, p.capture_rate]));
    // In India the same crossings are 8 March midday to 9 March morning.
    const india = await footfall('from=2026-03-08&to=2026-03-09&tz=Asia/Kolkata');
    expect(india.body.points.map((p: any) => [p.bucket, p.entries, p.exits])).toEqual([
      ['2026-03-08', 5, 2],
      ['2026-03-09', 0, 2],
    ]);
    // Another company sees only its own crossing.
    const other = await footfall('from=2026-03-08&to=2026-03-08&tz=UTC', b.ownerToken);
    expect(other.body).toMatchObject({ entries: 1, exits: 0, capture_rate: 1 }); // b1 (P1 in B's gallery) identified
  });

  it('week buckets: ISO weeks from Monday, labelled by the Monday, cut to the window', async () => {
    const r = await footfall('from=2026-03-01&to=2026-03-15&tz=America/New_York&bucket=week');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(older(r.body).points).toEqual([
      { bucket: '2026-02-23', visitors: 1, new: 0, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null }, // Sunday 1 March only: v12
      { bucket: '2026-03-02', visitors: 6, new: 3, returning: 0, entries: 5, exits: 3, capture_rate: 0.8, open: null }, // v1 to v9: P1, P2, P3 first ever, three unidentified
      { bucket: '2026-03-09', visitors: 2, new: 1, returning: 1, entries: 0, exits: 1, capture_rate: null, open: null }, // v10 (00:00 EDT Monday) P1, v11 P4
    ]);
    expect(r.body).toMatchObject({ total: 8, visits: 12, fraction_below_gate: 0.3333, worst_site: 'Brooklyn' }); // Brooklyn 3 of 6 below
    expect(sum(r.body.points.map((p: any) => p.visitors))).toBeGreaterThanOrEqual(r.body.total);
  });

  it('month buckets: the same visit falls in February in New York and in March in India', async () => {
    const ny = await footfall('from=2026-02-01&to=2026-03-31&tz=America/New_York&bucket=month');
    expect(ny.status).toBe(200);
    expect(older(ny.body).points).toEqual([
      { bucket: '2026-02', visitors: 1, new: 0, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null }, // v13, 28 February 15:00 EST
      { bucket: '2026-03', visitors: 8, new: 4, returning: 0, entries: 5, exits: 4, capture_rate: 0.8, open: null },
    ]);
    const india = await footfall('from=2026-02-01&to=2026-03-31&tz=Asia/Kolkata&bucket=month');
    expect(older(india.body).points).toEqual([
      { bucket: '2026-02', visitors: 0, new: 0, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null },
      { bucket: '2026-03', visitors: 9, new: 4, returning: 0, entries: 5, exits: 4, capture_rate: 0.8, open: null },
    ]);
    for (const r of [ny, india]) expect(r.body).toMatchObject({ total: 9, visits: 13, fraction_below_gate: 0.3077 }); // 4 of 13
  });

  it('a window without visits: zeros in every bucket, worst_site empty; another company’s visits never count', async () => {
    const r = await footfall('from=2025-12-30&to=2026-01-02&tz=UTC');
    expect(older(r.body)).toEqual({
      from: '2025-12-30',
      to: '2026-01-02',
      bucket: 'day',
      timezone: 'UTC',
      points: ['2025-12-30', '2025-12-31', '2026-01-01', '2026-01-02'].map((d) => ({ bucket: d, visitors: 0, new: 0, returning: 0, entries: 0, exits: 0, capture_rate: null, open: null })),
      total: 0,
      visits: 0,
      fraction_below_gate: 0,
      worst_site: '',
      average_dwell_s: 0,
      entries: 0,
      exits: 0,
      capture_rate: null,
      region: null,
      open_hours: null,
      visitors_per_open_hour: null,
    });
    const other = await footfall('from=2026-03-08&to=2026-03-08&tz=UTC', b.ownerToken);
    expect(other.body).toMatchObject({ total: 1, visits: 1, fraction_below_gate: 0, worst_site: 'Powai' });
    expect(nonEmpty(other.body.points)).toEqual([['2026-03-08', 1, 1, 0]]);
    const noPurchases = await conversion('from=2026-03-01&to=2026-03-15&tz=America/New_York');
    expect(older(noPurchases.body)).toEqual({ visitors: 8, purchasers: 0, conversion: 0, revenue: 0, average_basket: 0, currency: '' });
    const nothing = await conversion('from=2025-12-30&to=2026-01-02');
    expect(older(nothing.body)).toEqual({ visitors: 0, purchasers: 0, conversion: 0, revenue: 0, average_basket: 0, currency: '' });
  });

  it('defaults: today in the zone, seven days (one for hours, four weeks, twelve months); the shop’s zone, else the first shop’s', async () => {
    const db = h.server.store.db;
    const now = new Date('2026-03-09T19:00:00Z'); // 10 March 00:30 in India, 9 March 15:00 in New York
    const q = async (input: Record<string, string>, company = a.id) => await resolveReportQuery(db, company, ReportQueryInput.parse(input), now);
    expect(await q({})).toEqual({ from: '2026-03-04', to: '2026-03-10', siteId: null, region: null, tz: 'Asia/Kolkata', bucket: 'day' });
    expect(await q({ site: 'brooklyn' })).toEqual({ from: '2026-03-03', to: '2026-03-09', siteId: brooklyn.shop.site_id, region: null, tz: 'America/New_York', bucket: 'day' });
    expect(await q({ site: 'brooklyn', tz: 'europe/london', bucket: 'hour' })).toEqual({ from: '2026-03-09', to: '2026-03-09', siteId: brooklyn.shop.site_id, region: null, tz: 'Europe/London', bucket: 'hour' });
    expect(await q({ bucket: 'week' })).toMatchObject({ from: '2026-02-16', to: '2026-03-10' }); // four weeks from Monday
    expect(await q({ bucket: 'month' })).toMatchObject({ from: '2025-04-01', to: '2026-03-10' });
    expect(await q({ to: '2026-01-31' })).toMatchObject({ from: '2026-01-25', to: '2026-01-31' });
    expect(await q({ from: '2026-03-01' })).toMatchObject({ from: '2026-03-01', to: '2026-03-10' });
    expect(await q({ from: '', to: '', site: '', tz: '', bucket: '' })).toEqual(await q({}));
    // Company C: its first shop's zone. A company without shops: the spec's shop default.
    expect((await q({}, c.id)).tz).toBe('Asia/Dubai');
    expect(await q({}, d.id)).toEqual({ from: '2026-03-04', to: '2026-03-10', siteId: null, region: null, tz: 'Asia/Kolkata', bucket: 'day' });
    await expect(q({ site: 'powai' })).rejects.toThrow('There is no shop "powai" in your company.');
  });

  it('defaults over HTTP: seven local days ending today', async () => {
    const r = await footfall('');
    expect(r.status).toBe(200);
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Kolkata' }).format(new Date());
    expect(r.body).toMatchObject({ to: today, bucket: 'day', timezone: 'Asia/Kolkata' });
    expect(r.body.points).toHaveLength(7);
    expect(r.body.points.at(-1).bucket).toBe(today);
  });

  it('validation: every bad value is 400 invalid_request naming the field, for both reports', async () => {
    for (const [query, field] of [
      ['from=2026-02-30', 'from'],
      ['from=08-03-2026', 'from'],
      ['to=tomorrow', 'to'],
      ['from=2026-03-10&to=2026-03-01', 'from'],
      ['tz=Mars/Olympus', 'tz'],
      ['tz=IST', 'tz'],
      ['tz=%2B05:30', 'tz'],
      ['bucket=fortnight', 'bucket'],
      ['bucket=Day', 'bucket'],
      ['bucket=hour&from=2026-01-01&to=2026-02-01', '31 days'],
      ['from=2025-01-01&to=2026-01-02', '366 days'],
      ['bucket=month&from=2024-01-01&to=2026-01-01', '731 days'],
      ['site=nowhere', 'There is no shop "nowhere" in your company.'],
      ['site=powai', 'There is no shop "powai" in your company.'],
      ['site=andheri&site_id=brooklyn', 'site and site_id'],
      [`site=${'x'.repeat(201)}`, 'site'],
    ] as const) {
      for (const get of [footfall, conversion]) {
        const r = await get(query);
        expect(r.status, query).toBe(400);
        expect(r.body.error, query).toBe('invalid_request');
        expect(r.body.message, query).toContain(field);
      }
    }
    // Another company's shop by uuid: the same answer as a shop that does not exist (nothing leaks).
    const byId = await footfall(`site=${powai.shop.site_id}`);
    expect(byId.status).toBe(400);
    expect(byId.body).toEqual({ error: 'invalid_request', message: `There is no shop "${powai.shop.site_id}" in your company.` });
    // The longest windows are accepted.
    expect((await footfall('bucket=hour&from=2026-01-01&to=2026-01-31&tz=UTC')).body.points).toHaveLength(744);
    expect((await footfall('from=2025-03-11&to=2026-03-11')).body.points).toHaveLength(366);
  });

  it('who may read: any member (staff included); no session 401; the platform admin 404, like every tenant route', async () => {
    for (const path of ['/api/reports/footfall', '/api/reports/conversion']) {
      expect((await h.request('GET', path, { token: staff })).status).toBe(200);
      const anon = await h.request('GET', path);
      expect(anon.status).toBe(401);
      expect(anon.body.error).toBe('unauthorized');
      const admin = await h.request('GET', path, { token: await h.adminToken() });
      expect(admin.status).toBe(404);
      expect(admin.body.error).toBe('not_found');
      expect((await h.request('POST', path, { token: staff, body: {} })).status).toBe(405);
    }
  });

  it('conversion: purchasers over visitors, revenue in the currency with most purchases, average per basket', async () => {
    // Today, in UTC: three customers and two unidentified visits; purchases are dated when recorded (now).
    const now = Date.now();
    const ago = (s: number) => new Date(now - s * 1000).toISOString();
    const [q1, q2, q3] = faces.others as [RealFace, RealFace, RealFace];
    await visit(deira, 'c1', ago(300), q1);
    await visit(deira, 'c2', ago(240), q2);
    await visit(bandra, 'c3', ago(180), q3);
    await visit(deira, 'c4', ago(120), undefined);
    await visit(bandra, 'c5', ago(60), undefined);
    const rows = await arrivals(h, c.ownerToken, 5);
    const who = (name: string) => rows.find((r) => r.visit_id === sent[name])!.visitor_id as string;
    const cashier = await memberToken(h, c.ownerToken, 'staff');
    for (const [visitor, site, amount, currency] of [
      [who('c1'), 'deira', 100.5, 'INR'],
      [who('c1'), 'deira', 200, 'INR'],
      [who('c2'), 'deira', 49.5, 'INR'],
      [who('c2'), 'deira', 5000, 'JPY'], // the largest number, but one purchase
      [who('c3'), 'bandra', 10, 'USD'],
      [who('c3'), 'bandra', 12.25, 'USD'],
    ] as const) {
      const r = await h.request('POST', '/api/purchases', { token: cashier, body: { visitor_id: visitor, site_id: site, amount, currency } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const day = (d: number) => new Date(now + d * 86_400_000).toISOString().slice(0, 10);
    const window = `from=${day(-1)}&to=${day(1)}&tz=UTC`;
    const all = await conversion(window, cashier);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    // 350 INR over three baskets (per purchaser it would be 175).
    expect(older(all.body)).toEqual({ visitors: 5, purchasers: 3, conversion: 0.6, revenue: 350, average_basket: 116.67, currency: 'INR' });
    expect((await footfall(window, cashier)).body.total).toBe(all.body.visitors);
    expect(older((await conversion(`${window}&site=deira`, cashier)).body)).toEqual({ visitors: 3, purchasers: 2, conversion: 0.6667, revenue: 350, average_basket: 116.67, currency: 'INR' });
    expect(older((await conversion(`${window}&site=bandra`, cashier)).body)).toEqual({ visitors: 2, purchasers: 1, conversion: 0.5, revenue: 22.25, average_basket: 11.13, currency: 'USD' });
    // Purchases outside the window do not count; company A sees none of C's.
    expect((await conversion(`from=${day(-9)}&to=${day(-2)}&tz=UTC`, cashier)).body).toMatchObject({ purchasers: 0, revenue: 0, currency: '' });
    expect((await conversion(window)).body).toMatchObject({ purchasers: 0, currency: '' });
  });
});
