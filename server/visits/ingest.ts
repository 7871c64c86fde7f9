import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { AedesPublishPacket } from 'aedes';
import type { Logger } from 'pino';
import { upFilterAllShops } from '../../shared/topics.js';
import type { Broker } from '../broker/broker.js';
import type { Config } from '../config.js';
import type { ArrivalsHub } from './hub.js';
import type { IdentityControl } from './identity-control.js';
import { EMPTY_STATS, type IngestStats } from './ingest-core.js';
import type { FromWorker, ToWorker, WorkerInit } from './ingest-protocol.js';

export type { IngestStats } from './ingest-core.js';

/** Past this many visits handed over and not yet written, the broker's callbacks are held (back-pressure). */
const HIGH_WATER = 4096;

/**
 * Visit ingest, main-thread side: head office subscribes inside the broker to `ff/+/+/up/visit` (the broker's topic
 * rule guarantees that only the shop's own login publishes there, so the topic names the company and the shop) and
 * hands every message to the ingest thread (ingest-worker.ts, IngestCore: validation, de-duplication, matching,
 * the batched transaction). Matching and writing take most of the CPU of ingest, so they run next to the HTTP
 * server and the broker instead of between their events; the committed rows come back here for the arrival streams.
 *
 * Delivery: aedes answers a QoS 1 PUBACK when it has received the message, before subscribers see it, so a visit is
 * acknowledged to the shop PC up to one batch window before it is committed; a crash in that window loses it. So does
 * a crash of the ingest thread (it is started again, and logged).
 */
export class VisitIngest {
  private readonly topic = upFilterAllShops('visit');
  private worker: Worker | undefined;
  private posted = 0;
  private processed = 0;
  private workerBase = 0;
  private held: (() => void)[] = [];
  private readonly drains = new Map<number, () => void>();
  private nextDrain = 0;
  private stopping = false;
  private stopped: (() => void) | undefined;
  private counters: IngestStats = { ...EMPTY_STATS };
  private earlier: IngestStats = { ...EMPTY_STATS };

  constructor(
    private readonly deps: { config: Config; log: Logger; broker: Broker; arrivals: ArrivalsHub; identities: IdentityControl },
  ) {}

  /** Counters over the server's life: `received` by the broker subscription, the rest from the ingest thread. */
  get stats(): IngestStats {
    const s = { ...EMPTY_STATS };
    for (const k of Object.keys(s) as (keyof IngestStats)[]) s[k] = this.earlier[k] + this.counters[k];
    s.received = this.posted;
    return s;
  }

  async start(): Promise<void> {
    this.spawn();
    this.deps.identities.attach((m) => this.post(m));
    this.deps.arrivals.onCompanies((companies) => this.post({ t: 'listening', companies }));
    await new Promise<void>((resolve) => this.deps.broker.aedes.subscribe(this.topic, this.deliver, resolve));
  }

  /** Stops listening, lets the ingest thread write what it holds, and ends it. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    await new Promise<void>((resolve) => this.deps.broker.aedes.unsubscribe(this.topic, this.deliver, resolve));
    const w = this.worker;
    if (!w) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 10_000);
      this.stopped = () => {
        clearTimeout(timer);
        resolve();
      };
      w.postMessage({ t: 'stop' } satisfies ToWorker);
    });
    await w.terminate();
    this.release();
    for (const f of this.drains.values()) f();
  }

  /** Resolves when everything handed over so far is written (tests, benchmark). */
  drained(): Promise<void> {
    const id = ++this.nextDrain;
    return new Promise((resolve) => {
      this.drains.set(id, resolve);
      this.post({ t: 'drain', id });
    });
  }

  private post(m: ToWorker, transfer?: ArrayBuffer[]): void {
    this.worker?.postMessage(m, transfer);
  }

  private spawn(): void {
    const init: WorkerInit = { config: this.deps.config };
    const w = spawnIngestWorker(init);
    this.worker = w;
    this.workerBase = this.processed;
    w.on('message', (m: FromWorker) => this.onMessage(m));
    w.on('error', (err) => this.deps.log.error({ err }, 'visit ingest thread failed'));
    w.on('exit', (code) => {
      if (this.stopping || this.worker !== w) return;
      this.deps.log.error({ code }, 'visit ingest thread ended; starting it again (visits it held are lost)');
      // What it held is gone: count it as processed so back-pressure does not wait for it.
      this.earlier = this.stats;
      this.counters = { ...EMPTY_STATS };
      this.processed = this.posted;
      this.release();
      this.spawn();
      this.post({ t: 'listening', companies: this.deps.arrivals.companies() });
    });
  }

  private readonly deliver = (packet: AedesPublishPacket, done: () => void): void => {
    try {
      // A copy with its own ArrayBuffer, moved (not copied again) to the ingest thread.
      const payload = new Uint8Array(typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload);
      this.posted++;
      this.post({ t: 'visit', topic: packet.topic, payload, at: new Date().toISOString() }, [payload.buffer]);
    } catch (err) {
      this.deps.log.error({ err, topic: packet.topic }, 'visit not handed to the ingest thread');
    }
    if (this.posted - this.processed > HIGH_WATER) this.held.push(done);
    else done();
  };

  private release(): void {
    while (this.held.length > 0 && this.posted - this.processed <= HIGH_WATER) this.held.shift()!();
    if (this.stopping) for (const f of this.held.splice(0)) f();
  }

  private onMessage(m: FromWorker): void {
    switch (m.t) {
      case 'committed':
        for (const [companyId, items] of m.items) {
          try {
            this.deps.arrivals.publish(companyId, items);
          } catch (err) {
            this.deps.log.error({ err }, 'arrival stream push failed');
          }
        }
        break;
      case 'ack':
        this.processed = this.workerBase + m.processed;
        this.counters = m.stats;
        this.release();
        break;
      case 'drained':
        this.counters = m.stats;
        this.drains.get(m.id)?.();
        this.drains.delete(m.id);
        break;
      case 'stopped':
        this.counters = m.stats;
        this.stopped?.();
        break;
      case 'ready':
        this.deps.log.info({ galleries: m.galleries, customers: m.customers, ms: Math.round(m.ms) }, 'visit ingest thread ready');
        break;
      case 'failed':
        this.deps.log.error({ error: m.error }, 'visit ingest thread could not start');
        break;
    }
  }
}

/**
 * Starts the ingest thread: ingest-worker.js when built. From TypeScript sources (vitest, tsx) it is
 * ingest-worker.ts, loaded through tsx's CommonJS hook (Node 20 applies no ESM loader hooks inside worker threads),
 * as agent/vision/engine.ts does.
 */
function spawnIngestWorker(init: WorkerInit): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./ingest-worker.js', import.meta.url), { workerData: init });
  const require = createRequire(import.meta.url);
  const tsxCjs = require.resolve('tsx/cjs');
  const entry = fileURLToPath(new URL('./ingest-worker.ts', import.meta.url));
  return new Worker(`require(${JSON.stringify(tsxCjs)}); require(${JSON.stringify(entry)});`, { eval: true, workerData: init });
}
