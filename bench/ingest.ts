/**
 * Visit ingest benchmark (`npm run bench -- ingest`): visits per second from an MQTT publish by a shop PC to
 * visible in GET /api/visits and on the SSE stream, with a 10k-customer gallery, and the publish-to-SSE latency at a
 * steady 2,000 visits/s (goals: >= 2,000/s, p99 < 250 ms, nothing lost). Measured side by side in the same run:
 * raw aedes publish throughput (same payloads, a subscriber that only counts) and batched SQLite insert throughput
 * (the visits table, the ingest's batch size), and the pipeline as a ratio of each.
 *
 * Head office runs in a worker thread (its own event loop, as in production); the load generator (MQTT client, SSE
 * reader, feed poller) runs on the main thread.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { connectAsync, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { encodeEmbedding, type VisitMessage } from '../shared/messages.js';
import { upTopic } from '../shared/topics.js';
import { Faces } from '../server/identity/synthetic.js';
import { DIM, templateToBlob } from '../server/identity/vector.js';
import { BENCH_ADMIN, benchServerSettings, ms, percentile, progress, table } from './util.js';
import { sqliteOf } from '../server/db/open.js';

interface BrokerLogin {
  username: string;
  password: string;
  client_id: string;
}

const GALLERY = 10_000;
/** Shop PCs publishing at once (one MQTT connection each); the visits are dealt out among them. */
const SHOPS = 20;
const BURST = Number(process.env.BENCH_BURST ?? 20_000);
const RATE = 2_000;
const PACED_S = Number(process.env.BENCH_PACED_S ?? 10);
const SQLITE_ROWS = 50_000;
const SQLITE_BATCH = 256;
const MODEL = 'bench-model';
const SEED = 7;
/** Pause between feed polls unless the last one was full. */
const POLL_PAUSE_MS = 50;

