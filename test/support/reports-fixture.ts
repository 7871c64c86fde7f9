/**
 * One fixture for the reports on both stores (test/reports-postgres.test.ts): the same rows written through drizzle's
 * query builder into whichever store the process has (the tables are picked per process: server/db/tables.ts), and
 * every report the routes serve (footfall, conversion, their presented JSON and CSV, regions) over the same queries.
 *
 * Run as a script (`node --import tsx test/support/reports-fixture.ts`, FOOTFALL_DATABASE_URL unset) it fills a
 * SQLite file in a temporary folder and prints the answers as JSON: what PostgreSQL must answer too.
 *
 * What the rows exercise: shops in Europe/London (clocks forward on 2026-03-29 at 01:00Z, back on 2026-10-25 at
 * 01:00Z), Asia/Kolkata (UTC+05:30) and America/New_York; visits either side of local midnights and of both changes;
 * staff's visits and purchases (never counted); a customer merged into another (not new); unidentified visits below
 * the gate; crossings in and out (one shop with exits only); purchases in two currencies; aged counts
 * (footfall_counts, a week before the visits); a second company whose rows must never show; empty windows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import type { Store } from '../../server/db/open.js';
import { companies, crossings, customers, footfallCounts, purchases, shops, visits } from '../../server/db/tables.js';
import { conversionCsv, footfallCsv } from '../../server/reports/csv.js';
import { ReportPool } from '../../server/reports/pool.js';
import { presentConversion, presentFootfall, presentRegions } from '../../server/reports/presenter.js';
import { ReportQueryInput, resolveReportQuery, type ReportQuery } from '../../server/reports/query.js';
import { listShops } from '../../server/shops/service.js';
import type { OpeningHours } from '../../server/shops/hours.js';

export const A = '00000000-0000-4000-8000-0000000000a1';
export const B = '00000000-0000-4000-8000-0000000000b1';
const CREATED = '2026-01-01T00:00:00.000Z';

const day = (open: string, close: string) => [{ open, close }];
const HOURS: OpeningHours = { mon: day('09:00', '18:00'), tue: day('09:00', '18:00'), wed: day('09:00', '18:00'), thu: day('09:00', '18:00'), fri: day('09:00', '18:00'), sat: day('10:00', '16:00'), sun: [] };

/** Shops: [id, company, slug, name, zone, region, opening hours]. London is A's first shop (its zone is A's default). */
const SHOPS = [
  ['shop-london', A, 'london', 'London', 'Europe/London', 'UK', HOURS],
  ['shop-mumbai', A, 'mumbai', 'Mumbai', 'Asia/Kolkata', null, { ...HOURS, sun: day('10:00', '20:00') }],
  ['shop-ny', A, 'new-york', 'New York', 'America/New_York', 'US', null],
  ['shop-b', B, 'beta', 'Beta', 'Europe/London', 'UK', HOURS],
  // In code point order (SQLite's) b-z comes first; a collation that skips punctuation puts it last.
  ['shop-bz', B, 'b-z', 'B-Z', 'Europe/London', null, HOURS],
  ['shop-ba', B, 'ba', 'Ba', 'Europe/London', null, HOURS],
] as const;

/** Customers: [id, company, number, first seen, staff, merged into]. */
const CUSTOMERS = [
  ['c1', A, 1, '2026-02-10T10:00:00.000Z', false, null], // returning
  ['c2', A, 2, '2026-03-28T10:00:00.000Z', false, null], // new on 28 March (London)
  ['c3', A, 3, '2026-01-05T10:00:00.000Z', true, null], // staff
  ['c4', A, 4, '2026-03-28T19:00:00.000Z', false, null], // new on 29 March in India, 28 March in London
  ['c5', A, 5, '2026-03-29T09:00:00.000Z', false, 'c1'], // merged into c1: never new
  ['cb', B, 1, '2026-03-29T12:00:00.000Z', false, null],
] as const;

