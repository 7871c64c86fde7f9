import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VisitMessage } from '../../shared/messages.js';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFace, type RealFaces } from '../../test/support/faces.js';
import { connectPc, enrol, openShop } from '../../test/support/shop-pc.js';
import { arrivals, settled } from '../../test/support/visits.js';
import { loadConfig } from '../config.js';
import { openDatabase, sqliteOf } from '../db/open.js';
import { ReportPool } from './pool.js';
import { presentConversion, presentFootfall } from './presenter.js';
import { ReportQueryInput, resolveReportQuery, type ReportQuery } from './query.js';
import { conversionReport, footfallReport } from './service.js';
import { sqliteOnly } from '../../test/support/stores.js';

/** An opened, enrolled shop in a given time zone whose PC publishes visits like the agent (QoS 1). */
async function shopIn(h: Harness, c: Company, name: string, timezone?: string) {
  const shop = await openShop(h, c.ownerToken, timezone ? { name, timezone } : { name });
  const client = await connectPc(h, await enrol(h, c.ownerToken, shop.slug));
  const topic = upTopic(c.slug, shop.slug, 'visit');
  return {
    shop: shop as { site_id: string; slug: string; name: string },
    publish: (msg: VisitMessage) => client.publishAsync(topic, JSON.stringify(msg), { qos: 1 }),
    close: () => client.endAsync(true).catch(() => {}),
  };
}
type Shop = Awaited<ReturnType<typeof shopIn>>;

/** Footfall and conversion queries over the fixture, in every bucket, for the company and one shop. */
const QUERIES = [
  'from=2026-03-01&to=2026-03-15&tz=America/New_York',
  'from=2026-03-08&to=2026-03-08&tz=America/New_York&bucket=hour',
  'from=2026-03-08&to=2026-03-10&site=andheri',
  'from=2026-02-01&to=2026-03-31&bucket=week',
  'from=2026-01-01&to=2026-12-31&bucket=month&site=brooklyn',
  'from=2025-12-30&to=2026-01-02&tz=UTC',
];

