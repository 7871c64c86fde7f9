/**
 * Scale benchmark (`npm run bench -- scale`, issue 27 item 5): the embedded box's ceiling. Head office as `npm start`
 * runs it (the built CLI, its own process, the default log level into a file, the embedded SQLite and aedes), one
 * chain of shops with a 20,000-customer gallery. This process simulates the shop PCs (mqtt.js, one connection each):
 * each has 4 cameras and publishes 0.4 visits a second (QoS 1, PUBACK once stored) and a heartbeat every 30 s (QoS 0).
 *
 * 1. CPU per ingested visit: head office's own process CPU (/proc/<pid>/stat: both its threads, not this process)
 *    over SCALE_CPU_S seconds at a fixed moderate SCALE_CPU_RATE visits a second, less its idle CPU over the same
 *    time measured just before (so the figure does not follow the machine's load or the rate).
 * 2. Steps: SCALE_STEPS shop PCs (default 200,500,1000,1500,2000), each SCALE_STEP_S seconds (default 60): visits a
 *    second, lost (published and never stored), PUBACK p50 / p99, head office CPU per visit, RSS at the step's start
 *    and end, the load average. Stops at the first step that loses a visit or has p99 >= 250 ms: the ceiling is the
 *    step before it.
 * SCALE_MINUTES=10: instead of the steps, one run at SCALE_PCS (default 1000) shop PCs for that many minutes,
 * RSS and the company's customers every 30 s (is memory flat? head office keeps every customer's template in memory
 * for matching, so it grows with the new people: the run says by how much per new customer).
 * SCALE_NEW: the share of visits that are new people (default 0.3; the rest of the 90 % with a face are returning).
 * SCALE_PROFILE=1 runs head office under `node --cpu-prof` (profile written to the printed folder on exit).
 * SCALE_KEEP_LOG=<file> keeps head office's log there.
 * SCALE_PIN=1 pins head office to core 0 and this process (the load generator) to core 1 (taskset).
 *
 * Visits: 60 % returning customers (a sighting of a gallery face at cosine 0.74-0.9), 30 % new people, 10 % faces
 * under the gate (no embedding); each visit id is new, so lost = published - stored (the sightings table, read at
 * the end of each step; its key (company, visit_id) means a visit cannot be stored twice).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { connectAsync, type MqttClient } from 'mqtt';
import { encodeEmbedding } from '../shared/messages.js';
import { upTopic } from '../shared/topics.js';
import { Faces } from '../server/identity/synthetic.js';
import { DIM, templateToBlob } from '../server/identity/vector.js';
import { api, startHeadOffice, type Proc } from './api.js';
import { cpuSeconds, rssBytes } from './proc.js';
import { BENCH_ADMIN, loadAverage, ms, percentile, progress, table } from './util.js';

const GALLERY = 20_000;
const MODEL = 'bench-model';
const CAMERAS = 4;
/** Visits a second per camera (a busy shop door: 360 passes an hour). */
const PER_CAMERA = 0.1;
const HEARTBEAT_S = 30;
const STEPS = (process.env.SCALE_STEPS ?? '200,500,1000,1500,2000').split(',').map(Number);
const STEP_S = Number(process.env.SCALE_STEP_S ?? 60);
const CPU_RATE = Number(process.env.SCALE_CPU_RATE ?? 300);
const CPU_S = Number(process.env.SCALE_CPU_S ?? 30);
const MINUTES = Number(process.env.SCALE_MINUTES ?? 0);
const LONG_PCS = Number(process.env.SCALE_PCS ?? 1000);
const PROFILE = process.env.SCALE_PROFILE === '1';
const PIN = process.env.SCALE_PIN === '1';
const NEW_SHARE = Math.min(0.9, Math.max(0, Number(process.env.SCALE_NEW ?? 0.3)));
const P99_LIMIT = 250;
/** Waiting for the last PUBACKs of a step. */
const GRACE_MS = 15_000;

interface Pc {
  client: MqttClient;
  visitTopic: string;
  heartbeatTopic: string;
}

interface Window {
  published: number;
  acked: number;
  failed: number;
  lat: number[];
}

const newWindow = (): Window => ({ published: 0, acked: 0, failed: 0, lat: [] });

/** The visits' content: gallery faces (returning), new faces, no face. */
class Visits {
  private readonly faces = new Faces(99);
  constructor(private readonly gallery: Float32Array) {}

