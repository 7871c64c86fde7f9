/**
 * Occupancy and door counts benchmark (`npm run bench -- occupancy`): what entries, exits and occupancy cost head
 * office (docs/body-counting.md, "Head office"). A database made by the checked-in migrations (openDatabase, the
 * server's own pragmas) on a temporary data dir holds one company with SHOPS shops in two time zones, each with a door
 * camera with a counting line, and CROSSINGS_PER_DAY crossings a day per shop for DAYS days, today included, written
 * straight into `crossings` in the columns ingest fills.
 *
 * Timed (median and p95 of RUNS runs after a warm-up):
 * - `shopsToday` over every shop: what GET /api/sites adds to each row, on a first poll (every day walked from
 *   midnight), a poll with nothing new, and a poll after one new crossing per shop (its insert included), beside the
 *   bare reference of the same rows: a plain `count(*)` of each shop's crossings today on the same index (the least
 *   any answer can read), and `listShops` (what the route read before);
 * - `doorCounts` for the company's footfall report by day over the last 14 days and by hour over the last 31 days.
 * Checked: every shop's occupancy against a walk in JavaScript over its rows; the benchmark throws if one differs.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forgetDays, shopsToday } from '../server/crossings/service.js';
import { openDatabase } from '../server/db/open.js';
import { addDays, bucketsOf, localToUtc, todayIn } from '../server/reports/calendar.js';
import { doorCounts } from '../server/reports/door.js';
import { listShops } from '../server/shops/service.js';
import { count, loadAverage, ms, percentile, progress, table, timeAsync } from './util.js';

const SHOPS = Number(process.env.BENCH_SHOPS ?? 50);
const CROSSINGS_PER_DAY = Number(process.env.BENCH_CROSSINGS_PER_DAY ?? 2000);
const DAYS = Number(process.env.BENCH_DAYS ?? 14);
const RUNS = 30;
const ZONES = ['Asia/Kolkata', 'Europe/London'];

function stats(samples: number[]): [string, string] {
  return [ms(percentile(samples, 0.5)), ms(percentile(samples, 0.95))];
}

async function measure(f: () => unknown): Promise<number[]> {
  for (let i = 0; i < 3; i++) await f();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) samples.push(await timeAsync(async () => await f()));
  return samples;
}

export async function run(): Promise<string | undefined> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-occupancy-'));
  try {
    const store = openDatabase(path.join(dir, 'footfall.db'));
    const db = store.db;
    const now = new Date();
    const at = now.toISOString();
    const companyId = randomUUID();
    const shops: { id: string; timezone: string }[] = [];
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    progress(`occupancy: ${SHOPS} shops, ${count(CROSSINGS_PER_DAY)} crossings a day each, ${DAYS} days`);
    await store.tx(async () => {
      store.sqlite.prepare('insert into companies (id, slug, name, created_at) values (?, ?, ?, ?)').run(companyId, 'bench-door', 'Bench Door', at);
      const shop = store.sqlite.prepare('insert into shops (id, company_id, slug, name, timezone, created_at, broker_username) values (?, ?, ?, ?, ?, ?, ?)');
      const camera = store.sqlite.prepare(
        `insert into cameras (id, company_id, shop_id, camera_id, label, host, port, path, username, max_width, tuning, created_at, updated_at)
         values (?, ?, ?, 'door', 'Door', '192.168.1.64', 554, '', '', 1280, ?, ?, ?)`,
      );
      const tuning = JSON.stringify({ detect_fps: 8, min_face_px: 64, rotate: 0, line: { a: [0.1, 0.5], b: [0.9, 0.5], inside: 'right' } });
      for (let i = 0; i < SHOPS; i++) {
        const s = { id: randomUUID(), timezone: ZONES[i % ZONES.length]! };
        shop.run(s.id, companyId, `shop-${i}`, `Shop ${i}`, s.timezone, at, `bench-door.shop-${i}`);
        camera.run(randomUUID(), companyId, s.id, tuning, at, at);
        shops.push(s);
      }
    });
    const insert = store.sqlite.prepare(
      `insert into crossings (company_id, shop_id, crossing_id, camera_id, camera_uuid, direction, occurred_at, received_at)
       values (?, ?, ?, 'door', null, ?, ?, ?)`,
    );
    let rows = 0;
    for (const s of shops) {
      const today = todayIn(s.timezone, now);
      await store.tx(async () => {
        for (let d = DAYS - 1; d >= 0; d--) {
          const day = addDays(today, -d);
          // Opening hours 09:00 to 21:00 local; a few more entries than exits (some leave unseen).
          const lo = localToUtc(s.timezone, day, 9);
          const span = localToUtc(s.timezone, day, 21) - lo;
          for (let k = 0; k < CROSSINGS_PER_DAY; k++) {
            const t = new Date(lo + Math.floor(rand() * span)).toISOString();
            insert.run(companyId, s.id, randomUUID(), rand() < 0.52 ? 'in' : 'out', t, t);
            rows++;
          }
        }
      });
    }
    store.sqlite.pragma('optimize');
    progress(`occupancy: ${count(rows)} crossings written`);

    // Checked against a walk in JavaScript over the raw rows.
    const got = await shopsToday(db, shops, now);
    for (const s of shops) {
      const today = todayIn(s.timezone, now);
      const lo = new Date(localToUtc(s.timezone, today)).toISOString();
      const hi = new Date(localToUtc(s.timezone, addDays(today, 1))).toISOString();
      const list = store.sqlite
        .prepare('select direction from crossings where shop_id = ? and occurred_at >= ? and occurred_at < ? order by occurred_at, direction, seq')
        .all(s.id, lo, hi) as { direction: string }[];
      let n = 0;
      for (const r of list) n = r.direction === 'in' ? n + 1 : Math.max(0, n - 1);
      const g = got.get(s.id)!;
      if (g.occupancy !== n || g.entriesToday !== list.filter((r) => r.direction === 'in').length) throw new Error(`occupancy of ${s.id}: ${JSON.stringify(g)}, walk ${n}`);
    }

    let later = 0;
    const evening = shops.map((s) => localToUtc(s.timezone, todayIn(s.timezone, now), 22));
    const bare = store.sqlite.prepare('select count(*) as n from crossings where shop_id = ? and occurred_at >= ? and occurred_at < ?');
    const windows = shops.map((s) => {
      const today = todayIn(s.timezone, now);
      return [s.id, new Date(localToUtc(s.timezone, today)).toISOString(), new Date(localToUtc(s.timezone, addDays(today, 1))).toISOString()] as const;
    });
    const tz = ZONES[0]!;
    const to = todayIn(tz, now);
    const days14 = bucketsOf(tz, addDays(to, -13), to, 'day');
    const hours31 = bucketsOf(tz, addDays(to, -30), to, 'hour');
    const loadBefore = loadAverage();
    const results: [string, number[]][] = [
      [`listShops (GET /api/sites before), ${SHOPS} shops`, await measure(async () => await listShops(db, companyId))],
      [`bare reference: count(*) of each shop's crossings today on the index, ${SHOPS} shops`, await measure(() => windows.forEach((w) => bare.get(...w)))],
      [`shopsToday, first poll (every shop's day walked from midnight), ${SHOPS} shops`, await measure(async () => (forgetDays(db), await shopsToday(db, shops, now)))],
      [`shopsToday, next poll, nothing new (line check + a count per shop), ${SHOPS} shops`, await measure(async () => await shopsToday(db, shops, now))],
      [
        `shopsToday, next poll after one new crossing in every shop (walk continued), ${SHOPS} shops`,
        await measure(async () => {
          await store.tx(async () => {
            later++;
            // 22:00 local and on: after the day's other crossings (09:00 to 21:00), before midnight.
            shops.forEach((s, k) => insert.run(companyId, s.id, randomUUID(), 'in', new Date(evening[k]! + later).toISOString(), at));
          });
          await shopsToday(db, shops, now);
        }),
      ],
      [`doorCounts, company, 14 days by day`, await measure(async () => await doorCounts(db, companyId, { siteId: null, region: null }, days14))],
      [`doorCounts, one shop, 31 days by hour`, await measure(async () => await doorCounts(db, companyId, { siteId: shops[0]!.id, region: null }, hours31))],
    ];
    const loadAfter = loadAverage();
    store.close();
    return [
      '## Occupancy and door counts (head office)',
      '',
      `${SHOPS} shops (${ZONES.join(', ')}), each with a counting line and ${count(CROSSINGS_PER_DAY)} crossings a day for ${DAYS} days ` +
        `(${count(rows)} rows). Milliseconds, median and p95 of ${RUNS} runs after a warm-up; occupancy checked against a walk in JavaScript. ` +
        'The footfall report adds doorCounts to its visit queries (for a company without crossings it finds nothing and reads no visits). ' +
        `Load average (1 / 5 / 15 min) at the start of the timings: ${loadBefore}; at the end: ${loadAfter}.`,
      '',
      table(
        ['work', 'median ms', 'p95 ms'],
        results.map(([name, samples]) => [name, ...stats(samples)]),
      ),
    ].join('\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
