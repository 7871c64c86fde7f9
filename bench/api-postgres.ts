/**
 * The read cache on PostgreSQL (`npm run bench -- api-postgres`): head office as `npm start` runs it on PostgreSQL
 * (`footfall server` with FOOTFALL_DATABASE_URL, the preview), the company of bench/api.ts (5,000 visits of 500
 * customers, written straight into the database), 20 connections flat out to GET /api/visits?limit=100,
 * GET /api/visitors?limit=50 and GET /api/auth/me, several rounds. CPU per request of head office's process and of
 * the PostgreSQL cluster (every backend), from /proc.
 *
 * With the cache and without it: BENCH_API_BASE_ROOT names another checkout's built head office without the
 * PostgreSQL read cache (e.g. the commit before it, `git archive <commit> | tar -x -C DIR`, node_modules linked,
 * `npm run build:emit`); both run side by side on databases of their own in one throwaway cluster
 * (test/support/postgres.ts), measured in turn, round after round. Without it, only this build is measured.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { startPostgres, type TestPostgres } from '../test/support/postgres.js';
import { api, cli, med, type Proc } from './api.js';
import { cpuSeconds, endProcess, exited, waitFor } from './proc.js';
import { clusterCpuSeconds, pidByCommandLine } from './scale-cpu.js';
import { BENCH_ADMIN, benchServerSettings, loadAverage, seededData, progress, table } from './util.js';

const VISITS = 5_000;
const CUSTOMERS = 500;
const CONNECTIONS = 20;
const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 3);

async function startOn(cliPath: string, databaseUrl: string, dataDir: string): Promise<Proc> {
  fs.mkdirSync(dataDir, { recursive: true });
  const logFile = path.join(dataDir, 'server.log');
  const out = fs.openSync(logFile, 'w');
  const settings = { ...benchServerSettings(dataDir), FOOTFALL_DATABASE_URL: databaseUrl };
  delete (settings as Record<string, string>).FOOTFALL_LOG_LEVEL; // as npm start runs it
  const child = spawn(process.execPath, [cliPath, 'server'], { env: { ...process.env, ...settings }, stdio: ['ignore', out, 'inherit'] });
  fs.closeSync(out);
  const exit = exited(child);
  const url = await waitFor('head office to start', () => {
    if (child.exitCode !== null) throw new Error(`head office exited with ${child.exitCode}`);
    const text = fs.readFileSync(logFile, 'utf8');
    return /"msg":"head office ready"/.test(text) ? /"url":"(http:[^"]+)"/.exec(text)?.[1] : undefined;
  }, 60_000);
  return { child, url, exit };
}

/** bench/api.ts's company, written with PostgreSQL's types; the owner's token. */
async function seed(url: string, databaseUrl: string): Promise<string> {
  const admin = (await api(url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
  const c = await api(url, 'POST', '/api/admin/clients', { company_name: 'Bench Company', owner_email: 'owner@bench.test', owner_name: 'Owner' }, admin);
  const token = (await api(url, 'POST', '/api/auth/login', { email: 'owner@bench.test', password: c.password })).access_token!;
  const shop = await api(url, 'POST', '/api/sites', { name: 'Bench Shop', timezone: 'Europe/London' }, token);
  const { rand, template } = seededData();
  const start = Date.parse('2026-11-01T09:00:00Z');
  const iso = (t: number) => new Date(t).toISOString();
  const ids = Array.from({ length: CUSTOMERS }, () => randomUUID());
  const plan = Array.from({ length: VISITS }, (_, i) => ({ at: start + i * 60_000, customer: i < CUSTOMERS ? i : rand() < 0.1 ? -1 : Math.floor(rand() * CUSTOMERS) }));
  const count = new Array<number>(CUSTOMERS).fill(0);
  const first = new Array<number>(CUSTOMERS).fill(0);
  const last = new Array<number>(CUSTOMERS).fill(0);
  for (const v of plan) {
    if (v.customer < 0) continue;
    if (count[v.customer] === 0) first[v.customer] = v.at;
    count[v.customer] = count[v.customer]! + 1;
    last[v.customer] = v.at;
  }
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query('begin');
    for (let i = 0; i < CUSTOMERS; i++) {
      await db.query(
        'insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at, full_name) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $8, $10)',
        [ids[i], c.client_id, i + 1, 'bench-model', template, Math.min(count[i]!, 16), count[i], iso(first[i]!), iso(last[i]!), i % 10 === 0 ? 'Asha Rao' : ''],
      );
    }
    const seen = new Uint8Array(CUSTOMERS);
    for (const [i, v] of plan.entries()) {
      const known = v.customer >= 0;
      const fresh = known && !seen[v.customer];
      if (known) seen[v.customer] = 1;
      await db.query(
        'insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, received_at, customer_id, is_new_visitor, similarity, quality, passed_gate, recognition_model, gender, age, emotion, face_image_id, track_id) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, true, $11, $12, $13, $14, $15, $16)',
        [randomUUID(), c.client_id, shop.site_id, 'entrance', iso(v.at), iso(v.at + 900), known ? ids[v.customer] : null, fresh, known && !fresh ? 0.5 + 0.4 * rand() : null, 0.5 + 0.45 * rand(), known ? 'bench-model' : null, rand() < 0.5 ? 'female' : 'male', Math.floor(18 + rand() * 50), 'neutral', known ? randomUUID() : null, `t-${i}`],
      );
    }
    await db.query('commit');
  } finally {
    await db.end();
  }
  return token;
}

interface Shot {
  rps: number;
  errors: number;
  headOffice: number;
  postgres: number;
}

async function shoot(url: string, token: string, pid: number, pgPid: number): Promise<Shot> {
  const h0 = cpuSeconds(pid)!;
  const p0 = clusterCpuSeconds(pgPid);
  const r = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers: { authorization: `Bearer ${token}` } });
  const done = r.requests.total;
  const per = (cpu: number) => (done > 0 ? (cpu * 1000) / done : Number.NaN);
  return { rps: done / SECONDS, errors: r.errors + r.non2xx + r.timeouts, headOffice: per(cpuSeconds(pid)! - h0), postgres: per(clusterCpuSeconds(pgPid) - p0) };
}