/** How embeddings are made: derived from real face embeddings when the models and photos are at hand. */
interface FaceModel {
  /** Unit direction shared by real faces (their mean), and its weight in each identity. */
  common: number[] | undefined;
  commonWeight: number;
  /** Cosines of a sighting to its person (sqrt of measured same-person pair cosines). */
  sightingCos: number[];
  source: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Shared by both threads: the customers of the gallery, deterministic from the seed.

function identities(model: FaceModel, n: number, seed: number): Float32Array {
  const ids = new Faces(seed).identities(n);
  if (!model.common || model.commonWeight === 0) return ids;
  const a = model.commonWeight;
  const b = Math.sqrt(1 - a * a);
  for (let i = 0; i < n; i++) {
    const o = i * DIM;
    let s = 0;
    for (let d = 0; d < DIM; d++) {
      const x = a * model.common[d]! + b * ids[o + d]!;
      ids[o + d] = x;
      s += x * x;
    }
    const k = 1 / Math.sqrt(s);
    for (let d = 0; d < DIM; d++) ids[o + d]! *= k;
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------------------------
// Worker: head office, the raw aedes broker, the raw SQLite inserts.

type Request =
  | { cmd: 'sqlite' }
  | { cmd: 'aedes-start'; expect: number }
  | { cmd: 'aedes-stop' }
  | { cmd: 'server-start' }
  | { cmd: 'stats' }
  | { cmd: 'stop' };

async function workerMain(): Promise<void> {
  const model = workerData.model as FaceModel;
  const { startServer } = await import('../server/start.js');
  const { loadConfig } = await import('../server/config.js');
  const { openDatabase } = await import('../server/db/open.js');
  const { startEmbeddedBroker: startBroker } = await import('../server/broker/embedded.js');
  const silent = pino({ level: 'silent' });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-bench-ingest-'));
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let aedes: Awaited<ReturnType<typeof startBroker>> | undefined;

  const handlers: Record<Request['cmd'], (r: Request) => Promise<unknown>> = {
    async sqlite() {
      const store = openDatabase(path.join(tmp, 'sqlite-only.db'));
      const now = new Date().toISOString();
      sqliteOf(store).prepare("insert into companies (id, slug, name, active, created_at) values ('c', 'c', 'C', 1, ?)").run(now);
      sqliteOf(store).prepare("insert into shops (id, company_id, slug, name, timezone, created_at, broker_username) values ('s', 'c', 's', 'S', 'UTC', ?, 'c.s')").run(now);
      const insert = sqliteOf(store).prepare(
        'insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, received_at, customer_id, is_new_visitor, similarity, quality, passed_gate, recognition_model, gender, age, emotion, track_id) values (?, ?, ?, ?, ?, ?, null, 0, 0.7, 0.8, 1, ?, ?, ?, ?, ?)',
      );
      const t = performance.now();
      for (let i = 0; i < SQLITE_ROWS; i += SQLITE_BATCH) {
        await store.tx(async () => {
          for (let j = i; j < Math.min(SQLITE_ROWS, i + SQLITE_BATCH); j++) {
            const at = new Date().toISOString();
            insert.run(randomUUID(), 'c', 's', 'entrance', at, at, MODEL, 'female', 31, 'neutral', `t-${j}`);
          }
        });
      }
      const elapsed = performance.now() - t;
      store.close();
      return { perSecond: SQLITE_ROWS / (elapsed / 1000) };
    },
    async 'aedes-start'(req) {
      const r = req as Extract<Request, { cmd: 'aedes-start' }>;
      aedes = await startBroker({ host: '127.0.0.1', port: 0, log: silent });
      aedes.setAuth({ authenticate: () => true, canPublish: () => true, canSubscribe: () => true, logins: async () => [] });
      let n = 0;
      await new Promise<void>((resolve) =>
        aedes!.aedes.subscribe(
          'ff/+/+/up/visit',
          (_packet: unknown, done: () => void) => {
            n++;
            if (n === r.expect) parentPort!.postMessage({ event: 'aedes-done', at: Date.now() });
            done();
          },
          resolve,
        ),
      );
      return { port: aedes.port };
    },
    async 'aedes-stop'() {
      await aedes?.close();
      return {};
    },
    async 'server-start'() {
      // Every published message is its own pass at its own instant; with no gap, none extends another's visit, so each
      // is one arrival on the stream and in the feed (what this benchmark counts), as before visits became stays.
      const config = loadConfig({ ...benchServerSettings(path.join(tmp, 'head-office')), FOOTFALL_VISIT_GAP_S: '0' });
      server = await startServer(config, { log: silent, announce: () => {} });
      const url = server.url;
      const call = async (method: string, p: string, body?: unknown, token?: string) => {
        const res = await fetch(url + p, {
          method,
          headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const json = (await res.json()) as Record<string, string | undefined> & { broker: BrokerLogin };
        if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
        return json;
      };
      const admin = (await call('POST', '/api/auth/login', { email: BENCH_ADMIN.email, password: BENCH_ADMIN.password })).access_token;
      const company = await call('POST', '/api/admin/clients', { company_name: 'Bench Co', owner_email: 'owner@bench.test', owner_name: 'Owner' }, admin);
      const owner = (await call('POST', '/api/auth/login', { email: 'owner@bench.test', password: company.password })).access_token;
      const pcs: { topic: string; broker: BrokerLogin }[] = [];
      for (let i = 0; i < SHOPS; i++) {
        const shop = await call('POST', '/api/sites', { name: `Bench Shop ${i + 1}` }, owner);
        const code = (await call('POST', `/api/sites/${shop.slug}/enrolment-code`, {}, owner)).code;
        const enrolled = await call('POST', '/api/agent/enrol', { code, hostname: `bench-${i}` });
        pcs.push({ topic: upTopic(company.slug!, shop.slug!, 'visit'), broker: enrolled.broker });
      }

      // The 10k-customer gallery, written as ingest would have written it.
      const ids = identities(model, GALLERY, SEED);
      const db = sqliteOf(server.store);
      const now = new Date().toISOString();
      const insert = db.prepare(
        'insert into customers (id, company_id, number, recognition_model, template, template_count, visit_count, first_seen_at, last_seen_at, created_at) values (?, ?, ?, ?, ?, 3, 3, ?, ?, ?)',
      );
      await server.store.tx(async () => {
        for (let i = 0; i < GALLERY; i++) insert.run(randomUUID(), company.client_id, i + 1, MODEL, templateToBlob(ids.subarray(i * DIM, (i + 1) * DIM)), now, now, now);
      });
      return {
        url,
        mqttPort: server.mqttPort,
        token: owner,
        pcs,
        gallery: GALLERY,
      };
    },
    async stats() {
      return { ...server!.ingest.stats };
    },
    async stop() {
      await server?.close();
      fs.rmSync(tmp, { recursive: true, force: true });
      return {};
    },
  };

  parentPort!.on('message', (m: { id: number; req: Request }) => {
    handlers[m.req.cmd](m.req).then(
      (result) => parentPort!.postMessage({ id: m.id, result }),
      (err: unknown) => parentPort!.postMessage({ id: m.id, error: String((err as Error)?.stack ?? err) }),
    );
  });
}

if (!isMainThread && workerData?.role === 'ingest-bench') void workerMain();

// ---------------------------------------------------------------------------------------------------------------
// Main thread: real-face statistics, load generation, measurement.

async function faceModel(): Promise<FaceModel> {
  const fallback: FaceModel = { common: undefined, commonWeight: 0, sightingCos: [0.74, 0.8, 0.85, 0.9], source: 'synthetic (no face models or photos found)' };
  try {
    const { testModelsDir } = await import('../agent/models/test-cache.js');
    const { sharedFacesDir, personOf } = await import('../agent/vision/fixtures.js');
    const dir = sharedFacesDir();
    if (!dir || !fs.existsSync(path.join(testModelsDir(), 'manifest.json'))) return fallback;
    const { InlineEngine } = await import('../agent/vision/engine.js');
    const { loadImage } = await import('../agent/vision/io.js');
    const engine = await InlineEngine.create({ modelsDir: testModelsDir() });
    const faces: { person: string; e: Float32Array }[] = [];
    try {
      for (const f of fs.readdirSync(dir).filter((x) => /\.(jpe?g|png)$/i.test(x) && !x.startsWith('group'))) {
        const found = (await engine.analyze(await loadImage(path.join(dir, f)))).faces[0];
        if (found?.passesGate) faces.push({ person: personOf(f), e: await engine.embed(found.aligned) });
      }
    } finally {
      await engine.close();
    }
    const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
    const same: number[] = [];
    const diff: number[] = [];
    for (let i = 0; i < faces.length; i++) for (let j = i + 1; j < faces.length; j++) (faces[i]!.person === faces[j]!.person ? same : diff).push(dot(faces[i]!.e, faces[j]!.e));
    if (same.length < 3 || diff.length < 3) return fallback;
    const mean = new Float32Array(DIM);
    for (const f of faces) for (let d = 0; d < DIM; d++) mean[d]! += f.e[d]!;
    const norm = Math.sqrt(mean.reduce((s, x) => s + x * x, 0));
    const meanDiff = diff.reduce((s, x) => s + x, 0) / diff.length;
    return {
      common: [...mean].map((x) => x / norm),
      commonWeight: Math.sqrt(Math.max(0, meanDiff)),
      sightingCos: same.map((c) => Math.sqrt(Math.max(0, c))),
      source:
        `derived from ${faces.length} real fr_feature embeddings of ../shared/faces: identities share the real faces' mean direction ` +
        `(different people at cosine ${meanDiff.toFixed(2)} on average, as measured), sightings sit at the square root of the ${same.length} measured same-person pair cosines ` +
        `(${Math.min(...same).toFixed(2)} to ${Math.max(...same).toFixed(2)}), so two sightings of one person compare like two real photos`,
    };
  } catch (err) {
    return { ...fallback, source: `synthetic (real faces unavailable: ${(err as Error).message})` };
  }
}

class Thread {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly events: { event: string; at: number }[] = [];
  private readonly listeners: ((e: { event: string; at: number }) => void)[] = [];

  constructor(readonly worker: Worker) {
    worker.on('message', (m: { id: number; result?: unknown; error?: string; event?: string; at: number }) => {
      if (m.event) {
        const e = { event: m.event, at: m.at };
        this.events.push(e);
        for (const l of this.listeners) l(e);
        return;
      }
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error) w?.reject(new Error(m.error));
      else w?.resolve(m.result);
    });
  }

  call<T = unknown>(req: Request): Promise<T> {
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: (v) => resolve(v as T), reject });
      this.worker.postMessage({ id, req });
    });
  }

