/**
 * Scale benchmark (`npm run bench -- scale`, issue 27 item 5): the box's ceiling. Head office as `npm start` runs it
 * (the built CLI, its own process, the default log level into a file), one chain of shops with a 20,000-customer
 * gallery. This process simulates the shop PCs (bench/scale-load.ts: mqtt.js, one connection each): each has 4
 * cameras and publishes 0.4 visits a second (QoS 1) and a heartbeat every 30 s (QoS 0).
 *
 * What runs (bench/scale-rig.ts): by default the embedded box, SQLite and the embedded broker (aedes), one process.
 * SCALE_STORE=postgres: head office on a throwaway PostgreSQL cluster (FOOTFALL_DATABASE_URL; the gallery filled
 * into it). SCALE_BROKER=mosquitto: a real Mosquitto 2 (FOOTFALL_MQTT_URL). SCALE_PROCESSES=2 (PostgreSQL and
 * Mosquitto; the broker is Mosquitto unless said): that many head-office processes, each its own
 * FOOTFALL_MQTT_CLIENT_ID and port, the shop PCs on Mosquitto. SCALE_RUNS runs several setups one after the other in
 * one run, e.g. `sqlite,postgres,postgres-mosquitto-2` (store, then `mosquitto` and / or the process count).
 *
 * 1. CPU per ingested visit: head office's own CPU (/proc/<pid>/stat, all its threads; with several processes their
 *    sum), the PostgreSQL cluster's (the server and its backends) and Mosquitto's, each apart, over SCALE_CPU_S
 *    seconds at a fixed moderate SCALE_CPU_RATE visits a second, less each one's idle CPU over the same time
 *    measured just before (so the figure does not follow the machine's load or the rate).
 * 2. Steps: SCALE_STEPS shop PCs (default 200,500,1000,1500,2000), each SCALE_STEP_S seconds (default 60): visits a
 *    second, lost (published and never stored), PUBACK p50 / p99, CPU per visit, RSS at the step's start and end,
 *    the load average. Stops at the first step that loses a visit or has p99 >= 250 ms: the ceiling is the step
 *    before it. On SQLite with the embedded broker the PUBACK comes once the visit is stored; with Mosquitto it comes
 *    from the broker, and on PostgreSQL it can come before the batch holding the visit commits, so there the time
 *    from publish to stored is measured too (bench/scale-stream.ts, the arrivals stream of every process) and the
 *    verdict is on the later of the two. Lost: published and not stored 15 s after the step (the PUBACKs and then
 *    the stored count waited for); how many of those were stored within 2 minutes more is said beside it.
 * SCALE_MINUTES=10: instead of the steps, one run at SCALE_PCS (default 1000) shop PCs for that many minutes,
 * RSS and the company's customers every 30 s (is memory flat? head office keeps every customer's template in memory
 * for matching, so it grows with the new people: the run says by how much per new customer).
 * SCALE_NEW: the share of visits that are new people (default 0.3; the rest of those with a face are returning):
 * each becomes a customer, so the gallery grows as the visits come (its size at each step's start and end is reported).
 * SCALE_FACES: the share of visits with a face (default 0.9; SCALE_FACES=0 with SCALE_NEW=0: count-only visits, what
 * head office's process takes for a visit without the face work).
 * SCALE_GALLERY: the customers filled in before the run (default 20,000).
 * SCALE_V4_IDS=1: random (v4) visit ids, as shop PCs made them before session 32, instead of the UUIDv7 they make now.
 * Each step runs on a head office of its own (a new data folder, the gallery filled in again, its own warm-up; the
 * fixed-rate phase on the first only), so every step starts from SCALE_GALLERY customers: the face search's cost grows
 * with the gallery, and on one head office the 2,000 step searched 47,000-62,000 customers (docs/decisions.md, "The
 * scale benchmark's steps each start from the 20,000-customer gallery"). SCALE_FRESH=0: the steps follow one another
 * on one head office, each searching the gallery the ones before it grew.
 * SCALE_STREAM=1 measures the time to stored on SQLite with the embedded broker too (it costs head office the
 * stream; compare like with like), SCALE_STREAM=0 nowhere.
 * SCALE_PROFILE=1 runs head office under `node --cpu-prof` (profile written to the printed folder on exit).
 * SCALE_NODE_FLAGS='--trace-gc ...' passes node's flags to head office only (--trace-gc: a line per collection in its log,
 * kept with SCALE_KEEP_LOG; NODE_OPTIONS refuses it and would reach this process too).
 * SCALE_KEEP_LOG=<file> keeps head office's log there (the other processes' in <file>.2, ...; with SCALE_RUNS, each
 * setup's as <file>-<store>-<broker>-<processes>), and on PostgreSQL the server's log beside it, its name + `.postgres`
 * (checkpoints, autovacuum, lock waits over 200 ms, statements over 500 ms).
 * SCALE_PIN=1 pins head office to core 0 and this process (the load generator) to core 1 (taskset).
 *
 * Visits: 60 % returning customers (a sighting of a gallery face at cosine 0.74-0.9), 30 % new people, 10 % faces
 * under the gate (no embedding); each visit id is new, so lost = published - stored (the sightings table, read at
 * the end of each step; its key (company, visit_id) means a visit cannot be stored twice).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Faces } from '../server/identity/synthetic.js';
import { api } from './api.js';
import { cpuSeconds, rssBytes } from './proc.js';
import { CAMERAS, DEFAULT_FACE_SHARE, GALLERY, Load, PER_CAMERA, SLOW_MS, Visits, enrol } from './scale-load.js';
import { report, setupName, type CpuPhase, type Measured, type StepResult } from './scale-report.js';
import { ingestBatches, startRig, type Rig, type RigOptions } from './scale-rig.js';
import { StoredClock } from './scale-stream.js';
import { BENCH_ADMIN, loadAverage, ms, percentile, progress } from './util.js';

const STEPS = (process.env.SCALE_STEPS ?? '200,500,1000,1500,2000').split(',').map(Number);
const STEP_S = Number(process.env.SCALE_STEP_S ?? 60);
const CPU_RATE = Number(process.env.SCALE_CPU_RATE ?? 300);
const CPU_S = Number(process.env.SCALE_CPU_S ?? 30);
const MINUTES = Number(process.env.SCALE_MINUTES ?? 0);
const LONG_PCS = Number(process.env.SCALE_PCS ?? 1000);
const PROFILE = process.env.SCALE_PROFILE === '1';
const PIN = process.env.SCALE_PIN === '1';
/** The time to stored from the arrivals stream: SCALE_STREAM=1 or 0; by default where the PUBACK does not say it. */
const STREAM = process.env.SCALE_STREAM;
const FACE_SHARE = Math.min(1, Math.max(0, Number(process.env.SCALE_FACES ?? DEFAULT_FACE_SHARE)));
const NEW_SHARE = Math.min(FACE_SHARE, Math.max(0, Number(process.env.SCALE_NEW ?? 0.3)));
/** Each step on a head office of its own (not with SCALE_MINUTES, which is one long step). */
const FRESH = process.env.SCALE_FRESH !== '0' && MINUTES === 0;
const P99_LIMIT = 250;
/** Waiting for the last PUBACKs of a step, and for the stored count to catch up: then what is missing is lost. */
const GRACE_MS = 15_000;
/** Waiting for a backlog (after the warm-up, after the fixed rate; after a step, what was stored late). */
const BACKLOG_MS = 120_000;