  payload(): string {
    const r = this.faces.rng.uniform();
    const at = new Date().toISOString();
    const cam = `cam-${1 + Math.floor(this.faces.rng.uniform() * CAMERAS)}`;
    let face = '';
    let quality = 0.2;
    let gate = false;
    if (r < 0.9) {
      const e =
        r < 0.9 - NEW_SHARE ? this.faces.sighting(this.gallery, 0.74 + 0.16 * this.faces.rng.uniform(), Math.floor(this.faces.rng.uniform() * GALLERY)) : this.faces.identity();
      face = `,"embedding":"${encodeEmbedding(e)}","recognition_model":"${MODEL}"`;
      quality = 0.8;
      gate = true;
    }
    return `{"visit_id":"${randomUUID()}","occurred_at":"${at}","camera_id":"${cam}","quality":${quality},"passed_gate":${gate}${face},"attributes":{"gender":"female","age":31,"emotion":"neutral"},"track":{"id":"t-${randomUUID().slice(0, 8)}","first_seen_at":"${at}","last_seen_at":"${at}","frames":20}}`;
  }
}

function heartbeat(): string {
  return JSON.stringify({
    sent_at: new Date().toISOString(),
    agent_version: 'bench',
    recognition_model: MODEL,
    recognition_running: true,
    cameras_up: CAMERAS,
    cameras_total: CAMERAS,
    queued: 0,
    dropped: 0,
    fraction_below_gate: 0.1,
  });
}

/** Runs `n` tasks with at most `width` at once. */
async function pool<T>(n: number, width: number, f: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await f(i);
      }
    }),
  );
  return out;
}

class Load {
  readonly pcs: Pc[] = [];
  private timer: NodeJS.Timeout | undefined;
  private window = newWindow();
  private inFlight = 0;
  private hbNext = 0;

  constructor(
    private readonly visits: Visits,
    private readonly mqttPort: number,
  ) {}

  async connect(logins: { username: string; password: string; client_id: string; visitTopic: string; heartbeatTopic: string }[]): Promise<void> {
    const more = await pool(logins.length, 50, async (i) => {
      const l = logins[i]!;
      const client = await connectAsync(`mqtt://127.0.0.1:${this.mqttPort}`, { username: l.username, password: l.password, clientId: l.client_id, reconnectPeriod: 0, keepalive: 120 });
      return { client, visitTopic: l.visitTopic, heartbeatTopic: l.heartbeatTopic };
    });
    this.pcs.push(...more);
  }