describe.skipIf(sqliteOnly('server/reports/pool.test.ts', 'report threads with their own SQLite connection'))('reports in a thread (pool.ts)', () => {
  let h: Harness;
  let faces: RealFaces;
  let a: Company;
  let andheri: Shop;
  let brooklyn: Shop;
  let powai: Shop;

  const get = (report: 'footfall' | 'conversion', query: string, token = a.ownerToken) => h.request('GET', `/api/reports/${report}?${query}`, { token });
  const queryOf = async (query: string, companyId = a.id): Promise<ReportQuery> => await resolveReportQuery(h.server.store.db, companyId, ReportQueryInput.parse(Object.fromEntries(new URLSearchParams(query))));

  async function visit(pc: Shop, at: string, face: RealFace | undefined, over: Partial<VisitMessage> = {}) {
    await pc.publish(visitOf(faces, face, { occurred_at: at, camera_id: 'door', ...over }));
    await settled(h);
  }

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness(), realFaces()]);
    const b = await h.company('Pool Beta');
    a = await h.company('Pool Alpha');
    andheri = await shopIn(h, a, 'Andheri');
    brooklyn = await shopIn(h, a, 'Brooklyn', 'America/New_York');
    powai = await shopIn(h, b, 'Powai');
    const [p1, p2, p3] = faces.others as [RealFace, RealFace, RealFace];
    await visit(brooklyn, '2026-03-08T06:30:00Z', p1);
    await visit(brooklyn, '2026-03-08T07:15:00Z', p1);
    await visit(brooklyn, '2026-03-08T07:40:00Z', undefined);
    await visit(brooklyn, '2026-03-08T13:00:00Z', p1, { passed_gate: false, quality: 0.3 });
    await visit(andheri, '2026-03-08T18:45:00Z', p2);
    await visit(andheri, '2026-03-08T18:00:00Z', p2);
    await visit(andheri, '2026-03-09T04:00:00Z', p1);
    await visit(andheri, '2026-03-10T10:00:00Z', p3);
    await visit(andheri, '2026-02-28T20:00:00Z', undefined, { passed_gate: true });
    await visit(powai, '2026-03-08T07:20:00Z', p1);
    const rows = await arrivals(h, a.ownerToken, 9);
    const customer = rows.find((r) => r.visitor_id)!.visitor_id as string;
    for (const [amount, currency] of [
      [120, 'INR'],
      [80.5, 'INR'],
      [9.99, 'USD'],
    ] as const) {
      const r = await h.request('POST', '/api/purchases', { token: a.ownerToken, body: { visitor_id: customer, site_id: 'andheri', amount, currency } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
  });
  afterAll(async () => {
    await Promise.all([andheri, brooklyn, powai].map((s) => s?.close()));
    await h?.close();
  });

  it('answers through the thread equal the service called inline on the same data', async () => {
    const db = h.server.store.db;
    const today = new Date().toISOString().slice(0, 10);
    for (const query of [...QUERIES, `from=${today}&to=${today}&tz=UTC`]) {
      const q = await queryOf(query);
      const footfall = await get('footfall', query);
      expect(footfall.status, query).toBe(200);
      expect(footfall.body, query).toEqual(presentFootfall(await footfallReport(db, a.id, q)));
      const conversion = await get('conversion', query);
      expect(conversion.status, query).toBe(200);
      expect(conversion.body, query).toEqual(presentConversion(await conversionReport(db, a.id, q)));
      // The plain report objects too, before the presenter (structured clone loses nothing).
      expect(await h.server.reports.footfall(a.id, q), query).toEqual(await footfallReport(db, a.id, q));
      expect(await h.server.reports.conversion(a.id, q), query).toEqual(await conversionReport(db, a.id, q));
    }
    // Something was counted (the comparison is not between two empty answers).
    expect((await get('footfall', QUERIES[0]!)).body).toMatchObject({ visits: 8 });
    expect((await get('conversion', `from=${today}&to=${today}&tz=UTC`)).body).toMatchObject({ purchasers: 1, currency: 'INR', revenue: 200.5 });
    // Errors stay on the main thread's path: the same 400s as before.
    const bad = await get('footfall', 'site=powai');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'invalid_request', message: 'There is no shop "powai" in your company.' });
  });

  it('computes on another thread, with its own read-only connection to the same file', async () => {
    await get('footfall', QUERIES[0]!);
    const pool = h.server.reports;
    expect(pool.threads).toBe(1);
    const probe = await pool.probeForTest();
    expect(probe.threadId).not.toBe(threadId);
    expect(probe.readonly).toBe(true);
    expect(probe.writeRefused).toMatch(/readonly/);
    expect(path.resolve(probe.file)).toBe(path.resolve(h.dataDir, 'footfall.db'));
    // The main thread's connection is the writer; the probe's write statement runs there.
    expect(sqliteOf(h.server.store).readonly).toBe(false);
    expect(() => sqliteOf(h.server.store).prepare('delete from visits where 0').run()).not.toThrow();
    // Still the one thread (pool size 1).
    await get('conversion', QUERIES[0]!);
    expect(pool.threads).toBe(1);
    expect((await pool.probeForTest()).threadId).toBe(probe.threadId);
  });

  it('queues reports in order, one at a time on the one thread', async () => {
    const pool = h.server.reports;
    const done: number[] = [];
    const qs = await Promise.all(QUERIES.slice(0, 3).map((query) => queryOf(query)));
    const runs = qs.map((q, i) => pool.footfall(a.id, q).then((r) => (done.push(i), r)));
    expect(pool.pending).toEqual({ running: 1, queued: 2 });
    const results = await Promise.all(runs);
    expect(done).toEqual([0, 1, 2]);
    for (const [i, r] of results.entries()) expect(r).toEqual(await footfallReport(h.server.store.db, a.id, qs[i]!));
    expect(pool.pending).toEqual({ running: 0, queued: 0 });
  });

  it('a thread killed while computing answers 503 reports_unavailable; the next report starts a new thread', async () => {
    const pool = h.server.reports;
    const before = (await pool.probeForTest()).threadId;
    pool.holdForTest(60_000); // the thread is stuck, so the report waits inside it
    const reply = get('footfall', QUERIES[0]!);
    await pool.busyForTest();
    await pool.killForTest();
    const r = await reply;
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: 'reports_unavailable', message: 'The report could not be computed: the thread computing it stopped. Try again (a new one is started).' });
    expect(r.headers.get('x-request-id')).toBeTruthy();
    expect(pool.threads).toBe(0);
    const again = await get('footfall', QUERIES[0]!);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(presentFootfall(await footfallReport(h.server.store.db, a.id, await queryOf(QUERIES[0]!))));
    expect(pool.threads).toBe(1);
    expect((await pool.probeForTest()).threadId).not.toBe(before);
  });

  it('sees data committed right before the request', async () => {
    const window = 'from=2026-03-20&to=2026-03-20&tz=UTC';
    expect((await get('footfall', window)).body).toMatchObject({ visits: 0, total: 0 });
    for (let i = 1; i <= 3; i++) {
      await visit(andheri, `2026-03-20T10:0${i}:00Z`, undefined); // settled: ingest has committed it
      expect((await get('footfall', window)).body, `visit ${i}`).toMatchObject({ visits: i, total: i });
    }
    const today = new Date().toISOString().slice(0, 10);
    const now = `from=${today}&to=${today}&tz=UTC`;
    const before = (await get('conversion', now)).body;
    const rows = await arrivals(h, a.ownerToken, 1);
    const someone = rows.find((r) => r.visitor_id)!.visitor_id as string;
    const p = await h.request('POST', '/api/purchases', { token: a.ownerToken, body: { visitor_id: someone, site_id: 'andheri', amount: 1000, currency: 'INR' } });
    expect(p.status).toBe(201);
    expect((await get('conversion', now)).body).toMatchObject({ revenue: before.revenue + 1000 });
  });
});

