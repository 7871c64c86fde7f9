/**
 * What the scale benchmark (bench/scale.ts) measures: head office as `npm start` runs it (the built CLI, its own
 * process, the default log level into a file), on the embedded SQLite or a throwaway PostgreSQL cluster, with the
 * embedded broker or a real Mosquitto 2, one head-office process or several (several need PostgreSQL and Mosquitto).
 * The PostgreSQL cluster and Mosquitto are the tests' (test/support/postgres.ts, test/support/mosquitto.ts).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { DIM, templateToBlob } from '../server/identity/vector.js';
import { startMosquitto, type TestMosquitto } from '../test/support/mosquitto.js';
import { startPostgres, type TestPostgres } from '../test/support/postgres.js';
import { cli, root } from './api.js';
import { endProcess, spawnLogged, waitFor, type LoggedProcess } from './proc.js';
import { clusterCpuSeconds, pidByCommandLine } from './scale-cpu.js';
import { GALLERY, MODEL } from './scale-load.js';
import { benchServerSettings } from './util.js';

export interface RigOptions {
  store: 'sqlite' | 'postgres';
  broker: 'embedded' | 'mosquitto';
  processes: number;
  /** `node --cpu-prof` into this folder. */
  profileDir?: string | undefined;
}

/** The running setup. */
export interface Rig {
  options: RigOptions;
  /** Each head-office process's API (the first is the one the benchmark talks to). */
  urls: string[];
  pids: number[];
  /** PostgreSQL: head office's database. */
  databaseUrl: string | undefined;
  /** Where the shop PCs connect. */
  brokerUrl: string;
  /** Writes `gallery` (GALLERY rows of 512) as the company's customers, as if they had been seen three times. */
  fillGallery(companyId: string, gallery: Float32Array): Promise<void>;
  /** The company's stored visit messages (sightings: one row per visit id). */
  stored(companyId: string): Promise<number>;
  customers(companyId: string): Promise<number>;
  /** PostgreSQL: transactions rolled back so far in head office's database (serialization failures among them). */
  rollbacks: (() => Promise<number>) | undefined;
  /** CPU seconds used so far by the PostgreSQL cluster's processes (server and every backend, living or ended). */
  postgresCpu: (() => number) | undefined;
  /** CPU seconds used so far by Mosquitto. */
  mosquittoCpu: (() => number) | undefined;
  /** Each process's log file. */
  logs: string[];
  /** The PostgreSQL server's log so far (PostgreSQL setups). */
  postgresLog: (() => string) | undefined;
  close(): Promise<void>;
}

const METRICS_TOKEN = 'bench-metrics-token-0123456789';