  once(event: string): Promise<{ event: string; at: number }> {
    const seen = this.events.find((e) => e.event === event);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.listeners.push((e) => e.event === event && resolve(e)));
  }
}

/** The visits to publish: 60 % returning customers, 30 % new people, 10 % footfall without a usable face. */
function makeVisits(model: FaceModel, n: number, seed: number): { id: string; payload: string }[] {
  const faces = new Faces(seed);
  const gallery = identities(model, GALLERY, SEED);
  const strangers = identities(model, n, seed + 1000);
  let s = 0;
  const out: { id: string; payload: string }[] = [];
  const start = Date.now() - n * 10;
  for (let i = 0; i < n; i++) {
    const r = faces.rng.uniform();
    const at = new Date(start + i * 10).toISOString(); // distinct instants: no two passes overlap
    const base: VisitMessage = {
      visit_id: randomUUID(),
      occurred_at: at,
      camera_id: i % 3 === 0 ? 'till' : 'entrance',
      quality: 0.8,
      passed_gate: true,
      attributes: { gender: 'female', age: 31, emotion: 'neutral' },
      track: { id: `t-${i}`, first_seen_at: at, last_seen_at: at, frames: 20 },
    };
    let msg: VisitMessage;
    if (r < 0.6) {
      const who = Math.floor(faces.rng.uniform() * GALLERY);
      const cos = model.sightingCos[Math.floor(faces.rng.uniform() * model.sightingCos.length)]!;
      msg = { ...base, embedding: encodeEmbedding(faces.sighting(gallery, cos, who)), recognition_model: MODEL };
    } else if (r < 0.9) {
      msg = { ...base, embedding: encodeEmbedding(strangers.subarray(s * DIM, ++s * DIM)), recognition_model: MODEL };
    } else {
      msg = { ...base, quality: 0.2, passed_gate: false };
    }
    out.push({ id: msg.visit_id, payload: JSON.stringify(msg) });
  }
  return out;
}