export async function run(): Promise<string | undefined> {
  if (!fs.existsSync(cli)) {
    progress('the built CLI is missing: run `npm run bench -- api-postgres` (it builds first)');
    return undefined;
  }
  const baseRoot = process.env.BENCH_API_BASE_ROOT;
  const builds = [{ name: 'with the cache (this build)', cli }, ...(baseRoot ? [{ name: `without (${path.basename(baseRoot)})`, cli: path.join(baseRoot, 'dist/cli/main.js') }] : [])];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-api-pg-'));
  let postgres: TestPostgres | undefined;
  const servers: Proc[] = [];
  try {
    postgres = await startPostgres({ maxConnections: 100 });
    const pgPid = await waitFor('the PostgreSQL server process', () => pidByCommandLine((args) => args[0]!.endsWith('postgres') && args.includes(String(postgres!.port))));
    const targets: { build: string; route: string; url: string; token: string; pid: number }[] = [];
    for (const [i, b] of builds.entries()) {
      const databaseUrl = await postgres.createDatabase(`footfall_bench_${i}`);
      const server = await startOn(b.cli, databaseUrl, path.join(tmp, `ho-${i}`));
      servers.push(server);
      progress(`${b.name}: head office ${server.url} (pid ${server.child.pid}); seeding`);
      const token = await seed(server.url, databaseUrl);
      for (const route of ['/api/visits?limit=100', '/api/visitors?limit=50', '/api/auth/me']) targets.push({ build: b.name, route, url: server.url + route, token, pid: server.child.pid! });
    }
    for (const t of targets) {
      const res = await fetch(t.url, { headers: { authorization: `Bearer ${t.token}` } });
      const body = (await res.json()) as { arrivals?: unknown[] } | unknown[];
      const n = Array.isArray(body) ? body.length : (body.arrivals?.length ?? 1);
      if (res.status !== 200 || n !== (t.route.includes('visits') ? 100 : t.route.includes('visitors') ? 50 : 1)) throw new Error(`${t.url}: unexpected answer ${res.status}`);
    }
    const loadBefore = loadAverage();
    for (const t of targets) await autocannon({ url: t.url, connections: CONNECTIONS, duration: 1, headers: { authorization: `Bearer ${t.token}` } });
    const shots = targets.map(() => [] as Shot[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, t] of targets.entries()) {
        const s = await shoot(t.url, t.token, t.pid, pgPid);
        shots[i]!.push(s);
        progress(`round ${round + 1}/${ROUNDS} ${t.build} GET ${t.route}: ${Math.round(s.rps)} req/s, head office ${s.headOffice.toFixed(3)} + PostgreSQL ${s.postgres.toFixed(3)} CPU ms/req, ${s.errors} errors`);
      }
    }
    const loadAfter = loadAverage();
    const rows = targets.map((t, i) => {
      const r = shots[i]!;
      const f = (xs: number[]) => `${med(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`;
      return [`\`GET ${t.route}\``, t.build, String(Math.round(med(r.map((s) => s.rps)))), f(r.map((s) => s.headOffice)), f(r.map((s) => s.postgres)), String(r.reduce((a, s) => a + s.errors, 0))];
    });
    return [
      '## Head office API on PostgreSQL: the read cache',
      '',
      `Head office as \`npm start\` runs it, on PostgreSQL (the preview; the tests' throwaway cluster, test/support/postgres.ts, on the same machine), ` +
        `with bench/api.ts's company (${VISITS.toLocaleString('en')} visits of ${CUSTOMERS} customers); autocannon in the benchmark's process, ${CONNECTIONS} connections flat out, ${SECONDS} s a run, ` +
        `${ROUNDS} rounds with builds and routes interleaved; medians of the rounds, the range in brackets. CPU ms/req: head office's process, and every process of the ` +
        `PostgreSQL cluster (both builds' databases are in it; only one build is under load at a time), over a run, divided by the requests answered. ` +
        `${baseRoot ? `"without": BENCH_API_BASE_ROOT=${baseRoot}, the same head office before the PostgreSQL read cache. ` : ''}` +
        `Load average before / after: ${loadBefore} → ${loadAfter} (2 cores shared with other work).`,
      '',
      table(['route', 'build', 'req/s', 'head office CPU ms/req', 'PostgreSQL CPU ms/req', 'errors'], rows),
    ].join('\n');
  } finally {
    for (const p of servers) await endProcess(p, 10_000);
    await postgres?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
