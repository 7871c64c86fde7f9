/**
 * Reports benchmark (`npm run bench -- reports`): GET /api/reports/footfall and /conversion on a chain with a year
 * of visits (2M visits, 20 shops in two time zones, 200k customers, purchases in two currencies), plus a smaller
 * second company alongside. Head office is started as in production (startServer: the checked-in migrations, the
 * server's own connection and pragmas) on a temporary data dir; the company and its shops are made through the API,
 * customers, visits and purchases are written straight into its database with prepared statements in big
 * transactions, in the columns ingest and POST /api/purchases fill.
 *
 * Timed: the route's work without HTTP (query parsing, resolveReportQuery, footfallReport / conversionReport, the
 * presenter), after a warm-up, median and max of several runs; then a few end-to-end GET requests. Checked: one
 * shop's week by day (the week London's clocks go back), the whole company's week and a month's conversion against
 * a brute-force count in JavaScript over the raw rows; the benchmark throws if anything differs.
 *
 * Watched: the main thread's event-loop delay (perf_hooks.monitorEventLoopDelay) and the time of GET /healthz sent
 * meanwhile, while the company's year reports run through HTTP (computed in the report thread, as served) and, for
 * comparison, while the same reports are computed inline on the main thread (direct calls, as before the thread).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../server/config.js';
import { fromMinor } from '../server/purchases/service.js';
import { presentConversion, presentFootfall, ratio } from '../server/reports/presenter.js';
import { ReportQueryInput, resolveReportQuery } from '../server/reports/query.js';
import { conversionReport, footfallReport } from '../server/reports/service.js';
import { startServer, type RunningServer } from '../server/start.js';
import { BENCH_ADMIN, benchServerSettings, loadAverage, ms, percentile, progress, table } from './util.js';
import { sqliteOf } from '../server/db/open.js';

const VISITS = Number(process.env.BENCH_VISITS ?? 2_000_000);
const CUSTOMERS = Math.round(VISITS / 10);
/** The second company: a tenth of the first. */
const OTHER_VISITS = Math.round(VISITS / 10);
const YEAR = 2025;
const SEED = 20_251;
/** Rows per write transaction while generating. */
const TX_ROWS = 500_000;
/** Share of visits without a customer: below the gate (no embedding), and above it (do-not-enrol, recognition off). */
const ANON_BELOW_GATE = 0.12;
const ANON_ABOVE_GATE = 0.08;
/** Share of identified visits whose face was below the gate anyway (recognised on a poor face). */
const KNOWN_BELOW_GATE = 0.015;
/** Share of returning visits by a customer of another shop of the chain. */
const CROSS_SHOP = 0.06;
/** Share of identified visits followed by a purchase recorded for that customer and shop. */
const PURCHASE = 0.12;
/** A customer picked by how often they came stops being picked that way at this many visits (about three a week). */
const MAX_VISITS = 150;
const MODEL = 'bench-model';

// ---------------------------------------------------------------------------------------------------------------
// Deterministic randomness and local time (independent of server/reports/calendar.ts, which is what is checked).

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function partsAt(tz: string, t: number): Record<string, number> {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(tz, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(new Date(t))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return p;
}
const pad = (n: number) => String(n).padStart(2, '0');
/** The local date (YYYY-MM-DD) of an instant in a zone. */
function localDate(tz: string, t: number): string {
  const p = partsAt(tz, t);
  return `${p.year}-${pad(p.month!)}-${pad(p.day!)}`;
}
/** The zone's offset from UTC in ms around local noon of a date given as epoch ms of its UTC midnight. */
function noonOffset(tz: string, dayMs: number): number {
  const guess = dayMs + 12 * 3_600_000;
  const at = (t: number) => {
    const p = partsAt(tz, t);
    return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour! % 24, p.minute!, p.second!) - Math.floor(t / 1000) * 1000;
  };
  return at(guess - at(guess));
}

// ---------------------------------------------------------------------------------------------------------------
// The chain: shops, opening hours, the shape of a day, a week and a year.

interface Schedule {
  /** Opening and closing hour, local, Monday first. */
  hours: [number, number][];
  /** Relative traffic by weekday, Monday first. */
  weekday: number[];
  /** Currency of the shop's sales and a basket's range in major units. */
  currency: string;
  basket: [number, number];
}

const INDIA: Schedule = {
  hours: [[10, 22], [10, 22], [10, 22], [10, 22], [10, 22], [10, 22], [10, 22]],
  weekday: [0.85, 0.8, 0.85, 0.9, 1.05, 1.4, 1.3],
  currency: 'INR',
  basket: [150, 4500],
};
const UK: Schedule = {
  hours: [[9, 20], [9, 20], [9, 20], [9, 20], [9, 20], [9, 20], [11, 17]],
  weekday: [0.9, 0.85, 0.9, 0.95, 1.1, 1.45, 0.8],
  currency: 'GBP',
  basket: [4, 120],
};

interface ShopPlan {
  name: string;
  tz: string;
  schedule: Schedule;
  /** Relative size. */
  weight: number;
  /** First local trading day (YYYY-MM-DD). */
  opened: string;
}

