import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VisitMessage } from '../../shared/messages.js';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFace, type RealFaces } from '../../test/support/faces.js';
import { connectPc, enrol, openShop } from '../../test/support/shop-pc.js';
import { arrivals, settled } from '../../test/support/visits.js';

/**
 * The period before, dwell time and age and gender bands in the reports (docs/reports.md, "Compared with the period
 * before", "Dwell time", "Age and gender bands"): visits sent through the real ingest (MQTT) at known times, with
 * known stays (the tracker's first and last sighting) and attributes; one identified visit whose customer is then
 * marked staff, left out everywhere.
 */
describe('reports: the period before, dwell and age and gender bands', () => {
  let h: Harness;
  let faces: RealFaces;
  let c: Company;
  let north: { slug: string; site_id: string };
  let south: { slug: string; site_id: string };
  const pcs = new Map<string, (m: VisitMessage) => Promise<unknown>>();
  const clients: { endAsync: (force?: boolean) => Promise<void> }[] = [];

  /** A visit of `dwell` seconds starting at `at`; attributes as given (none: no estimate at all). */
  async function visit(shop: string, at: string, dwell: number, attributes: VisitMessage['attributes'], face?: RealFace) {
    const end = new Date(Date.parse(at) + dwell * 1000).toISOString();
    const msg = visitOf(faces, face, { occurred_at: at, attributes, track: { id: `t-${at}`, first_seen_at: at, last_seen_at: end, frames: 5 } });
    if (!attributes) delete msg.attributes;
    await pcs.get(shop)!(msg);
  }

  const get = (path: string) => h.request('GET', path, { token: c.ownerToken });
  const week = 'from=2026-03-09&to=2026-03-15&tz=UTC';

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness(), realFaces()]);
    c = await h.company('Compare Co');
    for (const [name, region] of [
      ['North', 'N'],
      ['South', 'S'],
    ] as const) {
      const shop = await openShop(h, c.ownerToken, { name, timezone: 'UTC' });
      await h.request('PATCH', `/api/sites/${shop.slug}`, { token: c.ownerToken, body: { region } });
      const client = await connectPc(h, await enrol(h, c.ownerToken, shop.slug));
      clients.push(client);
      pcs.set(name, (m) => client.publishAsync(upTopic(c.slug, shop.slug, 'visit'), JSON.stringify(m), { qos: 1 }));
      if (name === 'North') north = shop;
      else south = shop;
    }
    // This week (Monday 9 to Sunday 15 March 2026), unidentified visits:
    await visit('North', '2026-03-09T10:00:00Z', 60, { gender: 'female', age: 30 });
    await visit('North', '2026-03-09T11:00:00Z', 120, { age: 17 });
    await visit('North', '2026-03-10T10:00:00Z', 600, { gender: 'male', age: 70 });
    await visit('North', '2026-03-10T12:00:00Z', 0, undefined);
    await visit('South', '2026-03-09T09:00:00Z', 300, { gender: 'female', age: 24.9 });
    await visit('South', '2026-03-12T09:00:00Z', 30, { age: 45 });
    // The week before: North only.
    await visit('North', '2026-03-03T10:00:00Z', 100, { age: 50 });
    await visit('North', '2026-03-04T10:00:00Z', 200, { age: 50 });
    // A recognised person's long visit this week; marked staff below.
    await visit('North', '2026-03-11T10:00:00Z', 900, { gender: 'female', age: 40 }, faces.others[0]);
    await settled(h);
  });
  afterAll(async () => {
    await Promise.all(clients.map((x) => x.endAsync(true).catch(() => {})));
    await h.close();
  });

  it('leaves staff out of dwell and bands once marked', async () => {
    const before = await get(`/api/reports/footfall?${week}`);
    expect(before.body).toMatchObject({ visits: 7, gender: { female: 3 }, age: { '35_44': 1 } });
    const row = (await arrivals(h, c.ownerToken, 1)).find((a) => a.visitor_id);
    expect((await h.request('PATCH', `/api/visitors/${row.visitor_id}`, { token: c.ownerToken, body: { staff: true } })).status).toBe(200);
    const after = await get(`/api/reports/footfall?${week}`);
    expect(after.body).toMatchObject({ visits: 6, gender: { female: 2 }, age: { '35_44': 0 } });
  });

  it('dwell: mean and median over the window, per point and per shop', async () => {
    const r = await get(`/api/reports/footfall?${week}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // Stays of 0, 30, 60, 120, 300 and 600 s: mean 185, median (60 + 120) / 2.
    expect(r.body).toMatchObject({ visits: 6, average_dwell_s: 185, median_dwell_s: 90 });
    const day = (d: string) => r.body.points.find((p: any) => p.bucket === d);
    expect(day('2026-03-09')).toMatchObject({ visits: 3, average_dwell_s: 160, median_dwell_s: 120 });
    expect(day('2026-03-10')).toMatchObject({ visits: 2, average_dwell_s: 300, median_dwell_s: 300 });
    expect(day('2026-03-11')).toMatchObject({ visits: 0, average_dwell_s: 0, median_dwell_s: 0 }); // only staff that day
    expect(day('2026-03-12')).toMatchObject({ visits: 1, average_dwell_s: 30, median_dwell_s: 30 });
    expect(r.body.sites.map((s: any) => [s.slug, s.visits, s.average_dwell_s, s.median_dwell_s])).toEqual([
      [north.slug, 4, 195, 90],
      [south.slug, 2, 165, 165],
    ]);
    // The same as each shop's own report.
    for (const s of r.body.sites) {
      const one = await get(`/api/reports/footfall?${week}&site=${s.slug}`);
      expect([one.body.visits, one.body.average_dwell_s, one.body.median_dwell_s, one.body.age, one.body.gender]).toEqual([s.visits, s.average_dwell_s, s.median_dwell_s, s.age, s.gender]);
      expect(one.body.sites).toEqual([s]);
    }
  });

  it('age and gender bands, with unknown as a band and the share of visits that had each attribute', async () => {
    const r = await get(`/api/reports/footfall?${week}`);
    expect(r.body.gender).toEqual({ female: 2, male: 1, unknown: 3 });
    expect(r.body.age).toEqual({ under_18: 1, '18_24': 1, '25_34': 1, '35_44': 0, '45_54': 1, '55_64': 0, '65_plus': 1, unknown: 1 });
    expect(r.body).toMatchObject({ with_gender: 0.5, with_age: 0.8333 });
    // Points, shops and the window agree: the points and the shops each sum to the window.
    for (const key of ['age', 'gender'] as const) {
      for (const band of Object.keys(r.body[key])) {
        expect(r.body.points.reduce((n: number, p: any) => n + p[key][band], 0), `${key} ${band}`).toBe(r.body[key][band]);
        expect(r.body.sites.reduce((n: number, s: any) => n + s[key][band], 0), `${key} ${band}`).toBe(r.body[key][band]);
      }
    }
    const southOnly = r.body.sites.find((s: any) => s.slug === south.slug);
    expect(southOnly).toMatchObject({ gender: { female: 1, male: 0, unknown: 1 }, age: { '18_24': 1, '45_54': 1 }, with_gender: 0.5, with_age: 1 });
  });

  it('the period before: the same length just before, and the change of each figure', async () => {
    const r = await get(`/api/reports/footfall?${week}`);
    expect(r.body.previous).toEqual({
      from: '2026-03-02',
      to: '2026-03-08',
      total: 2,
      visits: 2,
      fraction_below_gate: 1,
      average_dwell_s: 150,
      median_dwell_s: 150,
      entries: 0,
      exits: 0,
      capture_rate: null,
      open_hours: null,
      visitors_per_open_hour: null,
    });
    expect(r.body.change).toEqual({
      total: 2, // 6 against 2: +200 %
      visits: 2,
      fraction_below_gate: 0,
      average_dwell_s: 0.2333,
      median_dwell_s: -0.4,
      entries: null, // nothing before: no ratio
      exits: null,
      capture_rate: null,
      visitors_per_open_hour: null,
    });
    // The period before is the report of those dates.
    const earlier = await get('/api/reports/footfall?from=2026-03-02&to=2026-03-08&tz=UTC');
    expect([earlier.body.total, earlier.body.visits, earlier.body.average_dwell_s, earlier.body.median_dwell_s]).toEqual([2, 2, 150, 150]);
    // Whole months compare with whole months: March with February (nothing then).
    const march = await get('/api/reports/footfall?from=2026-03-01&to=2026-03-31&tz=UTC&bucket=month');
    expect(march.body.previous).toMatchObject({ from: '2026-02-01', to: '2026-02-28', total: 0 });
    expect(march.body.change.total).toBeNull();
    // A region's report compares the region's shops.
    const s = await get(`/api/reports/footfall?${week}&region=S`);
    expect(s.body).toMatchObject({ total: 2, previous: { total: 0 }, change: { total: null } });
  });

  it('regions ranked carry the period before; conversion too, in JSON and CSV alike', async () => {
    const r = await get(`/api/reports/regions?${week}`);
    expect(r.body.regions.map((x: any) => [x.region, x.visitors, x.previous.visitors, x.change.visitors, x.median_dwell_s])).toEqual([
      ['N', 4, 2, 1, 90],
      ['S', 2, 0, null, 165],
    ]);
    // Purchases are dated when recorded (now): today against yesterday, and tomorrow against today.
    const now = new Date();
    const day = (d: number) => new Date(now.getTime() + d * 86_400_000).toISOString().slice(0, 10);
    // A minute ago, but never before today's UTC midnight (the report below is today's).
    const midnight = Date.parse(`${day(0)}T00:00:00Z`);
    await visit('South', new Date(Math.max(now.getTime() - 60_000, midnight)).toISOString(), 10, { age: 33 }, faces.others[1]);
    await settled(h);
    const rows = await arrivals(h, c.ownerToken, 1, `&site=${south.slug}`);
    const buyer = rows.find((a) => a.visitor_id)!.visitor_id;
    const bought = await h.request('POST', '/api/purchases', { token: c.ownerToken, body: { visitor_id: buyer, site_id: south.slug, amount: 25, currency: 'INR' } });
    expect(bought.status, JSON.stringify(bought.body)).toBe(201);
    const today = await get(`/api/reports/conversion?from=${day(0)}&to=${day(0)}&tz=UTC`);
    expect(today.body).toMatchObject({ visitors: 1, purchasers: 1, revenue: 25, previous: { from: day(-1), to: day(-1), visitors: 0, purchasers: 0, currency: '' }, change: { visitors: null, purchasers: null, revenue: null } });
    const tomorrow = await get(`/api/reports/conversion?from=${day(1)}&to=${day(1)}&tz=UTC`);
    expect(tomorrow.body).toMatchObject({ purchasers: 0, previous: { from: day(0), visitors: 1, purchasers: 1, conversion: 1, revenue: 25, currency: 'INR' }, change: { visitors: -1, purchasers: -1, conversion: -1, revenue: -1 } });
    const csv = await get(`/api/reports/conversion?from=${day(1)}&to=${day(1)}&tz=UTC&format=csv`);
    const [head, line] = (csv.body as string).trimEnd().split('\r\n') as [string, string];
    const cells = Object.fromEntries(head.split(',').map((k, i) => [k, line.split(',')[i]]));
    expect(cells).toMatchObject({ previous_visitors: '1', previous_purchasers: '1', previous_revenue: '25', previous_currency: 'INR', change_purchasers: '-1', change_average_basket: '-1' });
    // The footfall CSV's band and dwell columns are the JSON points'.
    const ff = await get(`/api/reports/footfall?${week}`);
    const fcsv = await get(`/api/reports/footfall?${week}&format=csv`);
    const [fh, ...frows] = (fcsv.body as string).trimEnd().split('\r\n') as [string, ...string[]];
    const cols = fh.split(',');
    frows.forEach((l, i) => {
      const v = Object.fromEntries(cols.map((k, j) => [k, l.split(',')[j]]));
      const p = ff.body.points[i];
      expect([v.visits, v.median_dwell_s, v.age_under_18, v.age_unknown, v.gender_female, v.gender_unknown]).toEqual([p.visits, p.median_dwell_s, p.age.under_18, p.age.unknown, p.gender.female, p.gender.unknown].map(String));
    });
  });
});
