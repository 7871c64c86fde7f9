/**
 * API benchmark (`npm run bench -- api`): head office as `npm start` runs it (the built CLI, `footfall server`, its
 * own process on a temporary FOOTFALL_DATA_DIR, free ports, the default log level with its log going to a file), with
 * one company of 5,000 visits of 500 customers; autocannon (in this process) sends 10 connections at a fixed 200 req/s,
 * then 20 connections flat out, to GET /api/visits?limit=100, GET /api/visitors?limit=50 and GET /api/auth/me, and
 * the same to a bare Koa app answering a constant JSON body (bench/bare-koa.ts, its own process), in the same run,
 * routes interleaved, several rounds (the machine is shared: the spread is reported).
 *
 * The company, its owner and shop are made through the API; customers and visits are written straight into the
 * server's database (WAL: the server keeps running) with ingest's own insert statement, as bench/reports.ts does.
 * Identified visits carry a face image id, as ingest stores one (so each poll writes its photo-link audit row).
 *
 * Also read: each server process's CPU time from /proc over each flat-out run, i.e. CPU milliseconds per request.
 * BENCH_API_PROFILE=1 runs head office under `node --cpu-prof` (profile written to the printed folder on exit).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { cpuSeconds, endProcess, exited, rssBytes, waitFor } from './proc.js';
import { BENCH_ADMIN, benchServerSettings, loadAverage, seededData, ms, progress, table } from './util.js';

const VISITS = 5_000;
const CUSTOMERS = 500;
const RATE = 200;
const PACED_CONNECTIONS = 10;
const FLAT_CONNECTIONS = 20;
const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 3);
const PROFILE = process.env.BENCH_API_PROFILE === '1';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const cli = path.join(root, 'dist/cli/main.js');
/** BENCH_API_ROOT: another checkout's built head office to measure (an earlier version, for a before/after). */
const serverCli = process.env.BENCH_API_ROOT ? path.join(process.env.BENCH_API_ROOT, 'dist/cli/main.js') : cli;
const bareKoa = path.join(root, 'dist/bench/bare-koa.js');

export interface Proc {
  child: ChildProcess;
  url: string;
  exit: Promise<void>;
}

/** In bench/proc.ts with the other process helpers; here too for the benchmarks that import them from here. */
export { exited, waitFor } from './proc.js';

/** Head office: `node dist/cli/main.js server`, stdout (its JSON log) into a file, the URL read from its ready line. */
export async function startHeadOffice(dataDir: string, profileDir?: string): Promise<Proc> {
  fs.mkdirSync(dataDir, { recursive: true });
  const logFile = path.join(dataDir, 'server.log');
  const out = fs.openSync(logFile, 'w');
  const settings = benchServerSettings(dataDir);
  delete settings.FOOTFALL_LOG_LEVEL; // as npm start runs it: the default level, one access-log line per request
  const args = [...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), serverCli, 'server'];
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...settings }, stdio: ['ignore', out, 'inherit'] });
  fs.closeSync(out);
  const exit = exited(child);
  const url = await waitFor('head office to start', () => {
    if (child.exitCode !== null) throw new Error(`head office exited with ${child.exitCode}`);
    const m = /"msg":"head office ready"/.test(fs.readFileSync(logFile, 'utf8')) ? /"url":"(http:[^"]+)"/.exec(fs.readFileSync(logFile, 'utf8')) : null;
    return m?.[1];
  });
  return { child, url, exit };
}