function chainPlan(): ShopPlan[] {
  const india = ['Andheri', 'Bandra', 'Powai', 'Colaba', 'Juhu', 'Thane', 'Vashi', 'Borivali', 'Malad', 'Dadar', 'Kurla', 'Chembur', 'Ghatkopar', 'Worli', 'Goregaon', 'Mulund'];
  const uk = ['Southall', 'Wembley', 'Leicester', 'Birmingham'];
  const shops: ShopPlan[] = [];
  // Sizes fall off like 1/sqrt(rank): the flagship has about four times the smallest shop's traffic.
  india.forEach((name, i) => shops.push({ name, tz: 'Asia/Kolkata', schedule: INDIA, weight: 1 / Math.sqrt(i + 1), opened: i >= 14 ? `${YEAR}-06-02` : `${YEAR}-01-01` }));
  uk.forEach((name, i) => shops.push({ name, tz: 'Europe/London', schedule: UK, weight: 0.6 / Math.sqrt(i + 1), opened: `${YEAR}-01-01` }));
  return shops;
}

function otherPlan(): ShopPlan[] {
  return ['Koramangala', 'Indiranagar', 'Whitefield'].map((name, i) => ({ name, tz: 'Asia/Kolkata', schedule: INDIA, weight: 1 / (i + 1), opened: `${YEAR}-01-01` }));
}

/** Relative traffic of a day of the year (0-based): slow growth, Diwali (20 October) for India, Christmas. */
function season(doy: number, tz: string): number {
  const growth = 0.9 + (0.2 * doy) / 365;
  const diwali = tz === 'Asia/Kolkata' ? 0.5 * Math.exp(-(((doy - 292) / 4) ** 2)) : 0;
  const christmas = 0.3 * Math.exp(-(((doy - 355) / 10) ** 2));
  return growth + diwali + christmas;
}

/** Relative traffic by local minute of the day: a lunch peak and a bigger evening peak. */
function minuteWeight(minute: number): number {
  const h = minute / 60;
  return 0.4 + Math.exp(-(((h - 13) / 1.5) ** 2)) + 1.3 * Math.exp(-(((h - 18.5) / 1.8) ** 2));
}

/** Cumulative minute weights of an opening [open, close) (local hours), for sampling a time of day. */
function minuteCdf(open: number, close: number): Float64Array {
  const cdf = new Float64Array((close - open) * 60);
  let s = 0;
  for (let i = 0; i < cdf.length; i++) cdf[i] = s += minuteWeight(open * 60 + i);
  for (let i = 0; i < cdf.length; i++) cdf[i]! /= s;
  return cdf;
}

function sample(cdf: Float64Array, r: number): number {
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < r) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// ---------------------------------------------------------------------------------------------------------------
// Generation: the visits of a company in time order, each given a customer as it happens.

interface Generated {
  /** Per visit, in time order. */
  at: Float64Array;
  shop: Uint8Array;
  /** Customer index, -1 for none. */
  customer: Int32Array;
  passedGate: Uint8Array;
  n: number;
  customers: number;
  /** Per customer. */
  first: Float64Array;
  last: Float64Array;
  count: Uint32Array;
}

function generate(plan: ShopPlan[], visits: number, customers: number, rand: () => number): Generated {
  const jan1 = Date.UTC(YEAR, 0, 1);
  const days = (Date.UTC(YEAR + 1, 0, 1) - jan1) / 86_400_000;
  const cdfs = new Map<string, Float64Array>();
  const cdfOf = (h: [number, number]) => {
    const k = `${h[0]}-${h[1]}`;
    let c = cdfs.get(k);
    if (!c) cdfs.set(k, (c = minuteCdf(h[0], h[1])));
    return c;
  };
  // Expected visits per shop and day, scaled so that the year has `visits`.
  const mean: number[][] = plan.map((s) => {
    const out: number[] = [];
    for (let d = 0; d < days; d++) {
      const dayMs = jan1 + d * 86_400_000;
      const weekday = (new Date(dayMs).getUTCDay() + 6) % 7;
      const open = new Date(dayMs).toISOString().slice(0, 10) >= s.opened;
      out.push(open ? s.weight * s.schedule.weekday[weekday]! * season(d, s.tz) : 0);
    }
    return out;
  });
  const scale = visits / mean.flat().reduce((a, b) => a + b, 0);
  const pNew = customers / (visits * (1 - ANON_BELOW_GATE - ANON_ABOVE_GATE));

  const cap = Math.ceil(visits * 1.05) + 1000;
  const g: Generated = {
    at: new Float64Array(cap),
    shop: new Uint8Array(cap),
    customer: new Int32Array(cap),
    passedGate: new Uint8Array(cap),
    n: 0,
    customers: 0,
    first: new Float64Array(customers * 2),
    last: new Float64Array(customers * 2),
    count: new Uint32Array(customers * 2),
  };
  const shopVisits: number[][] = plan.map(() => []); // customer of each identified visit of the shop
  const shopCustomers: number[][] = plan.map(() => []); // distinct customers of the shop
  const shopSeen: Set<number>[] = plan.map(() => new Set());
  const day: { at: number; shop: number }[] = [];
  for (let d = 0; d < days; d++) {
    const dayMs = jan1 + d * 86_400_000;
    const weekday = (new Date(dayMs).getUTCDay() + 6) % 7;
    day.length = 0;
    plan.forEach((s, i) => {
      const m = mean[i]![d]! * scale * (0.9 + 0.2 * rand());
      const k = Math.floor(m + rand());
      if (k === 0) return;
      const [open, close] = s.schedule.hours[weekday]!;
      const cdf = cdfOf([open, close]);
      const start = dayMs + open * 3_600_000 - noonOffset(s.tz, dayMs);
      for (let j = 0; j < k; j++) day.push({ at: start + sample(cdf, rand()) * 60_000 + Math.floor(rand() * 60_000), shop: i });
    });
    day.sort((a, b) => a.at - b.at);
    for (const v of day) {
      if (g.n === cap) throw new Error('visit capacity exceeded');
      const i = g.n++;
      g.at[i] = v.at;
      g.shop[i] = v.shop;
      const r = rand();
      if (r < ANON_BELOW_GATE + ANON_ABOVE_GATE) {
        g.customer[i] = -1;
        g.passedGate[i] = r < ANON_BELOW_GATE ? 0 : 1;
        continue;
      }
      g.passedGate[i] = rand() < KNOWN_BELOW_GATE ? 0 : 1;
      let c: number;
      const mine = shopVisits[v.shop]!;
      if (mine.length === 0 || rand() < pNew || g.customers === 0) {
        if (g.customers === g.first.length) throw new Error('customer capacity exceeded');
        c = g.customers++;
        g.first[c] = v.at;
      } else if (rand() < CROSS_SHOP) {
        c = Math.floor(rand() * g.customers);
      } else {
        c = mine[Math.floor(rand() * mine.length)]!; // by visits so far: regulars come back more...
        if (rand() < 0.5 || g.count[c]! >= MAX_VISITS) {
          const list = shopCustomers[v.shop]!; // ...or any of the shop's customers
          c = list[Math.floor(rand() * list.length)]!;
        }
      }
      g.customer[i] = c;
      g.last[c] = v.at;
      g.count[c]!++;
      mine.push(c);
      if (!shopSeen[v.shop]!.has(c)) {
        shopSeen[v.shop]!.add(c);
        shopCustomers[v.shop]!.push(c);
      }
    }
  }
  return g;
}