  /** Publishes `perSecond` visits a second spread over the first `pcs` shop PCs, and their heartbeats; every 20 ms. */
  start(pcs: number, perSecond: number): void {
    this.stop();
    const t0 = performance.now();
    let sent = 0;
    let hbSent = 0;
    let rr = 0;
    const hbPerSecond = pcs / HEARTBEAT_S;
    this.timer = setInterval(() => {
      const s = (performance.now() - t0) / 1000;
      const due = Math.floor(s * perSecond);
      for (; sent < due; sent++) {
        const pc = this.pcs[rr++ % pcs]!;
        this.publish(pc);
      }
      const hbDue = Math.floor(s * hbPerSecond);
      for (; hbSent < hbDue; hbSent++) {
        const pc = this.pcs[this.hbNext++ % pcs]!;
        pc.client.publish(pc.heartbeatTopic, heartbeat(), { qos: 0 });
      }
    }, 20);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The counts since the last call; a new window starts. */
  take(): Window {
    const w = this.window;
    this.window = newWindow();
    return w;
  }

  async settled(timeoutMs: number): Promise<number> {
    const until = Date.now() + timeoutMs;
    while (this.inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    return this.inFlight;
  }

  async close(): Promise<void> {
    this.stop();
    await Promise.all(this.pcs.map((p) => p.client.endAsync(true).catch(() => undefined)));
  }

  private publish(pc: Pc): void {
    const w = this.window;
    const at = performance.now();
    w.published++;
    this.inFlight++;
    pc.client.publish(pc.visitTopic, this.visits.payload(), { qos: 1 }, (err) => {
      this.inFlight--;
      if (err) w.failed++;
      else {
        w.acked++;
        w.lat.push(performance.now() - at);
      }
    });
  }
}

interface Enrolled {
  username: string;
  password: string;
  client_id: string;
  visitTopic: string;
  heartbeatTopic: string;
}

async function enrol(url: string, token: string, companySlug: string, from: number, to: number): Promise<Enrolled[]> {
  return pool(to - from, 8, async (k) => {
    const i = from + k;
    const shop = await api(url, 'POST', '/api/sites', { name: `Shop ${i + 1}` }, token);
    const code = (await api(url, 'POST', `/api/sites/${shop.slug}/enrolment-code`, {}, token)).code;
    const enrolled = (await api(url, 'POST', '/api/agent/enrol', { code, hostname: `pc-${i}` })) as unknown as { broker: { username: string; password: string; client_id: string } };
    return { ...enrolled.broker, visitTopic: upTopic(companySlug, shop.slug!, 'visit'), heartbeatTopic: upTopic(companySlug, shop.slug!, 'heartbeat') };
  });
}

function pin(pid: number, cpu: number): void {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
  } catch {
    progress(`taskset failed for ${pid}; not pinned`);
  }
}

const mib = (b: number | undefined) => (b === undefined ? '-' : (b / 2 ** 20).toFixed(0));

interface StepResult {
  pcs: number;
  rate: number;
  visitsPerSecond: number;
  published: number;
  stored: number;
  lost: number;
  p50: number;
  p99: number;
  cpuMsPerVisit: number;
  cpuShare: number;
  rssStart: number | undefined;
  rssEnd: number | undefined;
  load: string;
  /** The load generator's own event-loop delay p99 (ms): its stalls count in the PUBACK latency too. */
  genLag: number;
  ok: boolean;
}

export async function run(): Promise<string> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-scale-'));
  const profileDir = PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-scale-prof-')) : undefined;
  let server: Proc | undefined;
  let load: Load | undefined;
  try {
    server = await startHeadOffice(tmp, profileDir);
    const pid = server.child.pid!;
    if (PIN) {
      pin(pid, 0);
      pin(process.pid, 1);
    }
    const url = server.url;
    const mqttPort = Number(/"mqtt_port":(\d+)/.exec(fs.readFileSync(path.join(tmp, 'server.log'), 'utf8'))![1]);
    const admin = (await api(url, 'POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token!;
    const company = await api(url, 'POST', '/api/admin/clients', { company_name: 'Bench Chain', owner_email: 'owner@bench.test', owner_name: 'Owner' }, admin);
    const token = (await api(url, 'POST', '/api/auth/login', { email: 'owner@bench.test', password: company.password })).access_token!;
    const companySlug = company.slug!;
    const companyId = company.client_id!;

    progress(`gallery: ${GALLERY.toLocaleString('en')} customers`);
    const gallery = new Faces(7).identities(GALLERY);
    const db = new Database(path.join(tmp, 'footfall.db'));
    db.pragma('busy_timeout = 10000');
    const insert = db.prepare(
      'insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at) values (?, ?, ?, ?, ?, 3, 3, ?, ?, ?)',
    );
    const now = new Date(Date.now() - 86_400_000).toISOString();
    db.transaction(() => {
      for (let i = 0; i < GALLERY; i++) insert.run(randomUUID(), companyId, i + 1, MODEL, templateToBlob(gallery.subarray(i * DIM, (i + 1) * DIM)), now, now, now);
    })();
    const storedCount = db.prepare('select count(*) as n from sightings where company_id = ?');
    const stored = () => (storedCount.get(companyId) as { n: number }).n;
    const customerCount = db.prepare('select count(*) as n from customers where company_id = ?');
    const customers = () => (customerCount.get(companyId) as { n: number }).n;

    const maxPcs = MINUTES > 0 ? LONG_PCS : Math.max(...STEPS);
    const cpuPcs = Math.min(200, maxPcs);
    progress(`enrolling ${cpuPcs} shop PCs`);
    const logins = await enrol(url, token, companySlug, 0, cpuPcs);
    load = new Load(new Visits(gallery), mqttPort);
    await load.connect(logins);

    // Warm-up: the gallery is loaded on the first visit; JIT.
    progress('warm-up: 20 s');
    load.start(cpuPcs, CPU_RATE);
    await new Promise((r) => setTimeout(r, 20_000));
    load.stop();
    await load.settled(GRACE_MS);
    load.take();

    // 1. CPU per visit at a fixed rate, idle subtracted.
    progress(`idle: ${CPU_S} s`);
    await new Promise((r) => setTimeout(r, 2_000));
    const idle0 = cpuSeconds(pid)!;
    const it0 = performance.now();
    await new Promise((r) => setTimeout(r, CPU_S * 1000));
    const idlePerS = (cpuSeconds(pid)! - idle0) / ((performance.now() - it0) / 1000);
    progress(`fixed rate: ${CPU_RATE} visits/s for ${CPU_S} s from ${cpuPcs} shop PCs`);
    const cpuLoad0 = loadAverage();
    const c0 = cpuSeconds(pid)!;
    const s0 = stored();
    const ct0 = performance.now();
    load.start(cpuPcs, CPU_RATE);
    await new Promise((r) => setTimeout(r, CPU_S * 1000));
    load.stop();
    await load.settled(GRACE_MS);
    const cpuWall = (performance.now() - ct0) / 1000;
    const cpuUsed = cpuSeconds(pid)! - c0;
    const cpuWin = load.take();
    const cpuStored = stored() - s0;
    const grossMs = (1000 * cpuUsed) / cpuStored;
    const netMs = (1000 * (cpuUsed - idlePerS * cpuWall)) / cpuStored;
    const cpuLoad1 = loadAverage();
    progress(`CPU per visit: ${grossMs.toFixed(3)} ms gross, ${netMs.toFixed(3)} ms net of idle (${(idlePerS * 100).toFixed(1)} % of a core idle); p99 ${ms(percentile(cpuWin.lat, 0.99))} ms`);

    const results: StepResult[] = [];
    const rssSamples: { t: number; rss: number | undefined; customers: number }[] = [];
    const steps = MINUTES > 0 ? [LONG_PCS] : STEPS;
    const stepS = MINUTES > 0 ? MINUTES * 60 : STEP_S;
    for (const pcs of steps) {
      if (load.pcs.length < pcs) {
        progress(`enrolling shop PCs ${load.pcs.length + 1}-${pcs}`);
        await load.connect(await enrol(url, token, companySlug, load.pcs.length, pcs));
      }
      const rate = pcs * CAMERAS * PER_CAMERA;
      progress(`step: ${pcs} shop PCs x ${CAMERAS} cameras, ${rate} visits/s for ${stepS} s (load ${loadAverage()})`);
      const load0 = loadAverage();
      const rssStart = rssBytes(pid);
      const st0 = stored();
      const k0 = cpuSeconds(pid)!;
      const t0 = performance.now();
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      load.start(pcs, rate);
      if (MINUTES > 0) rssSamples.push({ t: 0, rss: rssStart, customers: customers() });
      const sampler = setInterval(() => rssSamples.push({ t: (performance.now() - t0) / 1000, rss: rssBytes(pid), customers: customers() }), 30_000);
      await new Promise((r) => setTimeout(r, stepS * 1000));
      load.stop();
      clearInterval(sampler);
      const publishS = (performance.now() - t0) / 1000;
      const left = await load.settled(GRACE_MS);
      const cpu = cpuSeconds(pid)! - k0;
      const wall = (performance.now() - t0) / 1000;
      const w = load.take();
      const got = stored() - st0;
      const rssEnd = rssBytes(pid);
      lag.disable();
      const r: StepResult = {
        pcs,
        rate,
        visitsPerSecond: w.published / publishS,
        published: w.published,
        stored: got,
        lost: w.published - got,
        p50: percentile(w.lat, 0.5),
        p99: w.failed + left > 0 ? Number.POSITIVE_INFINITY : percentile(w.lat, 0.99),
        cpuMsPerVisit: (1000 * cpu) / Math.max(1, got),
        cpuShare: cpu / wall,
        rssStart,
        rssEnd,
        load: `${load0} → ${loadAverage()}`,
        genLag: lag.percentile(99) / 1e6,
        ok: false,
      };
      r.ok = r.lost === 0 && r.p99 < P99_LIMIT;
      results.push(r);
      progress(
        `  ${r.visitsPerSecond.toFixed(0)} visits/s, lost ${r.lost}, p50/p99 ${ms(r.p50)}/${ms(r.p99)} ms, CPU ${r.cpuMsPerVisit.toFixed(3)} ms/visit (${(100 * r.cpuShare).toFixed(0)} % of a core), RSS ${mib(rssStart)} → ${mib(rssEnd)} MiB, load generator's event-loop delay p99 ${ms(r.genLag)} ms`,
      );
      if (!r.ok) break;
      await new Promise((r) => setTimeout(r, 3_000));
    }
    db.close();
    const passed = results.filter((r) => r.ok);
    const ceiling = passed.length === results.length && MINUTES === 0 ? `at least ${passed.at(-1)?.pcs ?? 0}` : `${passed.at(-1)?.pcs ?? 'under ' + steps[0]}`;

    const lines = [
      '## Scale: the embedded box (head office, SQLite, aedes)',
      '',
      `Head office as \`npm start\` runs it (built CLI, own process, default log level to a file); one chain, ${GALLERY.toLocaleString('en')}-customer gallery;`,
      `this process simulates the shop PCs (mqtt.js, one connection each; ${CAMERAS} cameras x ${PER_CAMERA} visits/s each = ${CAMERAS * PER_CAMERA} visits/s per shop PC,`,
      `QoS 1, PUBACK once stored; a heartbeat every ${HEARTBEAT_S} s). Visits: ${Math.round(100 * (0.9 - NEW_SHARE))} % returning, ${Math.round(100 * NEW_SHARE)} % new people, 10 % no face.`,
      `**A shared box**: ${os.cpus().length} cores shared with other sessions' work, load generator and head office on the same cores${PIN ? ' (pinned: head office core 0, load generator core 1)' : ''}; the load average is beside every figure.`,
      '',
      `**Head office CPU per ingested visit** (its own process, /proc; ${CPU_RATE} visits/s for ${CPU_S} s from ${cpuPcs} shop PCs; load ${cpuLoad0} → ${cpuLoad1}):`,
      `${grossMs.toFixed(3)} ms gross, **${netMs.toFixed(3)} ms** net of its idle CPU (${(100 * idlePerS).toFixed(1)} % of a core, measured ${CPU_S} s just before);`,
      `${Math.round(1000 / netMs).toLocaleString('en')} visits a second per core. PUBACK p50 / p99 at that rate: ${ms(percentile(cpuWin.lat, 0.5))} / ${ms(percentile(cpuWin.lat, 0.99))} ms; lost ${cpuWin.published - cpuStored}.`,
      '',
      table(
        ['shop PCs x 4 cameras', 'visits/s', 'lost', 'PUBACK p50 / p99 (ms)', 'head office CPU ms/visit', 'share of a core', 'RSS start → end (MiB)', 'load average (1/5/15 min)', "load generator's loop delay p99 (ms)", 'verdict'],
        results.map((r) => [
          r.pcs.toLocaleString('en'),
          r.visitsPerSecond.toFixed(0),
          r.lost,
          `${ms(r.p50)} / ${ms(r.p99)}`,
          r.cpuMsPerVisit.toFixed(3),
          `${(100 * r.cpuShare).toFixed(0)} %`,
          `${mib(r.rssStart)} → ${mib(r.rssEnd)}`,
          r.load,
          ms(r.genLag),
          r.ok ? 'held' : '**failed**',
        ]),
      ),
      '',
    ];
    if (MINUTES > 0) {
      const first = rssSamples[0];
      const last = rssSamples.at(-1);
      const added = (last?.customers ?? 0) - (first?.customers ?? 0);
      const grew = (last?.rss ?? 0) - (first?.rss ?? 0);
      lines.push(
        `RSS over ${MINUTES} minutes (every 30 s, MiB): ${rssSamples.map((s) => mib(s.rss)).join(', ')}.`,
        `Customers meanwhile: ${first?.customers.toLocaleString('en')} → ${last?.customers.toLocaleString('en')} (${added.toLocaleString('en')} new people). ` +
          (added > 0 ? `RSS grew ${mib(grew)} MiB, ${(grew / added / 1024).toFixed(2)} KiB per new customer (head office keeps each customer's 512-d template in memory for matching: 2 KiB of floats).` : `RSS grew ${mib(grew)} MiB with no new customer.`),
        '',
      );
    } else {
      lines.push(`Steps of ${STEP_S} s; a step fails when a visit is lost or the PUBACK p99 reaches ${P99_LIMIT} ms. **Ceiling: ${ceiling} shop PCs x ${CAMERAS} cameras.**`);
    }
    return lines.join('\n');
  } finally {
    await load?.close();
    if (server) {
      server.child.kill('SIGTERM');
      const killer = setTimeout(() => server!.child.kill('SIGKILL'), 15_000);
      await server.exit;
      clearTimeout(killer);
    }
    if (profileDir) progress(`CPU profile of head office: ${profileDir}`);
    if (process.env.SCALE_KEEP_LOG) fs.copyFileSync(path.join(tmp, 'server.log'), process.env.SCALE_KEEP_LOG);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