/** Reads the SSE stream; records when each visit_id arrived (performance.now()). */
async function openStream(url: string, token: string, seen: Map<string, number>): Promise<AbortController> {
  const ac = new AbortController();
  const res = await fetch(`${url}/api/visits/stream`, { headers: { Authorization: `Bearer ${token}` }, signal: ac.signal });
  if (!res.ok) throw new Error(`stream: ${res.status}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      const now = performance.now();
      buf += decoder.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const m = /"visit_id":"([^"]+)"/.exec(block);
        if (m && !seen.has(m[1]!)) seen.set(m[1]!, now);
      }
    }
  })();
  return ac;
}

/** Polls GET /api/visits from a cursor until `ids` are all seen; returns when (performance.now()) and how many. */
async function pollFeed(url: string, token: string, cursor: string, ids: Set<string>, deadline: number): Promise<{ at: number; seen: number; polls: number }> {
  const seen = new Set<string>();
  let polls = 0;
  while (seen.size < ids.size && performance.now() < deadline) {
    const res = await fetch(`${url}/api/visits?limit=1000&cursor=${cursor}`, { headers: { Authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { arrivals: { visit_id: string }[]; cursor: string };
    polls++;
    for (const a of body.arrivals) if (ids.has(a.visit_id)) seen.add(a.visit_id);
    cursor = body.cursor;
    // A client polling in a loop with a short pause (a dashboard would wait longer).
    if (body.arrivals.length < 1000) await new Promise((r) => setTimeout(r, POLL_PAUSE_MS));
  }
  return { at: performance.now(), seen: seen.size, polls };
}

async function connect(port: number, broker: { username: string; password: string; client_id: string }): Promise<MqttClient> {
  return connectAsync(`mqtt://127.0.0.1:${port}`, { username: broker.username, password: broker.password, clientId: broker.client_id, reconnectPeriod: 0 });
}

interface Pc {
  client: MqttClient;
  topic: string;
}

/** Publishes every payload at once (QoS 1), dealt out among the shop PCs; resolves when all PUBACKs are in. */
function publishAll(pcs: Pc[], visits: { id: string; payload: string }[], sentAt: Map<string, number>): Promise<void> {
  return new Promise((resolve, reject) => {
    let left = visits.length;
    visits.forEach((v, i) => {
      const pc = pcs[i % pcs.length]!;
      sentAt.set(v.id, performance.now());
      pc.client.publish(pc.topic, v.payload, { qos: 1 }, (err) => {
        if (err) reject(err);
        else if (--left === 0) resolve();
      });
    });
  });
}

/** Publishes at a steady rate (batches every 10 ms). */
async function publishPaced(pcs: Pc[], visits: { id: string; payload: string }[], perSecond: number, sentAt: Map<string, number>): Promise<void> {
  const start = performance.now();
  let i = 0;
  const acks: Promise<void>[] = [];
  while (i < visits.length) {
    const due = Math.min(visits.length, Math.floor(((performance.now() - start) / 1000) * perSecond) + 1);
    for (; i < due; i++) {
      const v = visits[i]!;
      const pc = pcs[i % pcs.length]!;
      sentAt.set(v.id, performance.now());
      acks.push(new Promise<void>((res, rej) => pc.client.publish(pc.topic, v.payload, { qos: 1 }, (err) => (err ? rej(err) : res()))));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(acks);
}

export async function run(): Promise<string> {
  progress('real-face statistics');
  const model = await faceModel();
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: 'ingest-bench', model } });
  const thread = new Thread(worker);
  try {
    // 1. Batched SQLite inserts into the visits table.
    progress(`SQLite: ${SQLITE_ROWS} visit rows in transactions of ${SQLITE_BATCH}`);
    const sqlite = await thread.call<{ perSecond: number }>({ cmd: 'sqlite' });

    // 2. Raw aedes: the same payloads, one publisher, a subscriber that only counts.
    progress(`aedes: ${BURST} visit payloads, QoS 1`);
    const rawVisits = makeVisits(model, BURST, 11);
    const { port } = await thread.call<{ port: number }>({ cmd: 'aedes-start', expect: BURST });
    const raw: Pc[] = [];
    for (let i = 0; i < SHOPS; i++) raw.push({ client: await connect(port, { username: `x.s${i}`, password: 'p', client_id: `raw-${i}` }), topic: `ff/x/s${i}/up/visit` });
    const rawStart = Date.now();
    await publishAll(raw, rawVisits, new Map());
    const rawDone = await thread.once('aedes-done');
    const aedesPerSecond = BURST / ((rawDone.at - rawStart) / 1000);
    await Promise.all(raw.map((r) => r.client.endAsync()));
    await thread.call({ cmd: 'aedes-stop' });

    // 3. Head office with a 10k-customer gallery.
    progress(`head office: ${GALLERY} customers`);
    const srv = await thread.call<{ url: string; mqttPort: number; token: string; pcs: { topic: string; broker: BrokerLogin }[]; gallery: number }>({ cmd: 'server-start' });
    const pcs: Pc[] = await Promise.all(srv.pcs.map(async (p) => ({ client: await connect(srv.mqttPort, p.broker), topic: p.topic })));
    // Warm-up: load the gallery and JIT the path.
    const warm = makeVisits(model, 500, 21);
    const warmSeen = new Map<string, number>();
    const warmStream = await openStream(srv.url, srv.token, warmSeen);
    await publishAll(pcs, warm, new Map());
    const warmDeadline = performance.now() + 30_000;
    while (warmSeen.size < warm.length && performance.now() < warmDeadline) await new Promise((r) => setTimeout(r, 20));
    warmStream.abort();
    const head = ((await (await fetch(`${srv.url}/api/visits?limit=1`, { headers: { Authorization: `Bearer ${srv.token}` } })).json()) as { cursor: string }).cursor;

    // 3a. Burst: everything at once.
    progress(`burst: ${BURST} visits`);
    const burst = makeVisits(model, BURST, 31);
    const burstSent = new Map<string, number>();
    const burstSeen = new Map<string, number>();
    const stream = await openStream(srv.url, srv.token, burstSeen);
    const t0 = performance.now();
    const feed = pollFeed(srv.url, srv.token, head, new Set(burst.map((v) => v.id)), t0 + 120_000);
    await publishAll(pcs, burst, burstSent);
    const acked = performance.now();
    const feedDone = await feed;
    const sseDeadline = performance.now() + 30_000;
    while (burstSeen.size < BURST && performance.now() < sseDeadline) await new Promise((r) => setTimeout(r, 20));
    const sseLast = Math.max(...burstSeen.values());
    const burstLat = burst.filter((v) => burstSeen.has(v.id)).map((v) => burstSeen.get(v.id)! - burstSent.get(v.id)!);
    stream.abort();
    const afterBurst = await thread.call<Record<string, number>>({ cmd: 'stats' });
    if (afterBurst.failed! > 0) throw new Error(`ingest failed to store ${afterBurst.failed} visits (see the head-office log)`);

    // 3b. Steady 2,000 visits/s for 10 s: latency.
    progress(`steady: ${RATE}/s for ${PACED_S} s`);
    const paced = makeVisits(model, RATE * PACED_S, 41);
    const pacedSent = new Map<string, number>();
    const pacedSeen = new Map<string, number>();
    const head2 = ((await (await fetch(`${srv.url}/api/visits?limit=1`, { headers: { Authorization: `Bearer ${srv.token}` } })).json()) as { cursor: string }).cursor;
    const stream2 = await openStream(srv.url, srv.token, pacedSeen);
    const p0 = performance.now();
    const feed2 = pollFeed(srv.url, srv.token, head2, new Set(paced.map((v) => v.id)), p0 + 120_000);
    await publishPaced(pcs, paced, RATE, pacedSent);
    const feed2Done = await feed2;
    const deadline2 = performance.now() + 30_000;
    while (pacedSeen.size < paced.length && performance.now() < deadline2) await new Promise((r) => setTimeout(r, 20));
    stream2.abort();
    const pacedLat = paced.filter((v) => pacedSeen.has(v.id)).map((v) => pacedSeen.get(v.id)! - pacedSent.get(v.id)!);
    const stats = await thread.call<Record<string, number>>({ cmd: 'stats' });
    await Promise.all(pcs.map((p) => p.client.endAsync()));
    await thread.call({ cmd: 'stop' });

    const ssePerSecond = BURST / ((sseLast - t0) / 1000);
    const feedPerSecond = BURST / ((feedDone.at - t0) / 1000);
    const pipeline = Math.min(ssePerSecond, feedPerSecond);
    const lost = BURST - burstSeen.size + (paced.length - pacedSeen.size);
    const batches = stats.batches! - 0;
    const visitsIngested = stats.stored! + stats.duplicates! + stats.unknownShop! + stats.suspended!;
    const p99 = percentile(pacedLat, 0.99);
    const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');

    return [
      '## Visit ingest',
      '',
      `Head office (startServer, built) in a worker thread, with its ingest thread. ${SHOPS} shop PCs of one company (mqtt.js, one`,
      `connection each, QoS 1; head office sends a visit's PUBACK once it is stored) on the main thread, which also reads the SSE stream`,
      `and polls GET /api/visits (limit 1000, following the cursor, ${POLL_PAUSE_MS} ms pause unless a page was full): load generator and`,
      `head office share the same 2 cores. Gallery: ${GALLERY.toLocaleString('en')} customers. Visits: 60 % returning customers, 30 % new people,`,
      `10 % faces under the gate (no embedding). Embeddings: ${model.source}.`,
      `Ingest batch window 20 ms from the oldest queued visit (FOOTFALL_INGEST_BATCH_MS's default), at most 512 visits per transaction.`,
      '',
      table(
        ['measure', 'result'],
        [
          [`burst of ${BURST.toLocaleString('en')}: all PUBACKs`, `${((acked - t0) / 1000).toFixed(2)} s`],
          ['burst: visible on the SSE stream', `${Math.round(ssePerSecond).toLocaleString('en')} visits/s (last after ${((sseLast - t0) / 1000).toFixed(2)} s)`],
          ['burst: visible in GET /api/visits', `${Math.round(feedPerSecond).toLocaleString('en')} visits/s (${feedDone.polls} polls)`],
          ['burst: publish to SSE, p50 / p99', `${ms(percentile(burstLat, 0.5))} / ${ms(percentile(burstLat, 0.99))} ms (queueing behind the burst)`],
          [`steady ${RATE.toLocaleString('en')}/s for ${PACED_S} s: publish to SSE p50 / p95 / p99 / max`, `${ms(percentile(pacedLat, 0.5))} / ${ms(percentile(pacedLat, 0.95))} / ${ms(p99)} / ${ms(Math.max(...pacedLat))} ms`],
          [`steady: all visible in GET /api/visits`, `${((feed2Done.at - p0) / 1000).toFixed(2)} s after the first publish (${PACED_S} s of publishing)`],
          ['lost (published, never on the stream or in the feed)', `${lost + (BURST - feedDone.seen) + (paced.length - feed2Done.seen)}`],
          ['transactions / visits per transaction (whole run)', `${batches} / ${(visitsIngested / Math.max(1, batches)).toFixed(1)}`],
          ['customers enrolled / visits matched (whole run)', `${stats.newCustomers} / ${stats.matched}`],
          ['burst counts (stored, duplicates)', `${afterBurst.stored} / ${afterBurst.duplicates}`],
        ],
      ),
      '',
      '### Against the parts, same run',
      '',
      table(
        ['what', 'visits/s', 'pipeline as a share of it'],
        [
          [`raw aedes: ${BURST.toLocaleString('en')} of the same payloads, QoS 1, to an in-process subscriber that only counts`, Math.round(aedesPerSecond).toLocaleString('en'), `${((100 * pipeline) / aedesPerSecond).toFixed(0)} %`],
          [`raw SQLite: ${SQLITE_ROWS.toLocaleString('en')} visit rows, prepared insert, ${SQLITE_BATCH} per transaction (WAL, synchronous NORMAL)`, Math.round(sqlite.perSecond).toLocaleString('en'), `${((100 * pipeline) / sqlite.perSecond).toFixed(0)} %`],
          ['pipeline (slower of SSE and feed, burst)', Math.round(pipeline).toLocaleString('en'), '100 %'],
        ],
      ),
      '',
      `Goals: >= 2,000 visits/s ${verdict(pipeline >= 2000)}; p99 publish-to-SSE < 250 ms at ${RATE.toLocaleString('en')}/s ${verdict(p99 < 250)}; nothing lost ${verdict(lost === 0)}.`,
    ].join('\n');
  } finally {
    await worker.terminate();
  }
}
