import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { visitOf } from '../../test/support/faces.js';
import { connectPc, enrol, openShop } from '../../test/support/shop-pc.js';
import { settled } from '../../test/support/visits.js';

/** Regions and opening hours in reports (docs/reports.md, "Regions" and "Opening hours"). */
describe('reports by region, regions ranked, visitors per open hour', () => {
  let h: Harness;
  let c: Company;
  let other: Company;

  async function shopWithVisits(name: string, region: string | null, times: string[]) {
    const shop = await openShop(h, c.ownerToken, { name, timezone: 'UTC' });
    if (region) await h.request('PATCH', `/api/sites/${shop.slug}`, { token: c.ownerToken, body: { region } });
    const pc = await connectPc(h, await enrol(h, c.ownerToken, shop.slug));
    for (const at of times) await pc.publishAsync(upTopic(c.slug, shop.slug, 'visit'), JSON.stringify(visitOf({ model: 'test' }, undefined, { occurred_at: at })), { qos: 1 });
    await pc.endAsync(true);
    return shop;
  }

  beforeAll(async () => {
    h = await startHarness();
    [c, other] = await Promise.all([h.company('Regions Co'), h.company('Regions Other')]);
    await shopWithVisits('North One', 'North', ['2026-03-02T10:00:00Z', '2026-03-02T11:00:00Z']);
    await shopWithVisits('North Two', 'North', ['2026-03-02T12:00:00Z']);
    await shopWithVisits('South One', 'South', ['2026-03-02T10:00:00Z', '2026-03-02T10:10:00Z', '2026-03-02T15:00:00Z', '2026-03-03T10:00:00Z']);
    await shopWithVisits('Loose', null, ['2026-03-02T09:00:00Z']);
    await settled(h);
  });
  afterAll(() => h.close());

  const q = 'from=2026-03-02&to=2026-03-03&tz=UTC';

  it('filters the footfall and conversion reports by region', async () => {
    const north = await h.request('GET', `/api/reports/footfall?${q}&region=North`, { token: c.ownerToken });
    expect(north.status).toBe(200);
    expect(north.body).toMatchObject({ region: 'North', total: 3, visits: 3 });
    const all = await h.request('GET', `/api/reports/footfall?${q}`, { token: c.ownerToken });
    expect(all.body).toMatchObject({ region: null, total: 8 });
    const conv = await h.request('GET', `/api/reports/conversion?${q}&region=South`, { token: c.ownerToken });
    expect(conv.body.visitors).toBe(4);
    const unknown = await h.request('GET', `/api/reports/footfall?${q}&region=Nowhere`, { token: c.ownerToken });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/region/) });
    // Another company's region is unknown here.
    const foreign = await h.request('GET', `/api/reports/footfall?${q}&region=North`, { token: other.ownerToken });
    expect(foreign.status).toBe(400);
  });

  it('ranks regions by visitors, the shops without a region as null', async () => {
    const r = await h.request('GET', `/api/reports/regions?${q}`, { token: c.ownerToken });
    expect(r.status).toBe(200);
    expect(r.body.regions.map((x: any) => [x.region, x.shops, x.visitors])).toEqual([
      ['South', 1, 4],
      ['North', 2, 3],
      [null, 1, 1],
    ]);
    const theirs = await h.request('GET', `/api/reports/regions?${q}`, { token: other.ownerToken });
    expect(theirs.body.regions).toEqual([]);
  });

  it('counts visitors per open hour and marks the open hours once every shop has opening hours', async () => {
    const before = await h.request('GET', `/api/reports/footfall?${q}&region=South&bucket=hour`, { token: c.ownerToken });
    expect(before.body.open_hours).toBeNull();
    expect(before.body.points[10].open).toBeNull();
    // 2026-03-02 is a Monday, 2026-03-03 a Tuesday: 10:00-18:00 both days, 16 hours.
    const day = [{ open: '10:00', close: '18:00' }];
    await h.request('PATCH', '/api/sites/south-one', { token: c.ownerToken, body: { opening_hours: { mon: day, tue: day } } });
    const after = await h.request('GET', `/api/reports/footfall?${q}&region=South&bucket=hour`, { token: c.ownerToken });
    expect(after.body.open_hours).toBe(16);
    expect(after.body.visitors_per_open_hour).toBe(0.25);
    expect(after.body.points.filter((p: any) => p.open).map((p: any) => p.bucket.slice(11, 13))).toEqual([...Array(8).keys(), ...Array(8).keys()].map((i) => String(10 + i)));
    // The whole company: one shop without hours makes it unknown.
    const all = await h.request('GET', `/api/reports/footfall?${q}`, { token: c.ownerToken });
    expect(all.body.open_hours).toBeNull();
    expect(all.body.visitors_per_open_hour).toBeNull();
  });
});
