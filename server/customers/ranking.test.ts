import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { memberToken, syntheticFace } from '../../test/support/shop-pc.js';
import { settled, shopPc, type ShopPc } from '../../test/support/visits.js';

/** GET /api/visitors with `sort` and `lapsed_days`, and the spend fields (docs/visits-and-customers.md). */
describe('customers sorted, filtered, with lifetime spend', () => {
  let h: Harness;
  let c: Company;
  let pc: ShopPc;
  let staff: string;
  const visit = (who: number, daysAgo: number) =>
    pc.publish({ visit_id: randomUUID(), occurred_at: new Date(Date.now() - daysAgo * 86_400_000).toISOString(), camera_id: 'door', embedding: syntheticFace(who), recognition_model: 'm', quality: 0.9, passed_gate: true });

  beforeAll(async () => {
    h = await startHarness();
    c = await h.company('Rank Chain');
    staff = await memberToken(h, c.ownerToken, 'staff');
    pc = await shopPc(h, c.ownerToken, c.slug, 'Andheri');
    // V-1: three visits, lapsed (last 40 days ago). V-2: one visit today, big spender. V-3: two visits, today.
    await visit(1, 60);
    await settled(h);
    await visit(1, 50);
    await visit(1, 40);
    await visit(2, 0.01);
    await settled(h);
    await visit(3, 2);
    await visit(3, 0.02);
    await settled(h);
    for (const [who, amount, currency] of [['V-2', 900, 'INR'], ['V-2', 100, 'INR'], ['V-3', 50, 'INR'], ['V-3', 5, 'USD'], ['V-1', 20, 'INR']] as const) {
      const r = await h.request('POST', '/api/purchases', { token: c.ownerToken, body: { visitor_id: who, site_id: pc.shop.slug, amount, currency } });
      expect(r.status).toBe(201);
    }
  });
  afterAll(async () => {
    await pc?.close();
    await h?.close();
  });

  const list = async (query: string) => {
    const r = await h.request('GET', `/api/visitors?${query}`, { token: staff });
    expect(r.status).toBe(200);
    return r.body as any[];
  };

  it('sort=visits, sort=spend, lapsed_days=30, and recent as before', async () => {
    expect((await list('sort=visits')).map((x) => [x.ref, x.visit_count])).toEqual([['V-1', 3], ['V-3', 2], ['V-2', 1]]);
    expect((await list('sort=spend')).map((x) => [x.ref, x.spend, x.spend_currency])).toEqual([['V-2', 1000, 'INR'], ['V-3', 50, 'INR'], ['V-1', 20, 'INR']]);
    expect((await list('lapsed_days=30')).map((x) => x.ref)).toEqual(['V-1']);
    expect((await list('lapsed_days=30&sort=visits&limit=1')).map((x) => x.ref)).toEqual(['V-1']);
    expect((await list('')).map((x) => x.ref)).toEqual(['V-2', 'V-3', 'V-1']);
    expect((await list('sort=recent')).map((x) => x.ref)).toEqual(['V-2', 'V-3', 'V-1']);
  });

  it('each customer carries purchases, spend and spend_currency; the customer page too', async () => {
    const v3 = (await list('q=V-3'))[0];
    expect(v3).toMatchObject({ ref: 'V-3', purchases: 2, spend: 50, spend_currency: 'INR' });
    const one = await h.request('GET', '/api/visitors/V-2', { token: staff });
    expect(one.body).toMatchObject({ ref: 'V-2', visit_count: 1, purchases: 2, spend: 1000, spend_currency: 'INR' });
  });

  it('a bad sort or lapsed_days is a 400 naming it', async () => {
    const bad = await h.request('GET', '/api/visitors?sort=name', { token: staff });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('sort: must be recent, visits or spend');
    expect((await h.request('GET', '/api/visitors?lapsed_days=0', { token: staff })).body.message).toBe('lapsed_days: must be from 1 to 3650');
  });
});