/** bench/bare-koa.ts in its own process; `env` for its api-floor variants (BARE_SPIN_US, BARE_HTTP). */
export async function startBareKoa(env: Record<string, string> = {}): Promise<Proc> {
  const child = spawn(process.execPath, [bareKoa], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
  const exit = exited(child);
  const port = await waitFor('bare Koa to start', () => /port (\d+)/.exec(text)?.[1]);
  return { child, url: `http://127.0.0.1:${port}`, exit };
}

export async function api(url: string, method: string, p: string, body?: unknown, token?: string): Promise<Record<string, string>> {
  const res = await fetch(url + p, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, string>;
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** One company, one shop, 500 customers and 5,000 visits (time order, ingest's statement); the owner's token. */
async function seed(url: string, dataDir: string): Promise<string> {
  const admin = (await api(url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
  const c = await api(url, 'POST', '/api/admin/clients', { company_name: 'Bench Company', owner_email: 'owner@bench.test', owner_name: 'Owner' }, admin);
  const token = (await api(url, 'POST', '/api/auth/login', { email: 'owner@bench.test', password: c.password })).access_token!;
  const shop = await api(url, 'POST', '/api/sites', { name: 'Bench Shop', timezone: 'Europe/London' }, token);
  const companyId = c.client_id!;
  const shopId = shop.site_id!;

  const sqlite = new Database(path.join(dataDir, 'footfall.db'));
  sqlite.pragma('busy_timeout = 5000');
  const { rand, template } = seededData();
  const start = Date.parse('2026-11-01T09:00:00Z');
  const step = 60_000;
  const iso = (t: number) => new Date(t).toISOString();
  const ids = Array.from({ length: CUSTOMERS }, () => randomUUID());
  const visitsOf = new Array<number>(CUSTOMERS).fill(0);
  const first = new Array<number>(CUSTOMERS).fill(0);
  const last = new Array<number>(CUSTOMERS).fill(0);
  const plan: { at: number; customer: number }[] = [];
  for (let i = 0; i < VISITS; i++) {
    const at = start + i * step;
    // Every customer comes at least once (the first 500 visits), then anyone; one visit in ten is anonymous.
    const customer = i < CUSTOMERS ? i : rand() < 0.1 ? -1 : Math.floor(rand() * CUSTOMERS);
    plan.push({ at, customer });
    if (customer >= 0) {
      if (visitsOf[customer] === 0) first[customer] = at;
      visitsOf[customer]!++;
      last[customer] = at;
    }
  }
  const insertCustomer = sqlite.prepare(
    'insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  // The same statement as ingest (server/visits/stays.ts).
  const insertVisit = sqlite.prepare(
    'insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, received_at, customer_id, is_new_visitor, similarity, quality, passed_gate, recognition_model, gender, age, emotion, face_image_id, track_id) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const named = ['Asha Rao', 'Ben Clark', 'Chen Li', 'Dana Cohen'];
  sqlite.transaction(() => {
    for (let cI = 0; cI < CUSTOMERS; cI++) {
      insertCustomer.run(ids[cI], companyId, cI + 1, 'bench-model', template, Math.min(visitsOf[cI]!, 16), visitsOf[cI], iso(first[cI]!), iso(last[cI]!), iso(first[cI]!));
    }
    // A few with a profile, as staff fill them in.
    const profile = sqlite.prepare("update customers set full_name = ?, phone = '+447700900123', consent = 1 where id = ?");
    for (let cI = 0; cI < CUSTOMERS; cI += 10) profile.run(named[(cI / 10) % named.length], ids[cI]);
    const seen = new Uint8Array(CUSTOMERS);
    plan.forEach((v, i) => {
      const known = v.customer >= 0;
      const fresh = known && !seen[v.customer];
      if (known) seen[v.customer] = 1;
      insertVisit.run(
        randomUUID(),
        companyId,
        shopId,
        'entrance',
        iso(v.at),
        iso(v.at + 900),
        known ? ids[v.customer] : null,
        fresh ? 1 : 0,
        known && !fresh ? 0.5 + 0.4 * rand() : null,
        0.5 + 0.45 * rand(),
        1,
        known ? 'bench-model' : null,
        rand() < 0.5 ? 'female' : 'male',
        Math.floor(18 + rand() * 50),
        'neutral',
        known ? randomUUID() : null,
        `t-${i}`,
      );
    });
  })();
  sqlite.close();
  return token;
}

interface Shot {
  p50: number;
  p99: number;
  rps: number;
  errors: number;
  cpuMsPerReq: number;
}

export async function shoot(url: string, token: string | undefined, paced: boolean, pid: number): Promise<Shot> {
  const cpu0 = cpuSeconds(pid)!;
  const r = await autocannon({
    url,
    connections: paced ? PACED_CONNECTIONS : FLAT_CONNECTIONS,
    duration: SECONDS,
    ...(paced ? { overallRate: RATE } : {}),
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const cpu = cpuSeconds(pid)! - cpu0;
  const done = r.requests.total;
  return { p50: r.latency.p50, p99: r.latency.p99, rps: done / SECONDS, errors: r.errors + r.non2xx + r.timeouts, cpuMsPerReq: done > 0 ? (cpu * 1000) / done : Number.NaN };
}

export const med = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const spread = (xs: number[], f: (x: number) => string) => (xs.length > 1 ? `${f(Math.min(...xs))}-${f(Math.max(...xs))}` : f(xs[0]!));
export const n0 = (x: number) => Math.round(x).toLocaleString('en');

export async function run(): Promise<string | undefined> {
  if (!fs.existsSync(cli) || !fs.existsSync(bareKoa)) {
    progress('the built CLI is missing: run `npm run bench -- api` (it builds first)');
    return undefined;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-api-'));
  const profileDir = PROFILE ? path.join(tmp, 'profile') : undefined;
  let server: Proc | undefined;
  let bare: Proc | undefined;
  try {
    server = await startHeadOffice(tmp, profileDir);
    bare = await startBareKoa();
    progress(`head office ${server.url} (pid ${server.child.pid}), bare Koa ${bare.url} (pid ${bare.child.pid}); seeding`);
    const token = await seed(server.url, tmp);

    const all = [
      { name: 'GET /api/visits?limit=100', url: `${server.url}/api/visits?limit=100`, token, pid: server.child.pid! },
      { name: 'GET /api/visitors?limit=50', url: `${server.url}/api/visitors?limit=50`, token, pid: server.child.pid! },
      { name: 'GET /api/auth/me', url: `${server.url}/api/auth/me`, token, pid: server.child.pid! },
      { name: 'bare Koa, constant JSON', url: `${bare.url}/`, token: undefined, pid: bare.child.pid! },
    ];
    // BENCH_API_ONLY=visits (or visitors, me): that route alone beside bare Koa, e.g. to profile it.
    const only = process.env.BENCH_API_ONLY;
    const targets = only ? all.filter((t) => t.name.includes(`/${only}`) || t.pid === bare!.child.pid) : all;
    // The answers are the real ones: 100 arrivals, 50 customers, the owner.
    const check = async (u: string) => {
      const res = await fetch(u, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 200) throw new Error(`${u}: ${res.status} ${await res.text()}`);
      return (await res.json()) as Record<string, unknown>;
    };
    const feed = await check(all[0]!.url);
    const people = (await check(all[1]!.url)) as unknown as unknown[];
    const me = await check(all[2]!.url);
    if ((feed.arrivals as unknown[]).length !== 100 || people.length !== 50 || me.email !== 'owner@bench.test') throw new Error('api benchmark: unexpected answers');

    const loadBefore = loadAverage();
    const results = targets.map(() => ({ paced: [] as Shot[], flat: [] as Shot[] }));
    // Warm-up: a second flat out per target.
    for (const t of targets) await autocannon({ url: t.url, connections: FLAT_CONNECTIONS, duration: 1, headers: t.token ? { authorization: `Bearer ${t.token}` } : {} });
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, t] of targets.entries()) {
        const paced = await shoot(t.url, t.token, true, t.pid);
        const flat = await shoot(t.url, t.token, false, t.pid);
        results[i]!.paced.push(paced);
        results[i]!.flat.push(flat);
        progress(`round ${round + 1}/${ROUNDS} ${t.name}: ${RATE} req/s p50 ${paced.p50} ms p99 ${paced.p99} ms; flat out ${n0(flat.rps)} req/s, ${flat.cpuMsPerReq.toFixed(3)} CPU ms/req, ${flat.errors + paced.errors} errors`);
      }
    }
    const loadAfter = loadAverage();
    const rss = rssBytes(server.child.pid!);
    const bareIndex = targets.findIndex((t) => t.pid === bare!.child.pid);
    const bareRps = bareIndex >= 0 ? results[bareIndex]!.flat.map((s) => s.rps) : [];
    const rows = targets.map((t, i) => {
      const r = results[i]!;
      const rps = r.flat.map((s) => s.rps);
      const shares = rps.map((x, k) => x / bareRps[k]!);
      return [
        `\`${t.name}\``,
        `${ms(med(r.paced.map((s) => s.p50)))} / ${ms(med(r.paced.map((s) => s.p99)))} (p99 ${spread(r.paced.map((s) => s.p99), ms)})`,
        `${n0(med(rps))} (${spread(rps, n0)})`,
        i === bareIndex ? '100 %' : bareRps.length === 0 ? '-' : `${(100 * med(shares)).toFixed(1)} % (${spread(shares.map((x) => 100 * x), (x) => x.toFixed(1))})`,
        `${med(r.flat.map((s) => s.cpuMsPerReq)).toFixed(3)}`,
        String(r.paced.reduce((a, s) => a + s.errors, 0) + r.flat.reduce((a, s) => a + s.errors, 0)),
      ];
    });
    if (profileDir) progress(`profile: ${profileDir} (written when head office exits)`);
    return [
      '## Head office API, the real process',
      '',
      `Head office as \`npm start\` runs it (\`node dist/cli/main.js server\`, default log level, its log to a file) with one company of ` +
        `${VISITS.toLocaleString('en')} visits of ${CUSTOMERS} customers; autocannon in the benchmark's process, ${PACED_CONNECTIONS} connections at a fixed ${RATE} req/s ` +
        `(p50 / p99, coordinated omission corrected), then ${FLAT_CONNECTIONS} connections flat out, ${SECONDS} s each, ${ROUNDS} rounds with the routes interleaved; ` +
        `the bare Koa app (its own process, a constant JSON body) in the same rounds. Medians of the rounds, the range in brackets. ` +
        `CPU ms/req: the serving process's CPU time (/proc) over a flat-out run divided by the requests answered. ` +
        `Load average before / after: ${loadBefore} → ${loadAfter} (2 cores shared with other work). Head office RSS after: ${((rss ?? 0) / 2 ** 20).toFixed(0)} MiB.`,
      '',
      table(['route', `p50 / p99 at ${RATE} req/s (ms)`, 'most req/s', 'share of bare Koa', 'CPU ms/req', 'errors'], rows),
    ].join('\n');
  } finally {
    for (const p of [server, bare]) if (p) await endProcess(p, 10_000);
    if (!profileDir) fs.rmSync(tmp, { recursive: true, force: true });
  }
}