// ---------------------------------------------------------------------------------------------------------------
// Writing it as head office would hold it.

interface Written {
  shopIds: string[];
  customers: number;
  visits: number;
  purchases: Map<string, number>;
  customerVisits: Uint32Array;
}

function write(server: RunningServer, companyId: string, plan: ShopPlan[], shopIds: string[], g: Generated, rand: () => number): Written {
  const sqlite = sqliteOf(server.store);
  // Bulk fills of prepared statements, synchronous: better-sqlite3's own transaction.
  const tx = <T>(fn: () => T): T => sqlite.transaction(fn).immediate();
  const template = Buffer.alloc(512 * 4);
  for (let d = 0; d < 512; d++) template.writeFloatLE((rand() - 0.5) / 11.3, d * 4);
  const iso = (t: number) => new Date(t).toISOString();
  const ids: string[] = [];
  for (let c = 0; c < g.customers; c++) ids.push(randomUUID());

  const insertCustomer = sqlite.prepare(
    'insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  for (let c0 = 0; c0 < g.customers; c0 += TX_ROWS) {
    tx(() => {
      for (let c = c0; c < Math.min(g.customers, c0 + TX_ROWS); c++) {
        const first = iso(g.first[c]!);
        insertCustomer.run(ids[c], companyId, c + 1, MODEL, template, Math.min(g.count[c]!, 16), g.count[c], first, iso(g.last[c]!), first);
      }
    });
  }

  // The same statement as ingest (server/visits/stays.ts), rows in time order.
  const insertVisit = sqlite.prepare(
    'insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, received_at, customer_id, is_new_visitor, similarity, quality, passed_gate, recognition_model, gender, age, emotion, face_image_id, track_id, dwell_ms, last_seen_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const insertPurchase = sqlite.prepare(
    "insert into purchases (id, company_id, customer_id, shop_id, amount_minor, currency, items, source, notes, created_at, created_by, created_by_email) values (?, ?, ?, ?, ?, ?, ?, 'pos', '', ?, null, null)",
  );
  const genders = ['female', 'male'];
  const emotions = ['neutral', 'happy', 'neutral', 'surprise'];
  const seen = new Uint8Array(g.customers);
  const purchases = new Map<string, number>();
  const pending: { at: number; shop: number; customer: number }[] = [];
  for (let v0 = 0; v0 < g.n; v0 += TX_ROWS) {
    tx(() => {
      for (let i = v0; i < Math.min(g.n, v0 + TX_ROWS); i++) {
        const c = g.customer[i]!;
        const known = c >= 0;
        const fresh = known && !seen[c];
        if (known) seen[c] = 1;
        const gate = g.passedGate[i]!;
        const at = g.at[i]!;
        // A stay of 0 to 30 minutes (reports' dwell time); a gender on one visit in five (sent only when sure).
        const dwell = Math.floor(rand() * rand() * 1_800_000);
        insertVisit.run(
          randomUUID(),
          companyId,
          shopIds[g.shop[i]!],
          rand() < 0.7 ? 'entrance' : 'door-2',
          iso(at),
          iso(at + 400 + Math.floor(rand() * 3000)),
          known ? ids[c] : null,
          fresh ? 1 : 0,
          known && !fresh ? 0.5 + 0.4 * rand() : null,
          gate ? 0.5 + 0.45 * rand() : 0.1 + 0.3 * rand(),
          gate,
          known ? MODEL : null,
          rand() < 0.2 ? genders[Math.floor(rand() * 2)] : null,
          rand() < 0.9 ? Math.round((8 + rand() * 70) * 10) / 10 : null,
          emotions[Math.floor(rand() * emotions.length)],
          null,
          `t-${i}`,
          dwell,
          iso(at + dwell),
        );
        if (known && rand() < PURCHASE) pending.push({ at: at + 120_000 + Math.floor(rand() * 1_200_000), shop: g.shop[i]!, customer: c });
      }
    });
  }
  // Purchases are recorded a few minutes after the visit (created_at order).
  pending.sort((a, b) => a.at - b.at);
  for (let p0 = 0; p0 < pending.length; p0 += TX_ROWS) {
    tx(() => {
      for (const p of pending.slice(p0, p0 + TX_ROWS)) {
        const s = plan[p.shop]!.schedule;
        const major = s.basket[0] + (s.basket[1] - s.basket[0]) * rand() ** 2;
        insertPurchase.run(randomUUID(), companyId, ids[p.customer], shopIds[p.shop], Math.round(major * 100), s.currency, '["basket"]', iso(p.at));
        purchases.set(s.currency, (purchases.get(s.currency) ?? 0) + 1);
      }
    });
  }
  return { shopIds, customers: g.customers, visits: g.n, purchases, customerVisits: g.count.subarray(0, g.customers) };
}

