import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Broker, HeldMessage } from '../broker/broker.js';
import type { Config } from '../config.js';
import { spawnWorker } from '../thread.js';
import type { Store } from '../db/open.js';
import { publishRange, type ArrivalRange } from './arrivals-relay.js';
import type { ArrivalsHub } from './hub.js';
import type { IdentityControl } from './identity-control.js';
import { EMPTY_STATS, type IngestStats } from './ingest-core.js';
import type { FromWorker, ToWorker, VisitHandOver, WorkerInit } from './ingest-protocol.js';

export type { IngestStats } from './ingest-core.js';

/** A visit handed to the ingest thread whose PUBACK waits for it to be written. */
interface Waiting {
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Visit ingest, main-thread side. Every publish on `ff/<company>/<shop>/up/visit` is handed, inside the broker's
 * publish authorisation, to the ingest thread (ingest-worker.ts, IngestCore: validation, de-duplication, matching,
 * the batched transaction), and its PUBACK is held until that thread has written it (or dropped or refused it). A
 * visit is therefore acknowledged to the shop PC only once it is in the database: at-least-once end to end. The
 * broker's topic rule guarantees that only the shop's own login publishes there, so the topic names the company
 * and the shop. Matching and writing take most of the CPU of ingest, so they run beside the HTTP server and the
 * broker instead of between their events; the committed rows come back here for the arrival streams.
 *
 * The thread starts when shop PCs start reporting (`warm`: their first heartbeat or crossing) or with the first visit,
 * not with head office: a head office nobody reports to (the console and the API alone, most tests) does not pay for
 * it (~0.4 s of CPU and its own copy of the modules). If the ingest thread dies, the publishes it held are refused
 * (their connections close and the shop PCs send them again) and it is started again. While head office stops, new
 * visits are refused the same way.
 */
export class VisitIngest {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiting>();
  private removeHold: (() => void) | undefined;
  private readonly drains = new Map<number, () => void>();
  private nextDrain = 0;
  private stopping = false;
  private stopped: (() => void) | undefined;
  private counters: IngestStats = { ...EMPTY_STATS };
  private earlier: IngestStats = { ...EMPTY_STATS };
  /** The arrival streams' reads under way (commit order), if any. */
  private publishing: Promise<void> | undefined;

  constructor(
    private readonly deps: { config: Config; log: Logger; store: Store; broker: Broker; arrivals: ArrivalsHub; identities: IdentityControl },
    /** Called once, as the thread first starts (head office starts its WAL checkpoint thread then). */
    private readonly onFirstThread: () => void = () => {},
  ) {}

  /** Whether the ingest thread has been started (it starts with `warm` or the first visit). */
  get threadStarted(): boolean {
    return this.worker !== undefined;
  }

  /** Counters over the server's life: `received` by the broker hook, the rest from the ingest thread. */
  get stats(): IngestStats {
    const s = { ...EMPTY_STATS };
    for (const k of Object.keys(s) as (keyof IngestStats)[]) s[k] = this.earlier[k] + this.counters[k];
    s.received = this.nextId;
    return s;
  }

  /**
   * Takes visits from the broker. The thread itself starts with `warm` or the first visit; until then the identity
   * notices have nothing to update (the thread reads the galleries, markers included, from the database as it starts).
   */
  start(): void {
    this.deps.identities.attach((m) => this.post(m));
    this.removeHold = this.deps.broker.holdAcks('visit', (message) => this.hand(message));
  }

  /** Starts the ingest thread if it is not running yet (shop PCs are reporting: its galleries load before their visits come). */
  warm(): void {
    if (this.worker || this.stopping) return;
    this.onFirstThread();
    this.spawn();
  }

