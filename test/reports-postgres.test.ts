import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../server/db/pg/store.js';
import type * as Fixture from './support/reports-fixture.js';
import { startPostgres, postgresMissing, type TestPostgres } from './support/postgres.js';
import { noteSkip } from './support/skips.js';

/**
 * The reports answer on PostgreSQL exactly as on SQLite (issue 27, docs/scale-out.md). The same rows
 * (test/support/reports-fixture.ts: shops in three zones, both of London's clock changes, staff, merged customers,
 * crossings, purchases, aged counts, a second company) go into a SQLite file, in a child process that prints every
 * report as JSON, and into PostgreSQL here; every report the routes serve must be equal. The tables are chosen once
 * per process (server/db/tables.ts), hence the child, and FOOTFALL_DATABASE_URL set here before any of head office
 * is imported (the isolated project: one process per file).
 */
const FILE = 'test/reports-postgres.test.ts';
const missing = postgresMissing();
if (missing) noteSkip(FILE, missing);

/** The SQLite answers: the fixture script on a temporary SQLite file, without FOOTFALL_DATABASE_URL. */
async function sqliteAnswers(): Promise<Record<string, any>> {
  const env = { ...process.env };
  delete env.FOOTFALL_DATABASE_URL;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'test/support/reports-fixture.ts'], { env, maxBuffer: 64 << 20 });
  return JSON.parse(stdout) as Record<string, any>;
}

/**
 * A database whose default collation sorts text as many do (punctuation skipped: `ba` before `b-z`), unlike the
 * test cluster's C: the reports must still list shops in SQLite's code point order. An ICU locale, since the
 * machine may have no OS locale but C; where PostgreSQL lacks ICU, the cluster's own database.
 */
async function databaseSortingLikePeople(cluster: TestPostgres): Promise<string> {
  const { default: pgClient } = await import('pg');
  const c = new pgClient.Client({ connectionString: cluster.url() });
  await c.connect();
  try {
    await c.query(`create database reports_icu template template0 locale_provider icu icu_locale 'en-US-u-ka-shifted' locale 'C'`);
    return cluster.url('reports_icu');
  } catch {
    return await cluster.createDatabase();
  } finally {
    await c.end();
  }
}