type Setup = Omit<RigOptions, 'profileDir'>;

/** SCALE_RUNS's setups, or the one SCALE_STORE, SCALE_BROKER and SCALE_PROCESSES name. */
export function setups(env: NodeJS.ProcessEnv = process.env): Setup[] {
  const one = (store: string, broker: string | undefined, processes: number): Setup => {
    if (store !== 'sqlite' && store !== 'postgres') throw new Error(`scale: unknown store ${store} (sqlite or postgres)`);
    if (broker !== undefined && broker !== 'embedded' && broker !== 'mosquitto') throw new Error(`scale: unknown broker ${broker} (embedded or mosquitto)`);
    if (!Number.isInteger(processes) || processes < 1) throw new Error(`scale: ${processes} processes?`);
    return { store, broker: broker ?? (processes > 1 ? 'mosquitto' : 'embedded'), processes };
  };
  if (env.SCALE_RUNS) {
    return env.SCALE_RUNS.split(',').map((spec) => {
      const [store, ...rest] = spec.trim().split('-');
      const n = rest.find((r) => /^\d+$/.test(r));
      return one(store!, rest.find((r) => !/^\d+$/.test(r)), Number(n ?? 1));
    });
  }
  return [one(env.SCALE_STORE ?? 'sqlite', env.SCALE_BROKER, Number(env.SCALE_PROCESSES ?? 1))];
}