  /** Refuses new visits, lets the ingest thread write what it holds (their PUBACKs go out), and ends it. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const w = this.worker;
    if (w) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 10_000);
        this.stopped = () => {
          clearTimeout(timer);
          resolve();
        };
        this.sendOutbox(); // what was handed over before the stop is written before it
        w.postMessage({ t: 'stop' } satisfies ToWorker);
      });
      await w.terminate();
    }
    this.removeHold?.();
    this.failWaiting('head office is stopping');
    for (const f of this.drains.values()) f();
  }

  /** Resolves when everything handed over so far is written (tests, benchmark). */
  drained(): Promise<void> {
    if (!this.worker) return Promise.resolve(); // nothing was handed over
    const id = ++this.nextDrain;
    return new Promise((resolve) => {
      this.drains.set(id, resolve);
      this.post({ t: 'drain', id });
    });
  }

  /** Every other message goes after the visits handed over before it (drain, stop and identity notices keep their order). */
  private post(m: ToWorker): void {
    this.sendOutbox();
    this.worker?.postMessage(m);
  }

  /** One visit publish: handed over; resolves (PUBACK) once written, rejects (connection closed) if it cannot be. */
  private hand(packet: HeldMessage): Promise<void> {
    if (this.stopping) return Promise.reject(new Error('visit ingest is not running'));
    this.warm();
    const id = ++this.nextId;
    // A copy with its own ArrayBuffer, moved (not copied again) to the ingest thread.
    const payload = new Uint8Array(packet.payload);
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.outbox.push({ id, topic: packet.topic, payload, at: new Date().toISOString() });
      if (this.outbox.length === 1) setImmediate(this.sendOutbox);
    });
  }

  /** The visits handed over in this turn of the event loop, in one message (a postMessage per visit cost more). */
  private outbox: VisitHandOver[] = [];
  private readonly sendOutbox = () => {
    const list = this.outbox;
    if (list.length === 0) return;
    this.outbox = [];
    const m: ToWorker = { t: 'visits', list };
    this.worker?.postMessage(m, list.map((v) => v.payload.buffer as ArrayBuffer));
  };

  private failWaiting(why: string): void {
    const err = new Error(why);
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }

  private spawn(): void {
    const init: WorkerInit = { config: this.deps.config };
    const w = spawnIngestWorker(init);
    this.worker = w;
    w.on('message', (m: FromWorker) => this.onMessage(m));
    w.on('error', (err) => this.deps.log.error({ err }, 'visit ingest thread failed'));
    w.on('exit', (code) => {
      if (this.stopping || this.worker !== w) return;
      this.deps.log.error({ code }, 'visit ingest thread ended; starting it again (the shop PCs send what it held again)');
      this.earlier = this.stats;
      this.counters = { ...EMPTY_STATS };
      this.outbox = []; // their publishes are refused just below
      this.failWaiting('visit ingest restarted');
      this.spawn();
    });
  }

  /**
   * The visits of committed batches, read and presented for the companies whose arrival streams are open (nobody else
   * reads them: on SQLite the ingest thread only says where they are). Never rejects.
   */
  private async publishRanges(ranges: readonly ArrivalRange[]): Promise<void> {
    const { store, config, arrivals } = this.deps;
    for (const range of ranges) {
      try {
        await publishRange({ store, config, hub: arrivals }, range);
      } catch (err) {
        this.deps.log.error({ err }, 'arrival stream push failed');
      }
    }
  }

  private onMessage(m: FromWorker): void {
    switch (m.t) {
      case 'ack': {
        this.counters = m.stats;
        const release = () => {
          for (const [id, w] of this.waiting) {
            if (id > m.doneUpTo) break;
            this.waiting.delete(id);
            w.resolve();
          }
        };
        const ranges = m.committed.flat().filter(([companyId]) => this.deps.arrivals.listening(companyId));
        if (ranges.length === 0 && this.publishing === undefined) {
          release();
          break;
        }
        // The streams get the rows before the PUBACKs go, in commit order: one read after another.
        const run = (this.publishing ?? Promise.resolve()).then(() => this.publishRanges(ranges)).then(release);
        this.publishing = run;
        void run.then(() => {
          if (this.publishing === run) this.publishing = undefined;
        });
        break;
      }
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

/** Starts the ingest thread (ingest-worker.ts; see spawnWorker for how it is loaded from sources). */
function spawnIngestWorker(init: WorkerInit): Worker {
  return spawnWorker(new URL('./ingest-worker.js', import.meta.url), { workerData: init });
}