/** Transactions visit ingest has written, summed over head office's processes (GET /metrics). */
export async function ingestBatches(urls: readonly string[]): Promise<number> {
  let n = 0;
  for (const url of urls) {
    const res = await fetch(new URL('/metrics', url), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const text = await res.text();
    n += Number(/^footfall_ingest_batches_total (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
  }
  return n;
}

/** BENCH_API_ROOT: another checkout's built head office to measure (an earlier version, for a before/after). */
const serverCli = process.env.BENCH_API_ROOT ? path.join(process.env.BENCH_API_ROOT, 'dist/cli/main.js') : cli;

function startProcess(dataDir: string, logFile: string, env: Record<string, string>, profileDir: string | undefined): LoggedProcess {
  // The metrics endpoint on: the benchmark reads the ingest's batch count from it (visits a transaction).
  const settings = { ...benchServerSettings(dataDir), FOOTFALL_METRICS_TOKEN: METRICS_TOKEN, ...env };
  delete (settings as Record<string, string | undefined>).FOOTFALL_LOG_LEVEL; // as npm start runs it: the default level
  // SCALE_NODE_FLAGS: node's flags for head office only (e.g. --trace-gc, which NODE_OPTIONS refuses).
  const flags = (process.env.SCALE_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const args = [...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...flags, serverCli, 'server'];
  return spawnLogged(process.execPath, args, { cwd: root, env: { ...process.env, ...settings }, logFile });
}

async function ready(p: LoggedProcess): Promise<{ url: string; mqttPort: number }> {
  return await p.waitLog('head office to start', (line) => {
    if (p.child.exitCode !== null) throw new Error(`head office exited with ${p.child.exitCode}: ${p.log().slice(-2000)}`);
    if (!line.includes('"msg":"head office ready"')) return undefined;
    return { url: /"url":"(http:[^"]+)"/.exec(line)![1]!, mqttPort: Number(/"mqtt_port":(\d+)/.exec(line)?.[1] ?? 0) };
  });
}

const daysAgo = () => new Date(Date.now() - 86_400_000).toISOString();

export function sqliteCounts(dataDir: string) {
  const db = new Database(path.join(dataDir, 'footfall.db'));
  db.pragma('busy_timeout = 10000');
  const insert = db.prepare(
    'insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at) values (?, ?, ?, ?, ?, 3, 3, ?, ?, ?)',
  );
  const storedCount = db.prepare('select count(*) as n from sightings where company_id = ?');
  const customerCount = db.prepare('select count(*) as n from customers where company_id = ?');
  return {
    fillGallery: (companyId: string, gallery: Float32Array) => {
      const at = daysAgo();
      db.transaction(() => {
        for (let i = 0; i < GALLERY; i++) insert.run(randomUUID(), companyId, i + 1, MODEL, templateToBlob(gallery.subarray(i * DIM, (i + 1) * DIM)), at, at, at);
      })();
      return Promise.resolve();
    },
    stored: (companyId: string) => Promise.resolve((storedCount.get(companyId) as { n: number }).n),
    customers: (companyId: string) => Promise.resolve((customerCount.get(companyId) as { n: number }).n),
    close: () => db.close(),
  };
}

async function postgresCounts(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const count = async (text: string, companyId: string) => Number((await client.query<{ n: string }>(text, [companyId])).rows[0]!.n);
  return {
    fillGallery: async (companyId: string, gallery: Float32Array) => {
      const at = daysAgo();
      const BATCH = 1000;
      await client.query('begin');
      for (let from = 0; from < GALLERY; from += BATCH) {
        const values: unknown[] = [];
        const rows: string[] = [];
        for (let i = from; i < Math.min(GALLERY, from + BATCH); i++) {
          const k = values.length;
          rows.push(`($${k + 1}, $${k + 2}, $${k + 3}, $${k + 4}, $${k + 5}, 3, 3, $${k + 6}, $${k + 6}, $${k + 6})`);
          values.push(randomUUID(), companyId, i + 1, MODEL, templateToBlob(gallery.subarray(i * DIM, (i + 1) * DIM)), at);
        }
        await client.query(
          `insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at) values ${rows.join(', ')}`,
          values,
        );
      }
      await client.query('commit');
      await client.query('analyze customers');
    },
    stored: (companyId: string) => count('select count(*) as n from sightings where company_id = $1', companyId),
    customers: (companyId: string) => count('select count(*) as n from customers where company_id = $1', companyId),
    rollbacks: async () => {
      // The statistics of other backends' ended transactions reach pg_stat_database within a second or so.
      await client.query('select pg_stat_clear_snapshot()');
      return Number((await client.query<{ n: string }>('select xact_rollback as n from pg_stat_database where datname = current_database()')).rows[0]!.n);
    },
    close: () => client.end(),
  };
}

export async function startRig(options: RigOptions, tmp: string): Promise<Rig> {
  if (options.processes > 1 && (options.store !== 'postgres' || options.broker !== 'mosquitto')) throw new Error('several head-office processes need PostgreSQL and Mosquitto');
  const dataDir = path.join(tmp, 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  let postgres: TestPostgres | undefined;
  let mosquitto: TestMosquitto | undefined;
  const procs: LoggedProcess[] = [];
  let counts: Awaited<ReturnType<typeof postgresCounts>> | ReturnType<typeof sqliteCounts> | undefined;
  const close = async () => {
    for (const p of procs) await endProcess(p, 15_000);
    await counts?.close();
    await mosquitto?.close();
    await postgres?.close();
  };
  try {
    const env: Record<string, string> = {};
    if (options.store === 'postgres') {
      // Two processes hold 2 x (10 + the ingest thread's 2) connections; the benchmark one.
      // Its log says what a stall coincides with: checkpoints, autovacuum and analyze runs, lock waits over 200 ms,
      // statements over 500 ms (scale.ts keeps it beside head office's with SCALE_KEEP_LOG).
      postgres = await startPostgres({
        maxConnections: 100,
        settings: { log_line_prefix: '%m [%p] ', log_checkpoints: 'on', log_autovacuum_min_duration: '0', log_lock_waits: 'on', deadlock_timeout: '200ms', log_min_duration_statement: '500' },
      });
      env.FOOTFALL_DATABASE_URL = await postgres.createDatabase('footfall_bench');
    }
    if (options.broker === 'mosquitto') {
      mosquitto = await startMosquitto();
      env.FOOTFALL_MQTT_URL = mosquitto.url;
      env.FOOTFALL_MQTT_USERNAME = mosquitto.admin.username;
      env.FOOTFALL_MQTT_PASSWORD = mosquitto.admin.password;
    }
    const started: { url: string; mqttPort: number }[] = [];
    // One after the other: the first makes the data folder's key (the others read it) and applies the migrations.
    for (let i = 0; i < options.processes; i++) {
      const logFile = path.join(tmp, `server-${i + 1}.log`);
      const p = startProcess(dataDir, logFile, { ...env, FOOTFALL_MQTT_CLIENT_ID: `footfall-bench-${i + 1}` }, options.profileDir);
      procs.push(p);
      started.push(await ready(p));
    }
    counts = env.FOOTFALL_DATABASE_URL ? await postgresCounts(env.FOOTFALL_DATABASE_URL) : sqliteCounts(dataDir);
    const c = counts;
    const pgPid = postgres ? await waitFor('the PostgreSQL server process', () => pidByCommandLine((args) => args[0]!.endsWith('postgres') && args.includes(String(postgres!.port)))) : undefined;
    const mqPid = mosquitto ? await waitFor('the Mosquitto process', () => pidByCommandLine((args) => args.includes(path.join(mosquitto!.dir, 'mosquitto.conf')))) : undefined;
    return {
      options,
      urls: started.map((s) => s.url),
      pids: procs.map((p) => p.pid),
      databaseUrl: env.FOOTFALL_DATABASE_URL,
      brokerUrl: mosquitto ? mosquitto.url : `mqtt://127.0.0.1:${started[0]!.mqttPort}`,
      fillGallery: (companyId, gallery) => c.fillGallery(companyId, gallery),
      stored: (companyId) => c.stored(companyId),
      customers: (companyId) => c.customers(companyId),
      rollbacks: 'rollbacks' in c ? c.rollbacks : undefined,
      postgresCpu: pgPid === undefined ? undefined : () => clusterCpuSeconds(pgPid),
      mosquittoCpu: mqPid === undefined ? undefined : () => clusterCpuSeconds(mqPid),
      logs: procs.map((_, i) => path.join(tmp, `server-${i + 1}.log`)),
      postgresLog: postgres ? () => postgres!.log() : undefined,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