// ---------------------------------------------------------------------------------------------------------------
// Head office and the API calls that make the companies and shops.

async function api(url: string, method: string, p: string, body?: unknown, token?: string): Promise<Record<string, string>> {
  const res = await fetch(url + p, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, string>;
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** GET with a bearer token over the given agent; the JSON body, or throws unless 200. */
function getJson(agent: http.Agent, url: string, token: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: token ? { Authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(JSON.parse(text));
        else reject(new Error(`GET ${url}: ${res.statusCode} ${text}`));
      });
    });
    req.on('error', reject);
  });
}

async function company(url: string, admin: string, name: string, email: string, plan: ShopPlan[]) {
  const c = await api(url, 'POST', '/api/admin/clients', { company_name: name, owner_email: email, owner_name: 'Owner' }, admin);
  const token = (await api(url, 'POST', '/api/auth/login', { email, password: c.password })).access_token!;
  const shops: { id: string; slug: string; name: string }[] = [];
  for (const s of plan) {
    const shop = await api(url, 'POST', '/api/sites', { name: s.name, timezone: s.tz }, token);
    shops.push({ id: shop.site_id!, slug: shop.slug!, name: shop.name! });
  }
  return { id: c.client_id!, token, shops };
}

// ---------------------------------------------------------------------------------------------------------------
// Timing and the brute-force check.

interface Timing {
  median: number;
  max: number;
  reps: number;
}

async function measure(f: () => unknown): Promise<Timing> {
  const t0 = performance.now();
  await f(); // warm-up: statements prepared, pages in the cache, code compiled
  const first = performance.now() - t0;
  if (first < 200) await f();
  const reps = first < 50 ? 20 : first < 500 ? 9 : first < 1500 ? 5 : 3;
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    await f();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)]!, max: samples[samples.length - 1]!, reps };
}

async function measureAsync(f: () => Promise<unknown>, reps: number): Promise<Timing> {
  await f();
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    await f();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)]!, max: samples[samples.length - 1]!, reps };
}

interface LoopWatch {
  wallMs: number;
  maxMs: number;
  p99Ms: number;
  meanMs: number;
  pings: number;
  pingMedian: number;
  pingMax: number;
}

/** Pause between two pings: a steady trickle of other requests, not a load of its own. */
const PING_EVERY_MS = 10;

/** Runs `work` while watching the main thread's event-loop delay and sending `ping` meanwhile, 10 ms after each answer. */
async function watchLoop(work: () => Promise<void>, ping: () => Promise<unknown>): Promise<LoopWatch> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  const pings: number[] = [];
  let done = false;
  h.enable();
  const pinger = (async () => {
    while (!done) {
      const t = performance.now();
      await ping();
      pings.push(performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, PING_EVERY_MS));
    }
  })();
  const t0 = performance.now();
  try {
    await work();
  } finally {
    done = true;
  }
  const wallMs = performance.now() - t0;
  h.disable();
  await pinger;
  return { wallMs, maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6, meanMs: h.mean / 1e6, pings: pings.length, pingMedian: percentile(pings, 0.5), pingMax: pings.reduce((a, b) => Math.max(a, b), 0) };
}

interface VisitRow {
  shop_id: string;
  occurred_at: string;
  customer_id: string | null;
  passed_gate: number;
}

/**
 * The footfall answer for local days from..to (inclusive) in tz, counted one visit at a time: each visit's local
 * date read with Intl, customers in sets, "new" from customers.first_seen_at's local date.
 */
function bruteFootfall(rows: VisitRow[], first: Map<string, string>, shopNames: Map<string, string>, tz: string, from: string, to: string) {
  const days: string[] = [];
  for (let d = Date.parse(`${from}T00:00:00Z`); d <= Date.parse(`${to}T00:00:00Z`); d += 86_400_000) days.push(new Date(d).toISOString().slice(0, 10));
  const per = new Map(days.map((d) => [d, { customers: new Set<string>(), anon: 0 }]));
  const all = new Set<string>();
  let anon = 0;
  let visits = 0;
  let below = 0;
  const sites = new Map<string, { visits: number; below: number }>();
  for (const r of rows) {
    const b = per.get(localDate(tz, Date.parse(r.occurred_at)));
    if (!b) continue;
    visits++;
    const s = sites.get(r.shop_id) ?? { visits: 0, below: 0 };
    sites.set(r.shop_id, s);
    s.visits++;
    if (!r.passed_gate) {
      below++;
      s.below++;
    }
    if (r.customer_id === null) {
      b.anon++;
      anon++;
    } else {
      b.customers.add(r.customer_id);
      all.add(r.customer_id);
    }
  }
  let worst = '';
  let worstShare = -1;
  let worstBelow = -1;
  for (const [id, s] of sites) {
    const share = s.below / s.visits;
    if (share > worstShare || (share === worstShare && s.below > worstBelow)) [worst, worstShare, worstBelow] = [shopNames.get(id)!, share, s.below];
  }
  const points = days.map((d) => {
    const b = per.get(d)!;
    const fresh = [...b.customers].filter((c) => localDate(tz, Date.parse(first.get(c)!)) === d).length;
    return { bucket: d, visitors: b.customers.size + b.anon, new: fresh, returning: b.customers.size - fresh };
  });
  return { points, total: all.size + anon, visits, fraction_below_gate: ratio(visits === 0 ? 0 : below / visits), worst_site: worst };
}