describe.skipIf(missing)('the reports on PostgreSQL', () => {
  let cluster: TestPostgres;
  let store: PostgresStore;
  let fixture: typeof Fixture;
  let sqlite: Record<string, any>;
  let pg: Record<string, any>;
  const key = (query: string, company?: string) => `${company ?? fixture.A} ${query}`;

  beforeAll(async () => {
    const answers = sqliteAnswers();
    cluster = await startPostgres();
    process.env.FOOTFALL_DATABASE_URL = await databaseSortingLikePeople(cluster);
    const { openPostgresStore } = await import('../server/db/pg/store.js');
    store = await openPostgresStore(process.env.FOOTFALL_DATABASE_URL);
    fixture = await import('./support/reports-fixture.js');
    await fixture.fillReportFixture(store);
    // Two at a time: the regions route asks for several reports together.
    pg = (await fixture.reportAnswers(store, 2)) as Record<string, any>;
    sqlite = await answers;
  }, 120_000);

  afterAll(async () => {
    delete process.env.FOOTFALL_DATABASE_URL;
    await store?.close();
    await cluster?.close();
  });

  it('picks the PostgreSQL tables, and SQLite the fixture answers from', async () => {
    const { is } = await import('drizzle-orm');
    const { PgTable } = await import('drizzle-orm/pg-core');
    const tables = await import('../server/db/tables.js');
    expect(is(tables.visits, PgTable)).toBe(true);
    expect(Object.keys(sqlite)).toEqual(Object.keys(pg));
    expect(Object.keys(pg).length).toBe(fixture.QUERIES.length + 2);
  });

  it('the database sorts text unlike SQLite, so the shops\' order is the reports\' doing', async () => {
    const r = await store.pool.query<{ slug: string }>(`select slug from shops where company_id = $1 order by slug`, [fixture.B]);
    expect(r.rows.map((x) => x.slug)).toEqual(['ba', 'beta', 'b-z']);
    expect(sqlite[key('from=2026-03-29&to=2026-03-29', fixture.B)].f.sites.map((x: any) => x.slug)).toEqual(['b-z', 'ba', 'beta']);
  });

  it('every report, as the routes present it (JSON, CSV, regions) and the report objects under it, equals SQLite answer for answer', () => {
    for (const k of Object.keys(sqlite)) expect({ [k]: pg[k] }).toEqual({ [k]: sqlite[k] });
  });

  it('the fixture pins the semantics: local days across the spring change, staff and other companies left out, merged customers never new', () => {
    const days = sqlite[key('from=2026-03-27&to=2026-03-31&tz=Europe/London')].f;
    // [day, visitors, new, returning, entries, exits, visits]. The visit at 23:30Z on the 29th is 00:30 BST on the
    // 30th; c5 (merged) was first seen on the 29th and is not new; staff's visits in London and Mumbai are not counted.
    expect(days.points.map((p: any) => [p.bucket, p.visitors, p.new, p.returning, p.entries, p.exits, p.visits])).toEqual([
      ['2026-03-27', 0, 0, 0, 0, 0, 0],
      ['2026-03-28', 3, 2, 0, 1, 0, 3],
      ['2026-03-29', 3, 0, 2, 1, 2, 6],
      ['2026-03-30', 2, 0, 1, 1, 1, 2],
      ['2026-03-31', 0, 0, 0, 0, 0, 0],
    ]);
    // Staff's purchase (9.99) is left out; the other company's too.
    expect(sqlite[key('from=2026-03-27&to=2026-03-31&tz=Europe/London')].c).toMatchObject({ visitors: 6, purchasers: 3, revenue: 20.5, currency: 'GBP' });
    expect(pg[key('from=2026-03-27&to=2026-03-31&tz=Europe/London')].c).toMatchObject({ visitors: 6, purchasers: 3, revenue: 20.5, currency: 'GBP' });
  });

  it('the fixture pins the clock changes in hour buckets: 23 hours without 01:00 in March, 01:00 twice as long in October', () => {
    for (const answers of [sqlite, pg]) {
      const march = answers[key('from=2026-03-29&to=2026-03-29&site=london&bucket=hour')].f.points;
      expect(march.length).toBe(23);
      expect(march.map((p: any) => p.bucket)).not.toContain('2026-03-29T01:00');
      const seen = (points: any[]) => points.filter((p) => p.visitors > 0 || p.entries > 0 || p.exits > 0).map((p) => [p.bucket, p.visitors, p.entries, p.exits]);
      // Staff's visit at 12:00 BST leaves that hour empty.
      expect(seen(march)).toEqual([
        ['2026-03-29T00:00', 1, 1, 0],
        ['2026-03-29T02:00', 1, 0, 1],
      ]);
      const october = answers[key('from=2026-10-25&to=2026-10-25&site=london&bucket=hour')].f.points;
      expect(october.length).toBe(24);
      expect(seen(october)).toEqual([
        ['2026-10-25T01:00', 2, 2, 0],
        ['2026-10-25T12:00', 1, 0, 0],
      ]);
    }
  });

  it('empty windows answer zeros, not errors; aged counts add to the week before', () => {
    for (const answers of [sqlite, pg]) {
      const empty = answers[key('from=2025-06-01&to=2025-06-07')];
      expect(empty.f.points).toHaveLength(7);
      expect(empty.f.points.every((p: any) => p.visitors === 0 && p.visits === 0 && p.entries === 0 && p.capture_rate === null)).toBe(true);
      expect(empty.f).toMatchObject({ total: 0, visits: 0, median_dwell_s: 0 });
      expect(empty.c).toMatchObject({ visitors: 0, purchasers: 0, revenue: 0, currency: '' });
      // London's two aged slots (3 visits each, 4 entries each) fall in the UK week's period before.
      expect(answers[key('from=2026-03-23&to=2026-03-29&region=UK')].f.previous).toMatchObject({ visits: 6, entries: 8 });
    }
  });

  it('a report reads one snapshot: repeatable read, read only, blind to what commits meanwhile', async () => {
    const { readSnapshot } = await import('../server/reports/service.js');
    const { rows } = await import('../server/db/raw.js');
    const { sql } = await import('drizzle-orm');
    const count = async (db: typeof store.db) => (await rows<{ n: number }>(db, sql`select count(*) as n from visits`))[0]!.n;
    const before = await count(store.db);
    const seen = await readSnapshot(store.db, async (db) => {
      const settings = await rows<{ iso: string; ro: string }>(db, sql`select current_setting('transaction_isolation') as iso, current_setting('transaction_read_only') as ro`);
      const first = await count(db);
      // Committed by another connection of the pool while the report reads.
      await store.pool.query(`insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, received_at, quality, passed_gate)
        values ('late', '${fixture.A}', 'shop-london', 'door', now(), now(), 0.9, true)`);
      return { settings: settings[0], first, second: await count(db) };
    });
    expect(seen).toEqual({ settings: { iso: 'repeatable read', ro: 'on' }, first: before, second: before });
    expect(await count(store.db)).toBe(before + 1);
    await store.pool.query(`delete from visits where visit_id = 'late'`);
  });

  it('the report pool on PostgreSQL: on this thread, at most FOOTFALL_REPORT_WORKERS at once, the rest queued in order', async () => {
    const { ReportPool } = await import('../server/reports/pool.js');
    const { pino } = await import('pino');
    const pool = new ReportPool({ store, size: 1, log: pino({ level: 'silent' }) });
    expect(pool.file).toBeNull();
    const q = { from: '2026-03-27', to: '2026-03-31', siteId: null, region: null, tz: 'Europe/London', bucket: 'day' as const };
    const order: number[] = [];
    const three = [0, 1, 2].map((i) => pool.footfall(fixture.A, q).then((r) => (order.push(i), r)));
    expect(pool.pending).toEqual({ running: 1, queued: 2 });
    const reports = await Promise.all(three);
    expect(order).toEqual([0, 1, 2]);
    expect(pool.pending).toEqual({ running: 0, queued: 0 });
    expect(pool.threads).toBe(0);
    expect(JSON.parse(JSON.stringify(reports[2]))).toEqual(sqlite[key('from=2026-03-27&to=2026-03-31&tz=Europe/London')].footfall);
    // Closing refuses the queued ones with 503, as the threads do.
    const running = pool.footfall(fixture.A, q);
    const queued = pool.footfall(fixture.A, q);
    await pool.close();
    await expect(queued).rejects.toMatchObject({ status: 503, code: 'reports_unavailable' });
    await expect(running).resolves.toMatchObject({ total: 6 });
    await expect(pool.footfall(fixture.A, q)).rejects.toMatchObject({ status: 503 });
  });
});