/** Visits: [shop, at, customer, dwell ms, passed gate, staff, gender, age]. Local times in the comments. */
const VISITS: [string, string, string | null, number, boolean, boolean, string | null, number | null][] = [
  ['shop-london', '2026-03-28T10:00:00.000Z', 'c2', 60_000, true, false, 'female', 30], // 10:00 GMT
  ['shop-london', '2026-03-28T23:30:00.000Z', null, 30_000, false, false, null, null], // 23:30 GMT on the 28th
  ['shop-london', '2026-03-29T00:30:00.000Z', 'c1', 120_000, true, false, 'Male', 50], // 00:30 GMT, before the jump
  ['shop-london', '2026-03-29T01:30:00.000Z', 'c1', 90_000, true, false, 'male', 64], // 02:30 BST (01:00 is skipped)
  ['shop-london', '2026-03-29T11:00:00.000Z', 'c3', 500_000, true, true, 'female', 40], // staff
  ['shop-london', '2026-03-29T23:30:00.000Z', 'c2', 45_000, true, false, 'female', 17], // 00:30 BST on the 30th
  ['shop-london', '2026-03-30T12:00:00.000Z', null, 10_000, false, false, null, 70],
  ['shop-london', '2026-10-25T00:30:00.000Z', 'c1', 20_000, true, false, null, 25], // 01:30 BST
  ['shop-london', '2026-10-25T01:30:00.000Z', null, 40_000, true, false, 'female', null], // 01:30 GMT, the same local hour
  ['shop-london', '2026-10-25T12:00:00.000Z', 'c2', 15_000, true, false, 'female', 18],
  ['shop-mumbai', '2026-03-28T19:00:00.000Z', 'c4', 70_000, true, false, 'male', 40], // 00:30 IST on the 29th
  ['shop-mumbai', '2026-03-29T04:30:00.000Z', 'c1', 80_000, true, false, 'male', 55],
  ['shop-mumbai', '2026-03-29T06:00:00.000Z', 'c3', 300_000, true, true, null, null], // staff
  ['shop-mumbai', '2026-03-29T18:29:00.000Z', null, 10_000, false, false, null, null], // 23:59 IST on the 29th
  ['shop-mumbai', '2026-03-29T18:31:00.000Z', 'c1', 33_000, true, false, 'male', 55], // 00:01 IST on the 30th
  ['shop-ny', '2026-03-29T15:00:00.000Z', 'c4', 25_000, true, false, 'male', 41],
  ['shop-b', '2026-03-29T12:00:00.000Z', 'cb', 99_000, true, false, 'female', 33], // the other company
  ['shop-bz', '2026-03-29T13:00:00.000Z', 'cb', 12_000, true, false, 'female', 33],
  ['shop-ba', '2026-03-29T14:00:00.000Z', null, 8_000, false, false, null, null],
];

/** Crossings: [shop, at, direction]. New York has exits only (no capture rate). */
const CROSSINGS: [string, string, 'in' | 'out'][] = [
  ['shop-london', '2026-03-28T10:00:00.000Z', 'in'],
  ['shop-london', '2026-03-29T00:30:00.000Z', 'in'],
  ['shop-london', '2026-03-29T01:30:00.000Z', 'out'],
  ['shop-london', '2026-03-29T23:30:00.000Z', 'in'],
  ['shop-london', '2026-03-30T12:00:00.000Z', 'out'],
  ['shop-london', '2026-10-25T00:30:00.000Z', 'in'],
  ['shop-london', '2026-10-25T01:30:00.000Z', 'in'],
  ['shop-ny', '2026-03-29T15:00:00.000Z', 'out'],
  ['shop-b', '2026-03-29T12:00:00.000Z', 'in'],
];

