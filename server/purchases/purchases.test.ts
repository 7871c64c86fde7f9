import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf } from '../../test/support/faces.js';
import { memberToken } from '../../test/support/shop-pc.js';
import { arrivals, shopPc, type ShopPc } from '../../test/support/visits.js';
import { minorDigits, toMinor } from './service.js';

describe('POST /api/purchases, GET /api/visitors/{id}/purchases', () => {
  let h: Harness;
  let a: Company;
  let b: Company;
  let pc: ShopPc;
  let pcB: ShopPc;
  let staff: string;
  let customerId: string;
  let otherCompanyCustomer: string;

  beforeAll(async () => {
    const [harness, faces] = await Promise.all([startHarness(), realFaces()]);
    h = harness;
    a = await h.company('Purchases Alpha');
    b = await h.company('Purchases Beta');
    pc = await shopPc(h, a.ownerToken, a.slug, 'Colaba');
    pcB = await shopPc(h, b.ownerToken, b.slug, 'Powai');
    staff = await memberToken(h, a.ownerToken, 'staff');
    await pc.publish(visitOf(faces, faces.same[0]));
    await pcB.publish(visitOf(faces, faces.others[0]));
    customerId = (await arrivals(h, staff, 1))[0].visitor_id;
    otherCompanyCustomer = (await arrivals(h, b.ownerToken, 1))[0].visitor_id;
  });
  afterAll(async () => {
    await Promise.all([pc?.close(), pcB?.close()]);
    await h?.close();
  });

  const post = (body: unknown, token = staff) => h.request('POST', '/api/purchases', { token, body });

  it('staff record a sale by customer reference and shop slug; 201 with the purchase', async () => {
    const r = await post({ visitor_id: 'V-1', site_id: 'colaba', amount: 249.5, currency: 'inr', items: ['Masala chai', ' Samosa '], source: 'pos', notes: 'first order' });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      visitor_id: customerId,
      visitor_ref: 'V-1',
      site_id: pc.shop.site_id,
      site: 'Colaba',
      site_slug: 'colaba',
      amount: 249.5,
      currency: 'INR',
      items: ['Masala chai', 'Samosa'],
      source: 'pos',
      notes: 'first order',
      created_at: expect.any(String),
      created_by: expect.stringMatching(/^staff-/),
    });
    // By uuid and bare number, with only the required fields.
    const minimal = await post({ visitor_id: customerId, site_id: pc.shop.site_id, amount: 1200, currency: 'JPY' });
    expect(minimal.status).toBe(201);
    expect(minimal.body).toMatchObject({ amount: 1200, currency: 'JPY', items: [], source: '', notes: '' });
    expect((await post({ visitor_id: '1', site_id: 'COLABA', amount: 0.125, currency: 'KWD' })).status).toBe(201);
  });

  it('validation: amount, currency (ISO 4217, its decimals), required fields, unknown fields; never a 500', async () => {
    const base = { visitor_id: 'V-1', site_id: 'colaba', amount: 10, currency: 'INR' };
    for (const [body, field] of [
      [{ ...base, amount: 0 }, 'amount'],
      [{ ...base, amount: -5 }, 'amount'],
      [{ ...base, amount: '10' }, 'amount'],
      [{ ...base, amount: 1e13 }, 'amount'],
      [{ ...base, amount: 10.001 }, 'amount'],
      [{ ...base, currency: 'JPY', amount: 10.5 }, 'amount'],
      [{ ...base, currency: 'ABC' }, 'currency'],
      [{ ...base, currency: 'rupees' }, 'currency'],
      [{ ...base, currency: undefined }, 'currency'],
      [{ ...base, visitor_id: undefined }, 'visitor_id'],
      [{ ...base, site_id: undefined }, 'site_id'],
      [{ ...base, items: 'chai' }, 'items'],
      [{ ...base, items: [''] }, 'items'],
      [{ ...base, purchase_id: 'x' }, 'purchase_id'],
      [{ ...base, total: 10 }, 'total'],
      [null, ''],
    ] as const) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toContain(field);
    }
    expect((await h.request('POST', '/api/purchases', { token: staff, raw: '{"amount":' })).status).toBe(400);
    expect(minorDigits('INR')).toBe(2);
    expect(toMinor(0.1 + 0.2, 'USD')).toBe(30);
  });

  it('unknown or another company’s customer or shop: 404; no session 401; the platform admin 404', async () => {
    const base = { visitor_id: 'V-1', site_id: 'colaba', amount: 10, currency: 'INR' };
    for (const body of [
      { ...base, visitor_id: 'V-99' },
      { ...base, visitor_id: otherCompanyCustomer },
      { ...base, visitor_id: randomUUID() },
      { ...base, site_id: 'powai' },
      { ...base, site_id: pcB.shop.site_id },
    ]) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body)).toBe(404);
      expect(r.body.error).toBe('not_found');
    }
    expect((await h.request('POST', '/api/purchases', { body: base })).status).toBe(401);
    expect((await post(base, await h.adminToken())).status).toBe(404);
  });

  it('purchase_id makes a retry safe: the same sale answers 200 with the stored one; different content is 409', async () => {
    const purchase_id = randomUUID();
    const body = { purchase_id, visitor_id: 'V-1', site_id: 'colaba', amount: 99.99, currency: 'USD', items: ['Latte'] };
    const first = await post(body);
    expect(first.status).toBe(201);
    expect(first.body.id).toBe(purchase_id);
    const retry = await post(body);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect((await post({ ...body, amount: 100 })).status).toBe(409);
    // Another company cannot reuse (or learn anything from) the id beyond a conflict.
    const other = await post({ ...body, visitor_id: 'V-1', site_id: 'powai' }, b.ownerToken);
    expect(other.status).toBe(409);
  });

  it('GET /api/visitors/{id}/purchases lists a customer’s sales, newest first, with their shops; limit; 404 across companies', async () => {
    const list = await h.request('GET', '/api/visitors/V-1/purchases', { token: staff });
    expect(list.status).toBe(200);
    // Everything recorded for V-1 above: three in the first test, one in the retry test (the retry was not a second).
    expect(list.body.map((p: { currency: string }) => p.currency)).toEqual(['USD', 'KWD', 'JPY', 'INR']);
    expect(list.body[0]).toMatchObject({ visitor_id: customerId, visitor_ref: 'V-1', site: 'Colaba', site_slug: 'colaba', amount: 99.99, items: ['Latte'] });
    const byId = await h.request('GET', `/api/visitors/${customerId}/purchases?limit=2`, { token: a.ownerToken });
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(list.body.slice(0, 2));
    for (const q of ['limit=0', 'limit=501', 'limit=two']) {
      const r = await h.request('GET', `/api/visitors/V-1/purchases?${q}`, { token: staff });
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    }
    // Another company's customer, an unknown one, the platform admin, no session.
    for (const [path, token, status] of [
      [`/api/visitors/${otherCompanyCustomer}/purchases`, staff, 404],
      ['/api/visitors/V-99/purchases', staff, 404],
      ['/api/visitors/V-1/purchases', await h.adminToken(), 404],
      ['/api/visitors/V-1/purchases', undefined, 401],
    ] as const) {
      expect((await h.request('GET', path, token ? { token } : {})).status, path).toBe(status);
    }
    // The other company sees only its own (none).
    const mine = await h.request('GET', `/api/visitors/${otherCompanyCustomer}/purchases`, { token: b.ownerToken });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual([]);
  });

  it('retries of one purchase_id sent at once: one 201, the others 200 with the same sale; a different sale 409; never a 500', async () => {
    // Four sales, each sent five times at once (twenty requests in flight together).
    const sales = Array.from({ length: 4 }, (_, i) => ({ purchase_id: randomUUID(), visitor_id: 'V-1', site_id: 'colaba', amount: 40 + i, currency: 'GBP', items: ['Flat white'] }));
    const replies = await Promise.all(sales.map((body) => Promise.all(Array.from({ length: 5 }, () => post(body)))));
    for (const [i, tries] of replies.entries()) {
      expect(tries.map((r) => r.status).sort(), JSON.stringify(tries.map((r) => r.body))).toEqual([200, 200, 200, 200, 201]);
      const created = tries.find((r) => r.status === 201)!;
      expect(created.body).toMatchObject({ id: sales[i]!.purchase_id, amount: 40 + i, currency: 'GBP' });
      for (const r of tries) expect(r.body).toEqual(created.body);
    }
    // Two different sales under one id at once: the first recorded wins, the other is refused.
    const contested = randomUUID();
    const pair = await Promise.all([post({ ...sales[0], purchase_id: contested }), post({ ...sales[0], purchase_id: contested, amount: 50 })]);
    expect(pair.map((r) => r.status).sort(), JSON.stringify(pair.map((r) => r.body))).toEqual([201, 409]);
    expect(pair.find((r) => r.status === 409)!.body).toEqual({ error: 'conflict', message: expect.stringContaining('purchase_id') });
    // Each recorded and audited once.
    const list = (await h.request('GET', '/api/visitors/V-1/purchases', { token: staff })).body;
    for (const s of sales) expect(list.filter((p: { id: string }) => p.id === s.purchase_id)).toHaveLength(1);
    expect(list.filter((p: { id: string }) => p.id === contested)).toEqual([expect.objectContaining({ amount: pair.find((r) => r.status === 201)!.body.amount })]);
    const trail = (await h.request('GET', '/api/audit?action=purchase.create&limit=200', { token: a.ownerToken })).body.entries;
    for (const id of [...sales.map((s) => s.purchase_id), contested]) expect(trail.filter((e: { target: string }) => e.target === id)).toHaveLength(1);
  });

  it('an erased customer takes no purchases', async () => {
    expect((await h.request('DELETE', '/api/visitors/V-1', { token: a.ownerToken })).status).toBe(200);
    expect((await post({ visitor_id: customerId, site_id: 'colaba', amount: 1, currency: 'INR' })).status).toBe(404);
  });
});