/** A paragraph wrapped at 120 characters. */
function wrap(text: string, width = 120): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}

/** The parts of `got` that `want` has (objects key by key, arrays item by item): the brute force counts fewer figures. */
function only(got: unknown, want: unknown): unknown {
  if (Array.isArray(want) && Array.isArray(got)) return got.map((g, i) => only(g, want[i]));
  if (want && typeof want === 'object' && got && typeof got === 'object') return Object.fromEntries(Object.keys(want).map((k) => [k, only((got as Record<string, unknown>)[k], (want as Record<string, unknown>)[k])]));
  return got;
}

function compare(what: string, got: unknown, want: unknown): void {
  got = only(got, want);
  if (!isDeepStrictEqual(got, want)) throw new Error(`reports benchmark: ${what} differs from the brute-force count:\nreport: ${JSON.stringify(got)}\nbrute force: ${JSON.stringify(want)}`);
}

// ---------------------------------------------------------------------------------------------------------------

export async function run(): Promise<string> {
  const started = performance.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-reports-'));
  const silent = pino({ level: 'silent' });
  let server: RunningServer | undefined;
  try {
    const config = loadConfig(benchServerSettings(tmp));
    server = await startServer(config, { log: silent, announce: () => {} });
    const url = server.url;
    const admin = (await api(url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const plan = chainPlan();
    const other = otherPlan();
    const chain = await company(url, admin, 'Bench Chain', 'owner@chain.test', plan);
    const neighbour = await company(url, admin, 'Other Chain', 'owner@other.test', other);

    // 1. Generate and write.
    progress(`generating ${VISITS.toLocaleString('en')} visits (+ ${OTHER_VISITS.toLocaleString('en')} for a second company)`);
    const sqlite = sqliteOf(server.store);
    // While writing only: a 4 GiB page cache (random index inserts) and no fsync; the server's settings again below.
    const cacheSize = sqlite.pragma('cache_size', { simple: true }) as number;
    const synchronous = sqlite.pragma('synchronous', { simple: true }) as number;
    sqlite.pragma('cache_size = -4194304');
    sqlite.pragma('synchronous = OFF');
    const rand = mulberry32(SEED);
    const t0 = performance.now();
    const g = generate(plan, VISITS, CUSTOMERS, rand);
    const g2 = generate(other, OTHER_VISITS, Math.round(CUSTOMERS / 10), rand);
    const tGen = performance.now() - t0;
    progress(`generated in ${(tGen / 1000).toFixed(1)} s; writing`);
    const t1 = performance.now();
    const w = write(server, chain.id, plan, chain.shops.map((s) => s.id), g, rand);
    const w2 = write(server, neighbour.id, other, neighbour.shops.map((s) => s.id), g2, rand);
    const tWrite = performance.now() - t1;
    const t2 = performance.now();
    sqlite.pragma('wal_checkpoint(TRUNCATE)');
    const tCheckpoint = performance.now() - t2;
    sqlite.pragma(`cache_size = ${cacheSize}`);
    sqlite.pragma(`synchronous = ${synchronous}`);
    const dbBytes = fs.statSync(path.join(tmp, 'footfall.db')).size;
    progress(`written in ${(tWrite / 1000).toFixed(1)} s, checkpoint ${(tCheckpoint / 1000).toFixed(1)} s, ${(dbBytes / 2 ** 20).toFixed(0)} MiB`);

    // The data's shape, for the text.
    const perShop = new Array<number>(plan.length).fill(0);
    let anon = 0;
    let below = 0;
    for (let i = 0; i < g.n; i++) {
      perShop[g.shop[i]!]!++;
      if (g.customer[i]! < 0) anon++;
      if (!g.passedGate[i]) below++;
    }
    const counts = [...w.customerVisits].sort((a, b) => a - b);
    const once = counts.filter((n) => n === 1).length;

    // 2. Correctness on samples, against the raw rows.
    const db = server.store.db;
    const flagship = chain.shops[0]!;
    const london = chain.shops[plan.findIndex((s) => s.tz === 'Europe/London')]!;
    const footfall = async (q: Record<string, string>) => presentFootfall(await footfallReport(db, chain.id, await resolveReportQuery(db, chain.id, ReportQueryInput.parse(q))));
    const conversion = async (q: Record<string, string>) => presentConversion(await conversionReport(db, chain.id, await resolveReportQuery(db, chain.id, ReportQueryInput.parse(q))));
    const first = new Map(
      (sqlite.prepare('select id, first_seen_at from customers where company_id = ?').all(chain.id) as { id: string; first_seen_at: string }[]).map((r) => [r.id, r.first_seen_at]),
    );
    const names = new Map(chain.shops.map((s) => [s.id, s.name]));
    // The week London's clocks go back (Sunday 26 October 2025 has 25 hours).
    const week = { from: `${YEAR}-10-20`, to: `${YEAR}-10-26` };
    const shopRows = sqlite.prepare('select shop_id, occurred_at, customer_id, passed_gate from visits where shop_id = ?').all(london.id) as VisitRow[];
    const shopWeek = await footfall({ ...week, site: london.slug, bucket: 'day' });
    compare(`${london.name}, ${week.from} to ${week.to} by day`, shopWeek, {
      from: week.from,
      to: week.to,
      bucket: 'day',
      timezone: 'Europe/London',
      ...bruteFootfall(shopRows, first, names, 'Europe/London', week.from, week.to),
    });
    // Dwell time and bands the same week (docs/reports.md, "Dwell time", "Age and gender bands"), from the raw rows.
    const stays = (sqlite.prepare('select occurred_at, dwell_ms, gender, age from visits where shop_id = ? and staff = 0').all(london.id) as { occurred_at: string; dwell_ms: number; gender: string | null; age: number | null }[]).filter((r) => {
      const d = localDate('Europe/London', Date.parse(r.occurred_at));
      return d >= week.from && d <= week.to;
    });
    const sorted = stays.map((r) => r.dwell_ms).sort((a, b) => a - b);
    const mid = sorted.length === 0 ? 0 : (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.floor(sorted.length / 2)]!) / 2;
    const secs = (msv: number) => Math.round(msv / 100) / 10;
    const bounds: [string, number][] = [['under_18', 18], ['18_24', 25], ['25_34', 35], ['35_44', 45], ['45_54', 55], ['55_64', 65], ['65_plus', Infinity]];
    const age = Object.fromEntries([...bounds.map(([k]) => [k, 0]), ['unknown', 0]]) as Record<string, number>;
    const gender: Record<string, number> = { female: 0, male: 0, unknown: 0 };
    for (const r of stays) {
      age[r.age === null ? 'unknown' : bounds.find(([, hi]) => r.age! < hi)![0]]!++;
      gender[r.gender === 'female' || r.gender === 'male' ? r.gender : 'unknown']!++;
    }
    compare(`${london.name}, ${week.from} to ${week.to}: dwell and bands`, shopWeek, {
      visits: stays.length,
      average_dwell_s: secs(sorted.reduce((n, x) => n + x, 0) / Math.max(1, sorted.length)),
      median_dwell_s: secs(mid),
      age,
      gender,
    });
    // The whole company the same week (Diwali), in its first shop's zone.
    const companyRows = sqlite
      .prepare('select shop_id, occurred_at, customer_id, passed_gate from visits where company_id = ? and occurred_at >= ? and occurred_at < ?')
      .all(chain.id, `${YEAR}-10-18`, `${YEAR}-10-28`) as VisitRow[];
    const companyWeek = await footfall({ ...week, bucket: 'day' });
    compare(`the company, ${week.from} to ${week.to} by day`, companyWeek, {
      from: week.from,
      to: week.to,
      bucket: 'day',
      timezone: 'Asia/Kolkata',
      ...bruteFootfall(companyRows, first, names, 'Asia/Kolkata', week.from, week.to),
    });
    // A month's conversion for the company.
    const month = { from: `${YEAR}-11-01`, to: `${YEAR}-11-30` };
    const monthRows = sqlite
      .prepare('select shop_id, occurred_at, customer_id, passed_gate from visits where company_id = ? and occurred_at >= ? and occurred_at < ?')
      .all(chain.id, `${YEAR}-10-30`, `${YEAR}-12-02`) as VisitRow[];
    const sales = (sqlite.prepare('select customer_id, amount_minor, currency, created_at from purchases where company_id = ?').all(chain.id) as { customer_id: string; amount_minor: number; currency: string; created_at: string }[]).filter(
      (p) => {
        const d = localDate('Asia/Kolkata', Date.parse(p.created_at));
        return d >= month.from && d <= month.to;
      },
    );
    const byCurrency = new Map<string, { n: number; minor: number }>();
    for (const p of sales) {
      const c = byCurrency.get(p.currency) ?? { n: 0, minor: 0 };
      byCurrency.set(p.currency, c);
      c.n++;
      c.minor += p.amount_minor;
    }
    const [cur, main] = [...byCurrency].sort((a, b) => b[1].n - a[1].n)[0]!;
    const visitors = bruteFootfall(monthRows, first, names, 'Asia/Kolkata', month.from, month.to).total;
    const purchasers = new Set(sales.map((p) => p.customer_id)).size;
    compare(`conversion, ${month.from} to ${month.to}`, await conversion({ ...month }), {
      visitors,
      purchasers,
      conversion: ratio(purchasers / visitors),
      revenue: fromMinor(main.minor, cur),
      average_basket: fromMinor(Math.round(main.minor / main.n), cur),
      currency: cur,
    });
    progress('reports match the brute-force counts');

    // 3. Timings.
    const loadBefore = loadAverage();
    const windows = [
      { what: '7 days by day', from: `${YEAR}-12-08`, to: `${YEAR}-12-14`, bucket: 'day' },
      { what: '31 days by hour', from: `${YEAR}-10-01`, to: `${YEAR}-10-31`, bucket: 'hour' },
      { what: '12 weeks by week', from: `${YEAR}-09-01`, to: `${YEAR}-11-23`, bucket: 'week' },
      { what: '365 days by day', from: `${YEAR}-01-01`, to: `${YEAR}-12-31`, bucket: 'day' },
      { what: '365 days by month', from: `${YEAR}-01-01`, to: `${YEAR}-12-31`, bucket: 'month' },
    ];
    const rows: (string | number)[][] = [];
    for (const scope of [{ label: 'company', site: undefined }, { label: `one shop (${flagship.name})`, site: flagship.slug }]) {
      for (const win of windows) {
        progress(`footfall, ${scope.label}, ${win.what}`);
        const q = { from: win.from, to: win.to, bucket: win.bucket, ...(scope.site ? { site: scope.site } : {}) };
        const r = await footfall(q);
        const t = await measure(async () => await footfall(q));
        progress(`  ${r.visits} visits: median ${ms(t.median)} ms, max ${ms(t.max)} ms`);
        rows.push([`footfall, ${scope.label}, ${win.what}`, r.points.length, r.visits.toLocaleString('en'), r.total.toLocaleString('en'), ms(t.median), ms(t.max), t.reps]);
      }
    }
    for (const scope of [{ label: 'company', site: undefined }, { label: `one shop (${flagship.name})`, site: flagship.slug }]) {
      for (const win of [
        { what: '30 days', from: `${YEAR}-11-01`, to: `${YEAR}-11-30` },
        { what: '365 days', from: `${YEAR}-01-01`, to: `${YEAR}-12-31` },
      ]) {
        progress(`conversion, ${scope.label}, ${win.what}`);
        const q = { from: win.from, to: win.to, ...(scope.site ? { site: scope.site } : {}) };
        const r = await conversion(q);
        const visits = (await footfall({ ...q, bucket: 'month' })).visits;
        const t = await measure(async () => await conversion(q));
        progress(`  ${visits} visits: median ${ms(t.median)} ms, max ${ms(t.max)} ms`);
        rows.push([`conversion, ${scope.label}, ${win.what}`, '-', visits.toLocaleString('en'), `${r.visitors.toLocaleString('en')} (${r.purchasers.toLocaleString('en')} purchasers)`, ms(t.median), ms(t.max), t.reps]);
      }
    }

    // 4. End to end: GET through the app (auth, validation, JSON), client and server in this process, on a new
    // keep-alive connection (the API calls' pooled one was closed by the server while the timings ran).
    progress('HTTP');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const httpRows: (string | number)[][] = [];
    for (const [what, p, direct, reps] of [
      ['company, 7 days by day', `/api/reports/footfall?from=${YEAR}-12-08&to=${YEAR}-12-14&bucket=day`, async () => await footfall({ from: `${YEAR}-12-08`, to: `${YEAR}-12-14`, bucket: 'day' }), 15],
      ['company, 31 days by hour', `/api/reports/footfall?from=${YEAR}-10-01&to=${YEAR}-10-31&bucket=hour`, async () => await footfall({ from: `${YEAR}-10-01`, to: `${YEAR}-10-31`, bucket: 'hour' }), 9],
      ['company, 365 days by month', `/api/reports/footfall?from=${YEAR}-01-01&to=${YEAR}-12-31&bucket=month`, async () => await footfall({ from: `${YEAR}-01-01`, to: `${YEAR}-12-31`, bucket: 'month' }), 3],
    ] as const) {
      const get = () => getJson(agent, url + p, chain.token);
      compare(`GET ${p}`, await get(), direct());
      const t = await measureAsync(get, reps);
      progress(`  GET ${what}: median ${ms(t.median)} ms, max ${ms(t.max)} ms`);
      httpRows.push([`GET /api/reports/footfall, ${what}`, ms(t.median), ms(t.max), t.reps]);
    }

    // 5. The main thread while the company's year reports run: event-loop delay, and GET /healthz (a database read on
    // the main connection) sent over a second connection meanwhile, 10 ms apart.
    progress('event loop while the year reports run');
    const year = { from: `${YEAR}-01-01`, to: `${YEAR}-12-31` };
    const yearReports = [
      [`/api/reports/footfall?from=${year.from}&to=${year.to}&bucket=day`, async () => await footfall({ ...year, bucket: 'day' })],
      [`/api/reports/footfall?from=${year.from}&to=${year.to}&bucket=month`, async () => await footfall({ ...year, bucket: 'month' })],
      [`/api/reports/conversion?from=${year.from}&to=${year.to}`, async () => await conversion({ ...year })],
    ] as const;
    const YEAR_RUNS = 3;
    const pingAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const ping = () => getJson(pingAgent, `${url}/healthz`, '');
    for (const [p, direct] of yearReports) compare(`GET ${p}`, await getJson(agent, url + p, chain.token), direct());
    const threaded = await watchLoop(async () => {
      for (let i = 0; i < YEAR_RUNS; i++) for (const [p] of yearReports) await getJson(agent, url + p, chain.token);
    }, ping);
    const inline = await watchLoop(async () => {
      for (let i = 0; i < YEAR_RUNS; i++) {
        for (const [, direct] of yearReports) {
          await direct();
          await new Promise((resolve) => setImmediate(resolve)); // between reports the loop turns, as between requests
        }
      }
    }, ping);
    pingAgent.destroy();
    agent.destroy();
    const loopRows = [
      ['in the report thread (GET, as served)', threaded],
      ['inline on the main thread (direct calls, as before)', inline],
    ].map(([what, w]) => {
      const x = w as LoopWatch;
      progress(`  ${what as string}: delay max ${ms(x.maxMs)} ms, p99 ${ms(x.p99Ms)} ms; healthz max ${ms(x.pingMax)} ms (${x.pings})`);
      return [what as string, YEAR_RUNS * yearReports.length, ms(x.wallMs / (YEAR_RUNS * yearReports.length)), ms(x.maxMs), ms(x.p99Ms), ms(x.meanMs), x.pings, ms(x.pingMedian), ms(x.pingMax)];
    });

    const total = (performance.now() - started) / 1000;
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
    const purchases = [...w.purchases].map(([c, n]) => `${n.toLocaleString('en')} ${c}`).join(', ');
    const n = (x: number) => x.toLocaleString('en');
    const zones = (tz: string) => plan.filter((s) => s.tz === tz).length;
    return [
      '## Reports',
      '',
      wrap(
        `Footfall and conversion reports (docs/reports.md) on one chain with a year (${YEAR}) of visits: ${n(g.n)} visits, ` +
          `${plan.length} shops (${zones('Asia/Kolkata')} in Asia/Kolkata, 10:00-22:00 every day, two of them opened in June; ` +
          `${zones('Europe/London')} in Europe/London, 9:00-20:00, Sundays 11:00-17:00), ${n(w.customers)} customers, ${purchases} purchases. ` +
          `Visits per shop from ${n(Math.min(...perShop))} to ${n(Math.max(...perShop))} (the "one shop" below is the largest, ${flagship.name}); ` +
          `within opening hours with a lunch and a larger evening peak; busier Fridays to Sundays, Diwali and Christmas peaks, slow growth over ` +
          `the year. ${((100 * anon) / g.n).toFixed(1)} % of visits have no customer (${(ANON_BELOW_GATE * 100).toFixed(0)} % below the gate, ` +
          `${(ANON_ABOVE_GATE * 100).toFixed(0)} % above it); ${((100 * below) / g.n).toFixed(1)} % are below the gate in all (recognised ones ` +
          `included). Customers come back to their shop (half picked by how often they came so far, up to ${MAX_VISITS} visits, half uniformly), ` +
          `${(CROSS_SHOP * 100).toFixed(0)} % of returning visits are to another shop: ${((100 * once) / counts.length).toFixed(0)} % of customers ` +
          `came once, the median customer ${counts[Math.floor(counts.length / 2)]} times, the most regular ${counts[counts.length - 1]} times. ` +
          `\`first_seen_at\` is each customer's earliest visit. Alongside, a second company of ${n(w2.visits)} visits (3 shops, ${n(w2.customers)} customers).`,
      ),
      '',
      wrap(
        `Head office started with \`startServer\` on a temporary data dir (the checked-in migrations, the server's connection and pragmas); ` +
          `companies and shops made through the API; customers (with a 2 KiB template each), visits (ingest's insert statement, random v4 ` +
          `visit ids, in time order) and purchases written with prepared statements, ${n(TX_ROWS)} rows per transaction, with a 4 GiB page ` +
          `cache and \`synchronous = OFF\` while writing (the server's settings again for the measurements). **Generation**: in memory ` +
          `${(tGen / 1000).toFixed(1)} s, writing ${(tWrite / 1000).toFixed(1)} s (${n(Math.round((w.visits + w2.visits) / (tWrite / 1000)))} ` +
          `visits/s, customers and purchases included), WAL checkpoint ${(tCheckpoint / 1000).toFixed(1)} s; database ${mb(dbBytes)}, in the OS page cache.`,
      ),
      '',
      wrap(
        `**Correct on samples**: the presented reports equal a brute-force count in JavaScript over the raw rows (local dates with Intl, ` +
          `customers in sets, "new" from \`first_seen_at\`) for ${london.name} (Europe/London) ${week.from} to ${week.to} by day (the week ` +
          `the clocks go back), the whole company the same week by day (Diwali), and the company's conversion for ${month.from} to ` +
          `${month.to}: all matched.`,
      ),
      '',
      wrap(
        'Time of the route without HTTP: `ReportQueryInput.parse`, `resolveReportQuery`, `footfallReport` or `conversionReport` and the ' +
          "presenter, called directly on the server's database, one at a time; after one or two warm-up runs, median and max of the runs. " +
          `Company reports are in Asia/Kolkata (its first shop's zone), the shop's in its own. "Visits" is the window's visits in scope, ` +
          `"people" the report's \`total\` (distinct customers plus unidentified visits). Load average (1 / 5 / 15 min) at the start of ` +
          `the timings: ${loadBefore}; at the end: ${loadAverage()}.`,
      ),
      '',
      table(['report', 'points', 'visits', 'people', 'median ms', 'max ms', 'runs'], rows),
      '',
      wrap(
        'End to end: GET through the real app (bearer token, validation, JSON) over one keep-alive connection (node:http), ' +
          'client and server in one process; the answers equal the direct calls.',
      ),
      '',
      table(['request', 'median ms', 'max ms', 'runs'], httpRows),
      '',
      wrap(
        `The main thread meanwhile: the company's year reports (footfall 365 days by day and by month, conversion 365 days; ` +
          `${YEAR_RUNS} rounds) through GET, computed in the report thread (\`FOOTFALL_REPORT_WORKERS\` 1, the default), then the ` +
          'same reports computed inline on the main thread by direct calls (the route before the thread; the loop turns ' +
          "between reports). Event-loop delay from `perf_hooks.monitorEventLoopDelay` (1 ms resolution; its values include that interval, so an idle loop reads about 1 ms) over each run; " +
          'meanwhile GET /healthz (it reads the database on the main connection) sent over a second keep-alive connection, ' +
          `each ${PING_EVERY_MS} ms after the previous answer, as a stand-in for everything else head office serves.`,
      ),
      '',
      table(['reports computed', 'reports', 'ms per report', 'loop delay max ms', 'p99 ms', 'mean ms', 'healthz answered', 'healthz median ms', 'healthz max ms'], loopRows),
      '',
      `Whole benchmark: ${total.toFixed(0)} s.`,
    ].join('\n');
  } finally {
    await server?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
