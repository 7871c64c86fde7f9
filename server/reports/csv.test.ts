import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { memberToken, syntheticFace } from '../../test/support/shop-pc.js';
import { settled, shopPc, zoneAwayFromMidnight, type ShopPc } from '../../test/support/visits.js';
import { upTopic } from '../../shared/topics.js';
import { csvField } from './csv.js';

/** GET /api/reports/footfall and /conversion with format=csv (docs/reports.md, CSV export). */
describe('reports as CSV', () => {
  let h: Harness;
  let c: Company;
  let staff: string;
  let pc: ShopPc;

  beforeAll(async () => {
    h = await startHarness();
    c = await h.company('Csv Chain');
    staff = await memberToken(h, c.ownerToken, 'staff');
    // In a zone where the last minutes are today (test/support/visits.ts): the last row below is today's.
    pc = await shopPc(h, c.ownerToken, c.slug, 'Juhu, "Beach" Road', zoneAwayFromMidnight());
    const at = (min: number) => new Date(Date.now() - min * 60_000).toISOString();
    await pc.publish({ visit_id: randomUUID(), occurred_at: at(5), camera_id: 'door', embedding: syntheticFace(7), recognition_model: 'm', quality: 0.9, passed_gate: true });
    await pc.publish({ visit_id: randomUUID(), occurred_at: at(4), camera_id: 'door', quality: 0.2, passed_gate: false });
    await settled(h);
    // One entry at the door (acknowledged once stored).
    await pc.client.publishAsync(upTopic(c.slug, pc.shop.slug, 'crossing'), JSON.stringify({ crossing_id: randomUUID(), occurred_at: at(6), camera_id: 'door', direction: 'in' }), { qos: 1 });
    const sale = await h.request('POST', '/api/purchases', { token: c.ownerToken, body: { visitor_id: 'V-1', site_id: pc.shop.slug, amount: 120.5, currency: 'INR' } });
    expect(sale.status).toBe(201);
  });
  afterAll(async () => {
    await pc?.close();
    await h?.close();
  });

  it('footfall: text/csv with a header row and one row per bucket, the JSON answer’s numbers', async () => {
    const q = `site=${pc.shop.slug}&bucket=day`;
    const json = await h.request('GET', `/api/reports/footfall?${q}`, { token: staff });
    const csv = await h.request('GET', `/api/reports/footfall?${q}&format=csv`, { token: staff });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="footfall-${json.body.from}-to-${json.body.to}.csv"`);
    const lines = (csv.body as string).split('\r\n');
    expect(lines.pop()).toBe('');
    // The first eight columns as before; then, additive, visits, dwell and the age and gender bands (docs/reports.md).
    const bands = ['age_under_18', 'age_18_24', 'age_25_34', 'age_35_44', 'age_45_54', 'age_55_64', 'age_65_plus', 'age_unknown', 'gender_female', 'gender_male', 'gender_unknown'];
    expect(lines[0]).toBe(['bucket,visitors,new,returning,not_identified,entries,exits,capture_rate', 'visits,average_dwell_s,median_dwell_s', ...bands].join(','));
    expect(lines.slice(1)).toEqual(
      json.body.points.map((p: any) =>
        [
          ...[p.bucket, p.visitors, p.new, p.returning, p.visitors - p.new - p.returning, p.entries, p.exits, p.capture_rate ?? ''],
          ...[p.visits, p.average_dwell_s, p.median_dwell_s],
          ...Object.values(p.age),
          ...Object.values(p.gender),
        ].join(','),
      ),
    );
    // Today: two visitors (one new, one not identified), one entry, its visit identified. Earlier days: no rate.
    expect(lines[lines.length - 1]).toMatch(/^[^,]*,2,1,0,1,1,0,1,2,/);
    expect(lines[1]).toMatch(/^[^,]*,0,0,0,0,0,0,,0,0,0,/);
  });

  it('conversion: one row with the window, the shop and the totals', async () => {
    const q = `site=${pc.shop.slug}`;
    const json = await h.request('GET', `/api/reports/conversion?${q}`, { token: staff });
    const csv = await h.request('GET', `/api/reports/conversion?${q}&format=CSV`, { token: staff });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (csv.body as string).trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'from,to,timezone,site,visitors,purchasers,conversion,revenue,average_basket,currency,' +
        'previous_from,previous_to,previous_visitors,previous_purchasers,previous_conversion,previous_revenue,previous_average_basket,previous_currency,' +
        'change_visitors,change_purchasers,change_conversion,change_revenue,change_average_basket',
    );
    const ff = await h.request('GET', `/api/reports/footfall?${q}`, { token: staff });
    const b = json.body;
    const p = b.previous;
    const c = b.change;
    expect(lines[1]).toBe(
      [
        ...[ff.body.from, ff.body.to, ff.body.timezone, pc.shop.slug, b.visitors, b.purchasers, b.conversion, b.revenue, b.average_basket, b.currency],
        ...[p.from, p.to, p.visitors, p.purchasers, p.conversion, p.revenue, p.average_basket, p.currency],
        ...[c.visitors, c.purchasers, c.conversion, c.revenue, c.average_basket].map((x) => x ?? ''),
      ].join(','),
    );
    expect(p).toMatchObject({ from: ff.body.previous.from, to: ff.body.previous.to, visitors: ff.body.previous.total });
    expect(json.body).toMatchObject({ visitors: 2, purchasers: 1, revenue: 120.5, currency: 'INR' });
  });

  it('format=json is the JSON answer; an unknown format and a bad query are the usual 400', async () => {
    const json = await h.request('GET', '/api/reports/footfall?format=json', { token: staff });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toContain('application/json');
    const bad = await h.request('GET', '/api/reports/footfall?format=xlsx', { token: staff });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'invalid_request', message: 'format: must be json or csv, not "xlsx"' });
    const range = await h.request('GET', '/api/reports/conversion?format=csv&from=2026-02-01&to=2026-01-01', { token: staff });
    expect(range.status).toBe(400);
    expect(range.headers.get('content-type')).toContain('application/json');
    expect((await h.request('GET', '/api/reports/footfall?format=csv')).status).toBe(401);
  });

  it('fields are quoted when needed and never start a spreadsheet formula', () => {
    expect(csvField('Juhu, "Beach" Road')).toBe('"Juhu, ""Beach"" Road"');
    expect(csvField('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    expect(csvField(-3)).toBe('-3');
    expect(csvField('plain')).toBe('plain');
  });
});