/** Purchases: [company, customer, shop, minor units, currency, at]. */
const PURCHASES: [string, string, string, number, string, string][] = [
  [A, 'c1', 'shop-london', 1250, 'GBP', '2026-03-29T12:00:00.000Z'],
  [A, 'c2', 'shop-london', 800, 'GBP', '2026-03-30T09:00:00.000Z'],
  [A, 'c4', 'shop-mumbai', 50_000, 'INR', '2026-03-29T05:00:00.000Z'],
  [A, 'c3', 'shop-london', 999, 'GBP', '2026-03-29T12:30:00.000Z'], // staff: left out
  [A, 'c1', 'shop-london', 500, 'GBP', '2026-03-22T12:00:00.000Z'], // the week before
  [B, 'cb', 'shop-b', 700, 'GBP', '2026-03-29T12:00:00.000Z'],
];

/** Aged counts (visits gone by visit_retention_days): [shop, 15-minute slot, local day]. */
const AGED: [string, string, string][] = [
  ['shop-london', '2026-03-16T10:00:00.000Z', '2026-03-16'],
  ['shop-london', '2026-03-16T10:15:00.000Z', '2026-03-16'],
  ['shop-mumbai', '2026-03-17T05:00:00.000Z', '2026-03-17'],
];

export async function fillReportFixture(store: Store): Promise<void> {
  const db = store.db;
  await db.insert(companies).values([
    { id: A, slug: 'alpha', name: 'Alpha', createdAt: CREATED },
    { id: B, slug: 'beta', name: 'Beta', createdAt: CREATED },
  ]);
  await db.insert(shops).values(
    SHOPS.map(([id, companyId, slug, name, timezone, region, openingHours], i) => ({
      id,
      companyId,
      slug,
      name,
      timezone,
      region,
      openingHours,
      // London first: the company's default zone (query.ts).
      createdAt: new Date(Date.parse(CREATED) + i * 1000).toISOString(),
      brokerUsername: `${companyId === A ? 'alpha' : 'beta'}.${slug}`,
    })),
  );
  await db.insert(customers).values(CUSTOMERS.map(([id, companyId, number, firstSeenAt, staff, mergedInto]) => ({ id, companyId, number, firstSeenAt, lastSeenAt: firstSeenAt, staff, mergedInto, createdAt: firstSeenAt })));
  await db.insert(visits).values(
    VISITS.map(([shopId, occurredAt, customerId, dwellMs, passedGate, staff, gender, age], i) => ({
      visitId: `v${i}`,
      companyId: shopId.startsWith('shop-b') ? B : A,
      shopId,
      cameraId: 'door',
      occurredAt,
      lastSeenAt: new Date(Date.parse(occurredAt) + dwellMs).toISOString(),
      receivedAt: occurredAt,
      customerId,
      dwellMs,
      passedGate,
      staff,
      gender,
      age,
      quality: passedGate ? 0.9 : 0.2,
    })),
  );
  await db.insert(crossings).values(
    CROSSINGS.map(([shopId, occurredAt, direction], i) => ({ companyId: shopId.startsWith('shop-b') ? B : A, shopId, crossingId: `x${i}`, cameraId: 'door', direction, occurredAt, receivedAt: occurredAt })),
  );
  await db.insert(purchases).values(PURCHASES.map(([companyId, customerId, shopId, amountMinor, currency, createdAt], i) => ({ id: `p${i}`, companyId, customerId, shopId, amountMinor, currency, items: ['tea'], createdAt })));
  await db.insert(footfallCounts).values(
    AGED.map(([shopId, slotAt, day]) => ({ shopId, slotAt, day, visits: 3, belowGate: 1, anon: 1, dwellMs: 90_000, known: 2, fresh: 1, knownHour: 2, freshHour: 1, entries: 4, exits: 3 })),
  );
}