describe('the report pool: closing, inline, configuration', () => {
  it.skipIf(sqliteOnly('server/reports/pool.test.ts', 'the report thread'))('closing head office terminates the thread; later reports are refused with 503', async () => {
    const h = await startHarness();
    try {
      const c = await h.company('Pool Close');
      const pool = h.server.reports;
      expect(pool.threads).toBe(0); // started lazily
      const r = await h.request('GET', '/api/reports/footfall', { token: c.ownerToken });
      expect(r.status).toBe(200);
      expect(pool.threads).toBe(1);
      const q = await resolveReportQuery(h.server.store.db, c.id, ReportQueryInput.parse({}), new Date('2026-03-10T00:00:00Z'));
      await h.close();
      expect(pool.threads).toBe(0);
      await expect(pool.footfall(c.id, q)).rejects.toMatchObject({ status: 503, code: 'reports_unavailable' });
    } finally {
      await h.close();
    }
  });

  it('FOOTFALL_REPORT_WORKERS=0 runs reports inline, with the same answers', async () => {
    const h = await startHarness({ FOOTFALL_REPORT_WORKERS: 0 });
    try {
      const c = await h.company('Pool Inline');
      expect(h.server.reports.file).toBeNull();
      const r = await h.request('GET', '/api/reports/conversion', { token: c.ownerToken });
      expect(r.body).toMatchObject({ visitors: 0, purchasers: 0, conversion: 0, revenue: 0, average_basket: 0, currency: '', change: { visitors: null } });
      expect(h.server.reports.threads).toBe(0);
      // Reports asked for together (the regions route asks for two per region) run one after the other: each one's
      // read transaction is the connection's one open transaction, so side by side they would refuse each other.
      for (const region of ['North', 'South']) {
        const shop = await openShop(h, c.ownerToken, { name: region });
        await h.request('PATCH', `/api/sites/${shop.slug}`, { token: c.ownerToken, body: { region } });
      }
      const regions = await h.request('GET', '/api/reports/regions', { token: c.ownerToken });
      expect(regions.status).toBe(200);
      expect((regions.body as { regions: { region: string }[] }).regions.map((x) => x.region).sort()).toEqual(['North', 'South']);
      expect(h.server.reports.pending).toEqual({ running: 0, queued: 0 });
    } finally {
      await h.close();
    }
  });

  it.skipIf(sqliteOnly('server/reports/pool.test.ts', 'an in-memory SQLite database'))('an in-memory database runs reports inline', async () => {
    const store = openDatabase(':memory:');
    try {
      const pool = new ReportPool({ store, size: 1, log: pino({ level: 'silent' }) });
      expect(pool.file).toBeNull();
      const q: ReportQuery = { from: '2026-03-01', to: '2026-03-02', siteId: null, region: null, tz: 'UTC', bucket: 'day' };
      expect(await pool.footfall('no-such-company', q)).toEqual(await footfallReport(store.db, 'no-such-company', q));
      expect(pool.threads).toBe(0);
      await pool.close();
    } finally {
      store.close();
    }
  });

  it('FOOTFALL_REPORT_WORKERS: default 1, 0 to 16, anything else stops start naming it', () => {
    expect(loadConfig({}).FOOTFALL_REPORT_WORKERS).toBe(1);
    expect(loadConfig({ FOOTFALL_REPORT_WORKERS: '0' }).FOOTFALL_REPORT_WORKERS).toBe(0);
    expect(loadConfig({ FOOTFALL_REPORT_WORKERS: '4' }).FOOTFALL_REPORT_WORKERS).toBe(4);
    for (const v of ['17', '-1', 'two', '1.5']) expect(() => loadConfig({ FOOTFALL_REPORT_WORKERS: v }), v).toThrow(/FOOTFALL_REPORT_WORKERS/);
  });
});