function pin(pid: number, cpu: number): void {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
  } catch {
    progress(`taskset failed for ${pid}; not pinned`);
  }
}

const sleep = (msTime: number) => new Promise((r) => setTimeout(r, msTime));

/** CPU seconds so far: head office (every process), the PostgreSQL cluster, Mosquitto (NaN where there is none). */
function cpuNow(rig: Rig): { ho: number; pg: number; mq: number } {
  return { ho: rig.pids.reduce((a, pid) => a + (cpuSeconds(pid) ?? Number.NaN), 0), pg: rig.postgresCpu?.() ?? Number.NaN, mq: rig.mosquittoCpu?.() ?? Number.NaN };
}

/** One head office through `steps` (and the fixed-rate CPU phase first, when `withCpu`). */
async function measure(setup: Setup, stepList: readonly number[], withCpu: boolean): Promise<Measured> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-scale-'));
  const profileDir = PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-scale-prof-')) : undefined;
  let rig: Rig | undefined;
  let load: Load | undefined;
  // On PostgreSQL the embedded broker's PUBACK can come before the visit is stored (the ingest thread acknowledges
  // up to the first visit still queued, and a batch being written is no longer queued), so it is measured there too.
  const clock = STREAM === '1' || (STREAM !== '0' && (setup.broker === 'mosquitto' || setup.store === 'postgres')) ? new StoredClock() : undefined;
  try {
    progress(`${setupName(setup)}: starting`);
    rig = await startRig({ ...setup, profileDir }, tmp);
    if (PIN) {
      for (const pid of rig.pids) pin(pid, 0);
      pin(process.pid, 1);
    }
    const url = rig.urls[0]!;
    const admin = (await api(url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const company = await api(url, 'POST', '/api/admin/clients', { company_name: 'Bench Chain', owner_email: 'owner@bench.test', owner_name: 'Owner' }, admin);
    const token = (await api(url, 'POST', '/api/auth/login', { email: 'owner@bench.test', password: company.password })).access_token!;
    const companySlug = company.slug!;
    const companyId = company.client_id!;

    progress(`gallery: ${GALLERY.toLocaleString('en')} customers into ${setup.store}`);
    const gallery = new Faces(7).identities(GALLERY);
    await rig.fillGallery(companyId, gallery);
    const r = rig;
    const stored = () => r.stored(companyId);
    const rollbacks = async () => (r.rollbacks ? await r.rollbacks() : Number.NaN);

    const enrolWidth = setup.store === 'postgres' ? 2 : 8;
    const maxPcs = MINUTES > 0 ? LONG_PCS : Math.max(...stepList);
    const cpuPcs = Math.min(200, maxPcs);
    progress(`enrolling ${cpuPcs} shop PCs`);
    const logins = await enrol(url, token, companySlug, 0, cpuPcs, enrolWidth);
    load = new Load(new Visits(gallery, NEW_SHARE, FACE_SHARE), rig.brokerUrl, clock?.sent);
    await load.connect(logins);
    if (clock) for (const u of rig.urls) await clock.follow(u, token);
    const l = load;

    /** After the load stops: the PUBACKs, then (external broker) the stored count reaching what was published. */
    const drain = async (s0: number, published: number, timeoutMs = GRACE_MS): Promise<{ left: number; got: number }> => {
      const until = Date.now() + timeoutMs;
      const left = await l.settled(GRACE_MS);
      let got = (await stored()) - s0;
      while (got < published && Date.now() < until) {
        await sleep(100);
        got = (await stored()) - s0;
      }
      return { left, got };
    };

    // Warm-up: the gallery is loaded on the first visit; JIT.
    progress('warm-up: 20 s');
    const w0 = await stored();
    load.start(cpuPcs, CPU_RATE);
    await sleep(20_000);
    load.stop();
    const warm = load.take().published;
    const warmDrain = await drain(w0, warm, BACKLOG_MS);
    if (warmDrain.got < warm) progress(`warm-up: ${warm - warmDrain.got} of ${warm} visits not stored after ${BACKLOG_MS / 1000} s`);
    clock?.take();

    // 1. CPU per visit at a fixed rate, idle subtracted.
    const cpuPhase = async (): Promise<CpuPhase> => {
      progress(`idle: ${CPU_S} s`);
      await sleep(2_000);
      const idle0 = cpuNow(r);
      const it0 = performance.now();
      await sleep(CPU_S * 1000);
      const idle1 = cpuNow(r);
      const idleS = (performance.now() - it0) / 1000;
      const idlePerS = { ho: (idle1.ho - idle0.ho) / idleS, pg: (idle1.pg - idle0.pg) / idleS, mq: (idle1.mq - idle0.mq) / idleS };
      progress(`fixed rate: ${CPU_RATE} visits/s for ${CPU_S} s from ${cpuPcs} shop PCs`);
      const cpuLoad0 = loadAverage();
      const c0 = cpuNow(r);
      const s0 = await stored();
      const rb0 = await rollbacks();
      const b0 = await ingestBatches(r.urls);
      const ct0 = performance.now();
      l.start(cpuPcs, CPU_RATE);
      await sleep(CPU_S * 1000);
      l.stop();
      const cpuWin = l.take();
      const cpuDrain = await drain(s0, cpuWin.published, BACKLOG_MS);
      const cpuWall = (performance.now() - ct0) / 1000;
      const c1 = cpuNow(r);
      const cpuStored = cpuDrain.got;
      const net = (k: 'ho' | 'pg' | 'mq') => (1000 * (c1[k] - c0[k] - idlePerS[k] * cpuWall)) / cpuStored;
      const storedLat = clock?.take() ?? [];
      await sleep(1000); // the rolled-back transactions' statistics
      const cpuRollbacks = (await rollbacks()) - rb0;
      const cpuBatches = (await ingestBatches(r.urls)) - b0;
      const phase: CpuPhase = {
        rate: CPU_RATE,
        seconds: CPU_S,
        pcs: cpuPcs,
        load: `${cpuLoad0} → ${loadAverage()}`,
        hoGross: (1000 * (c1.ho - c0.ho)) / cpuStored,
        ho: net('ho'),
        pg: net('pg'),
        mq: net('mq'),
        idleShare: idlePerS,
        ackP50: percentile(cpuWin.lat, 0.5),
        ackP99: cpuWin.failed + cpuDrain.left > 0 ? Number.POSITIVE_INFINITY : percentile(cpuWin.lat, 0.99),
        storedP50: percentile(storedLat, 0.5),
        storedP99: percentile(storedLat, 0.99),
        storedSamples: storedLat.length,
        lost: cpuWin.published - cpuStored,
        rollbacks: cpuRollbacks,
        perBatch: cpuStored / cpuBatches,
      };
      progress(
        `CPU per visit: head office ${phase.hoGross.toFixed(3)} ms gross, ${phase.ho.toFixed(3)} ms net of idle (${(idlePerS.ho * 100).toFixed(1)} % of a core idle); PostgreSQL ${phase.pg.toFixed(3)} ms; Mosquitto ${phase.mq.toFixed(3)} ms; PUBACK p99 ${ms(phase.ackP99)} ms; stored p99 ${ms(phase.storedP99)} ms; lost ${phase.lost}; transactions rolled back ${phase.rollbacks}; ${phase.perBatch.toFixed(1)} visits a transaction`,
      );
      return phase;
    };
    const cpu = withCpu ? await cpuPhase() : undefined;

    const results: StepResult[] = [];
    const rssSamples: { t: number; rss: number | undefined; customers: number }[] = [];
    const rss = () => r.pids.map((pid) => rssBytes(pid));
    const steps = MINUTES > 0 ? [LONG_PCS] : stepList;
    const stepS = MINUTES > 0 ? MINUTES * 60 : STEP_S;
    for (const pcs of steps) {
      if (load.pcs.length < pcs) {
        progress(`enrolling shop PCs ${load.pcs.length + 1}-${pcs}`);
        await load.connect(await enrol(url, token, companySlug, load.pcs.length, pcs, enrolWidth));
      }
      const rate = pcs * CAMERAS * PER_CAMERA;
      progress(`step: ${pcs} shop PCs x ${CAMERAS} cameras, ${rate} visits/s for ${stepS} s (load ${loadAverage()})`);
      const load0 = loadAverage();
      const rssStart = rss();
      const customers0 = await r.customers(companyId);
      const st0 = await stored();
      const rbs0 = await rollbacks();
      const sb0 = await ingestBatches(rig.urls);
      const k0 = cpuNow(rig);
      const t0 = performance.now();
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      clock?.take();
      load.start(pcs, rate);
      const sample = async () => {
        const t = (performance.now() - t0) / 1000;
        const at = rssBytes(r.pids[0]!);
        rssSamples.push({ t, rss: at, customers: await r.customers(companyId) });
      };
      if (MINUTES > 0) await sample();
      const sampler = setInterval(() => void sample(), 30_000);
      await sleep(stepS * 1000);
      load.stop();
      clearInterval(sampler);
      const publishS = (performance.now() - t0) / 1000;
      const w = load.take();
      const { left, got } = await drain(st0, w.published);
      const k1 = cpuNow(rig);
      const wall = (performance.now() - t0) / 1000;
      const lat = clock?.take() ?? [];
      lag.disable();
      const rss1 = rss();
      const late = got < w.published ? (await drain(st0, w.published, BACKLOG_MS)).got - got : 0;
      await sleep(1000); // the rolled-back transactions' statistics
      const stepRollbacks = (await rollbacks()) - rbs0;
      const stepBatches = (await ingestBatches(rig.urls)) - sb0;
      const customers1 = await r.customers(companyId);
      const per = (k: 'ho' | 'pg' | 'mq') => (1000 * (k1[k] - k0[k])) / Math.max(1, got);
      const res: StepResult = {
        pcs,
        rate,
        visitsPerSecond: w.published / publishS,
        published: w.published,
        stored: got,
        lost: w.published - got,
        late,
        p50: percentile(w.lat, 0.5),
        p99: w.failed + left > 0 ? Number.POSITIVE_INFINITY : percentile(w.lat, 0.99),
        storedP50: percentile(lat, 0.5),
        storedP99: percentile(lat, 0.99),
        ho: per('ho'),
        pg: per('pg'),
        mq: per('mq'),
        hoShare: (k1.ho - k0.ho) / wall,
        rssStart,
        rssEnd: rss1,
        rollbacks: stepRollbacks,
        perBatch: got / stepBatches,
        stalls: stalls(w.slow),
        customers: [customers0, customers1],
        load: `${load0} → ${loadAverage()}`,
        genLag: lag.percentile(99) / 1e6,
        ok: false,
      };
      const worst = clock ? Math.max(res.p99, Number.isNaN(res.storedP99) ? Number.POSITIVE_INFINITY : res.storedP99) : res.p99;
      res.ok = res.lost === 0 && worst < P99_LIMIT;
      results.push(res);
      if (res.stalls.length > 0) progress(`  PUBACKs of ${SLOW_MS} ms or more, by 10-s window (UTC): ${res.stalls.join('; ')}`);
      progress(
        `  ${res.visitsPerSecond.toFixed(0)} visits/s, lost ${res.lost} (${res.late} of them stored later), PUBACK p50/p99 ${ms(res.p50)}/${ms(res.p99)} ms, stored p50/p99 ${ms(res.storedP50)}/${ms(res.storedP99)} ms, CPU ms/visit head office ${res.ho.toFixed(3)} (${(100 * res.hoShare).toFixed(0)} % of a core), customers ${customers0} → ${customers1}, PostgreSQL ${res.pg.toFixed(3)}, Mosquitto ${res.mq.toFixed(3)}; transactions rolled back ${res.rollbacks}; ${res.perBatch.toFixed(1)} visits a transaction; load generator's loop delay p99 ${ms(res.genLag)} ms`,
      );
      if (!res.ok) break;
      await sleep(3_000);
    }
    return { setup, cpu, steps: results, rssSamples, streamed: clock !== undefined };
  } finally {
    clock?.close();
    await load?.close();
    await rig?.close();
    // With SCALE_RUNS, each setup's logs apart: <file>-postgres-mosquitto-2, <file>-postgres-mosquitto-2.2.
    const keep = process.env.SCALE_KEEP_LOG && (process.env.SCALE_RUNS ? `${process.env.SCALE_KEEP_LOG}-${setup.store}-${setup.broker}-${setup.processes}` : process.env.SCALE_KEEP_LOG);
    if (keep && rig) rig.logs.forEach((log, i) => fs.copyFileSync(log, i === 0 ? keep : `${keep}.${i + 1}`));
    if (keep && rig?.postgresLog) fs.writeFileSync(`${keep}.postgres`, rig.postgresLog());
    if (profileDir) progress(`CPU profile of head office: ${profileDir}`);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

export async function run(): Promise<string> {
  const measured: Measured[] = [];
  for (const s of setups()) {
    if (!FRESH) {
      measured.push(await measure(s, STEPS, true));
      continue;
    }
    // Each step on a head office of its own, up to the first that fails; the fixed-rate phase on the first.
    let all: Measured | undefined;
    for (const pcs of STEPS) {
      const one = await measure(s, [pcs], all === undefined);
      all = all ? { ...all, steps: [...all.steps, ...one.steps] } : one;
      if (!one.steps.every((r) => r.ok)) break;
    }
    measured.push(all!);
  }
  return report(measured, { steps: STEPS, stepS: STEP_S, minutes: MINUTES, pin: PIN, newShare: NEW_SHARE, faceShare: FACE_SHARE, p99Limit: P99_LIMIT, fresh: FRESH });
}

/** The slow PUBACKs by the 10-s window they were published in (UTC): when head office stalled, to find in its log. */
function stalls(slow: readonly { at: number; ms: number }[]): string[] {
  const by = new Map<number, { n: number; max: number }>();
  for (const x of slow) {
    const k = Math.floor(x.at / 10_000) * 10_000;
    const b = by.get(k) ?? { n: 0, max: 0 };
    b.n++;
    b.max = Math.max(b.max, x.ms);
    by.set(k, b);
  }
  return [...by].sort((a, b) => a[0] - b[0]).map(([k, b]) => `${new Date(k).toISOString().slice(11, 19)} ${b.n} (max ${Math.round(b.max)} ms)`);
}