/** The queries: [company, query string as the routes take it, or a region '' (the regions route's "no region")]. */
export const QUERIES: [string, string][] = [
  [A, 'from=2026-03-27&to=2026-03-31&tz=Europe/London'],
  [A, 'from=2026-03-29&to=2026-03-29&site=london&bucket=hour'], // 23 local hours
  [A, 'from=2026-10-25&to=2026-10-25&site=london&bucket=hour'], // 01:00 is two hours
  [A, 'from=2026-03-28&to=2026-03-30&site=mumbai'],
  [A, 'from=2026-03-29&to=2026-03-29&site=mumbai&bucket=hour'],
  [A, 'from=2026-03-29&to=2026-03-29&bucket=hour&tz=Europe/London'],
  [A, 'from=2026-03-02&to=2026-03-31&bucket=week&tz=Asia/Kolkata'],
  [A, 'from=2026-01-01&to=2026-12-31&bucket=month'],
  [A, 'from=2026-03-23&to=2026-03-29&region=UK'], // the week before holds the aged counts
  [A, 'from=2026-03-16&to=2026-03-17&site=mumbai&bucket=hour'], // aged counts by hour, one shop
  [A, 'from=2026-03-29&to=2026-03-29&site=new-york&bucket=hour'],
  [A, 'from=2025-06-01&to=2025-06-07'], // empty
  [A, 'bucket=day'], // defaults: the week to "today" in London's zone
  [B, 'from=2026-03-29&to=2026-03-29'], // no aged counts
  [B, 'from=2026-03-01&to=2026-03-31&bucket=week&site=beta'],
];

/** "Now" for the defaults. */
export const NOW = new Date('2026-03-31T12:00:00.000Z');

/** Every report of the fixture, as plain JSON (what a route sends, and the report objects under it). */
export async function reportAnswers(store: Store, size: number): Promise<unknown> {
  const pool = new ReportPool({ store, size, log: pino({ level: 'silent' }) });
  const queryOf = (companyId: string, text: string) => resolveReportQuery(store.db, companyId, ReportQueryInput.parse(Object.fromEntries(new URLSearchParams(text))), NOW);
  const one = async (companyId: string, q: ReportQuery) => {
    // Side by side, as the regions route asks for them.
    const [footfall, conversion] = await Promise.all([pool.footfall(companyId, q), pool.conversion(companyId, q)]);
    const f = presentFootfall(footfall);
    const c = presentConversion(conversion);
    return { footfall, conversion, f, c, footfallCsv: footfallCsv(f), conversionCsv: conversionCsv(c, q, q.siteId ?? '') };
  };
  const answers: Record<string, unknown> = {};
  for (const [companyId, text] of QUERIES) answers[`${companyId} ${text}`] = await one(companyId, await queryOf(companyId, text));
  // The shops without a region (region ''), as the regions route asks; then the regions route itself.
  answers['no region'] = await one(A, { ...(await queryOf(A, 'from=2026-03-27&to=2026-03-31')), region: '' });
  const q = { ...(await queryOf(A, 'from=2026-03-23&to=2026-03-31')), siteId: null, bucket: 'day' as const };
  const list = await listShops(store.db, A);
  const rows = await Promise.all(
    [...new Set(list.map((s) => s.region))].map(async (region) => {
      const scoped = { ...q, region: region ?? '' };
      const [f, c] = await Promise.all([pool.footfall(A, scoped), pool.conversion(A, scoped)]);
      return { region, shops: list.filter((s) => s.region === region).length, f: presentFootfall(f), c: presentConversion(c) };
    }),
  );
  answers.regions = presentRegions(q, rows);
  await pool.close();
  return JSON.parse(JSON.stringify(answers)) as unknown;
}

/** The script: the answers on a SQLite file, as JSON on stdout. */
async function main(): Promise<void> {
  if (process.env.FOOTFALL_DATABASE_URL) throw new Error('the SQLite answers: run without FOOTFALL_DATABASE_URL');
  const { openDatabase } = await import('../../server/db/open.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-reports-fixture-'));
  try {
    const store = openDatabase(path.join(dir, 'head-office.db'));
    try {
      await fillReportFixture(store);
      // Inline (size 0): the threads would run the same service on the same file.
      process.stdout.write(JSON.stringify(await reportAnswers(store, 0)));
    } finally {
      store.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
