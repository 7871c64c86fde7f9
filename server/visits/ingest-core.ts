import type { Logger } from 'pino';
import { EMBEDDING_DIMS, VisitMessage, decodeEmbedding } from '../../shared/messages.js';
import { brokerUsername, parseTopic } from '../../shared/topics.js';
import type { Config } from '../config.js';
import { discardFaces } from '../customers/faces.js';
import type { Store } from '../db/open.js';
import type { ArrivalRange } from './arrivals-relay.js';
import type { Identities } from './identities.js';
import { databaseUnavailable } from '../db/unavailable.js';
import { StaleGallery, batchLocks, touchShops, writeBatch, type Pending, type Written } from './ingest-write.js';

export interface IngestStats {
  received: number;
  stored: number;
  duplicates: number;
  invalid: number;
  unknownShop: number;
  suspended: number;
  failed: number;
  batches: number;
  newCustomers: number;
  matched: number;
  /** Stored sightings that extended (or joined) a visit instead of making one (a stay; `stored` counts them too). */
  extended: number;
}

export const EMPTY_STATS: IngestStats = { received: 0, stored: 0, duplicates: 0, invalid: 0, unknownShop: 0, suspended: 0, failed: 0, batches: 0, newCustomers: 0, matched: 0, extended: 0 };

/** Largest batch written in one transaction. */
const MAX_BATCH = 512;
/** Attempts of a batch whose decisions met a gallery made stale by an erasure or merge (reloaded between). */
const STALE_RETRIES = 3;

/** What one written batch gives the main thread: the positions of its visits, per company, for the arrival streams. */
export interface Committed {
  ranges: ArrivalRange[];
}

/**
 * The visit ingest's work, on its own thread (server/visits/ingest-worker.ts, fed by VisitIngest on the main
 * thread). Each message is validated with the shared schema (a bad one is logged and dropped), queued, and written
 * with the others that arrived within FOOTFALL_INGEST_BATCH_MS of the oldest queued one, in one transaction:
 *
 * - visits of a suspended company, or of a shop that no longer exists, are dropped;
 * - a visit_id the company already has (at-least-once delivery re-sends) is dropped, also within the batch;
 * - a sighting of a customer within FOOTFALL_VISIT_GAP_S of one of their visits in the same shop extends that visit
 *   (earlier or later, any camera); one that bridges two visits joins them into one (stays.ts);
 * - faces are matched against the company's gallery for the visit's recognition model (`Identities`), which may
 *   enrol a new customer; templates are updated; stats, the shop's `last_event_at` and the face image link follow;
 * - the decisions are checked against the database in the same transaction: a customer erased or merged (or a
 *   template changed) by the main thread since the gallery last heard of it makes the batch start again on a
 *   gallery reloaded from the database;
 * - after the commit, the batch's rows go to the main thread for the arrival streams; discarded uploads are deleted.
 *
 * A failed transaction forgets the touched galleries (they reload from the database) and retries the batch one
 * visit at a time, so one bad visit cannot take others with it.
 */
export class IngestCore {
  readonly stats: IngestStats = { ...EMPTY_STATS };
  private queue: Pending[] = [];
  private timer: { kind: 'now'; handle: NodeJS.Immediate } | { kind: 'window'; handle: NodeJS.Timeout } | undefined;
  private readonly warned = new Map<string, { at: number; suppressed: number }>();
  private idle: (() => void)[] = [];

  constructor(
    private readonly deps: { store: Store; config: Config; log: Logger; identities: Identities; emit: (c: Committed) => void; onTick?: () => void },
  ) {}

  /**
   * The highest message number up to which every message is finished with (written, dropped or refused): not the
   * batch being written (its first message number is `writing.first`), nor anything queued.
   */
  get doneUpTo(): number {
    const next = Math.min(this.writing?.first ?? Infinity, this.queue[0]?.id ?? Infinity);
    return next === Infinity ? this.lastId : next - 1;
  }
  /**
   * The batch being written. One at a time (`flush` waits for it): on PostgreSQL a batch waits for the network and for
   * the company's lock while visits keep arriving and the timer starts the next flush, and with two batches at once
   * the later one's commit would acknowledge the earlier one's messages before their commit (its first number would
   * be `writing`), besides deciding against galleries the other is changing.
   */
  private writing: { first: number; done: Promise<boolean> } | undefined;
  private lastId = 0;

  /**
   * While the database is unavailable: how long to wait before trying again (doubling up to 5 s); 0 otherwise. What
   * could not be written stays at the front of the queue, unacknowledged, so nothing is lost: the shop PCs' messages
   * wait in the broker (its in-flight window bounds how many head office holds).
   */
  private pausedMs = 0;

  /** Whether the last try found the database unavailable (visits wait for it). */
  get waitingForDatabase(): boolean {
    return this.pausedMs > 0;
  }

  /** Writes everything queued now (shutdown); what the database cannot take now stays unacknowledged. */
  async flushAll(): Promise<void> {
    this.clearTimer();
    while (this.queue.length > 0 || this.writing) if (!(await this.flush())) break;
    this.settleIdle();
  }

  /** Resolves when nothing is queued or being written (tests, benchmark). */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.timer === undefined && !this.writing) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private settleIdle(): void {
    if (this.queue.length === 0 && this.timer === undefined && !this.writing) for (const f of this.idle.splice(0)) f();
  }

  /** One message from `ff/<company>/<shop>/up/visit`, numbered by the main thread. */
  accept(id: number, topic: string, payload: Uint8Array, receivedAt: string): void {
    this.lastId = id;
    try {
      this.take(id, topic, payload, receivedAt);
    } catch (err) {
      this.deps.log.error({ err, topic }, 'visit not accepted');
    }
  }

  private take(id: number, topic: string, payload: Uint8Array, receivedAt: string): void {
    this.stats.received++;
    const parsed = parseTopic(topic);
    if (!parsed || parsed.direction !== 'up' || parsed.name !== 'visit') return;
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
    } catch {
      this.invalid(topic, 'visit is not JSON');
      return;
    }
    const checked = VisitMessage.safeParse(json);
    if (!checked.success) {
      this.invalid(topic, 'visit does not match the contract', checked.error.issues.slice(0, 3));
      return;
    }
    const msg = checked.data;
    let embedding: Float32Array | undefined;
    if (msg.embedding !== undefined) {
      embedding = decodeEmbedding(msg.embedding);
      if (!usable(embedding)) {
        this.invalid(topic, 'visit embedding is not finite or all zeros: counted without identity');
        embedding = undefined;
      }
    }
    this.queue.push({ id, username: brokerUsername(parsed.companySlug, parsed.shopSlug), msg, embedding, receivedAt, queuedAt: performance.now() });
    this.schedule();
  }

  private invalid(topic: string, what: string, issues?: unknown): void {
    this.stats.invalid++;
    const now = Date.now();
    const w = this.warned.get(topic);
    if (w && now - w.at < 10_000) {
      w.suppressed++;
      return;
    }
    this.deps.log.warn({ topic, issues, suppressed: w?.suppressed ?? 0 }, `${what}; dropped`);
    this.warned.set(topic, { at: now, suppressed: 0 });
  }

  private schedule(): void {
    if (this.pausedMs > 0) {
      this.timer ??= { kind: 'window', handle: setTimeout(() => void this.tick(), this.pausedMs) };
      return;
    }
    if (this.queue.length >= MAX_BATCH) {
      // A full batch: write it on the next turn of the event loop instead of waiting for the window.
      if (this.timer?.kind !== 'now') {
        this.clearTimer();
        this.timer = { kind: 'now', handle: setImmediate(() => void this.tick()) };
      }
      return;
    }
    if (this.timer !== undefined) return;
    // The window counts from the oldest visit queued: visits that arrived while the batch before was being written
    // have waited already, and wait only for what is left of it (a window per batch on top of each write made a
    // visit wait up to two windows and a write).
    const now = performance.now();
    const left = this.deps.config.FOOTFALL_INGEST_BATCH_MS - (now - (this.queue[0]?.queuedAt ?? now));
    this.timer = left <= 0 ? { kind: 'now', handle: setImmediate(() => void this.tick()) } : { kind: 'window', handle: setTimeout(() => void this.tick(), left) };
  }

  private clearTimer(): void {
    const t = this.timer;
    if (t === undefined) return;
    if (t.kind === 'now') clearImmediate(t.handle);
    else clearTimeout(t.handle);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    await this.flush();
    if (this.queue.length > 0 || this.pausedMs > 0) this.schedule();
    else this.settleIdle();
    this.deps.onTick?.();
  }

  /**
   * Writes one batch (at most MAX_BATCH visits), after the one being written if any. Returns false when the database
   * is unavailable: the batch is back at the front of the queue and the next try waits (`pausedMs`).
   */
  async flush(): Promise<boolean> {
    let waited = false;
    while (this.writing) {
      waited = true;
      await this.writing.done.catch(() => true);
    }
    // The batch before found the database unavailable: the next try waits its turn (the timer `hold` set).
    if (waited && this.pausedMs > 0) return false;
    const batch = this.queue.splice(0, MAX_BATCH);
    if (batch.length === 0) return true;
    const writing = { first: batch[0]!.id, done: Promise.resolve(true) };
    this.writing = writing;
    try {
      writing.done = this.write(batch);
      return await writing.done;
    } finally {
      this.writing = undefined;
      this.settleIdle();
    }
  }

  private async write(batch: Pending[]): Promise<boolean> {
    const { log } = this.deps;
    let lastErr: unknown;
    for (let attempt = 0; attempt < STALE_RETRIES; attempt++) {
      try {
        await this.after(await this.attempt(batch));
        this.resumed();
        return true;
      } catch (err) {
        lastErr = err;
        if (databaseUnavailable(err)) return this.hold(batch, err);
        if (!(err instanceof StaleGallery)) break;
        log.debug('gallery changed by an erasure or merge during a batch; reloaded, deciding again');
      }
    }
    if (batch.length === 1) {
      this.stats.failed++;
      log.error({ err: lastErr, visit_id: batch[0]!.msg.visit_id, shop: batch[0]!.username }, 'visit not stored; dropped');
      return true;
    }
    log.warn({ err: lastErr, visits: batch.length }, 'visit batch failed; retrying one by one');
    for (const [i, item] of batch.entries()) {
      try {
        await this.after(await this.attempt([item]));
      } catch (err) {
        if (databaseUnavailable(err)) return this.hold(batch.slice(i), err);
        this.stats.failed++;
        log.error({ err, visit_id: item.msg.visit_id, shop: item.username }, 'visit not stored; dropped');
      }
    }
    return true;
  }

  /** The database could not take `batch`: it goes back to the front of the queue, unacknowledged, for a later try. */
  private hold(batch: readonly Pending[], err: unknown): false {
    this.queue.unshift(...batch);
    if (this.pausedMs === 0) this.deps.log.error({ err, visits: this.queue.length }, 'database unavailable: visits wait, unacknowledged, and are written when it is back');
    this.pausedMs = Math.min(Math.max(250, this.pausedMs * 2), 5000);
    this.schedule();
    return false;
  }

  private resumed(): void {
    if (this.pausedMs === 0) return;
    this.pausedMs = 0;
    this.deps.log.info('database available again: writing the visits that waited');
  }

  /**
   * One transaction. On failure the galleries it touched take back what it changed in memory (Identities.undo), or,
   * after a stale decision (an erasure or merge on the main thread), are forgotten and reload on next use.
   */
  private async attempt(batch: readonly Pending[]): Promise<Written> {
    const { identities } = this.deps;
    const touched = new Set<string>();
    const each = (fn: (companyId: string, model: string) => void) => {
      for (const k of touched) fn(...(k.split('\u0000') as [string, string]));
      touched.clear();
    };
    try {
      const locks = await batchLocks(this.deps.store, batch);
      const out = await this.deps.store.tx(async () => {
        // PostgreSQL runs a body again after a serialization failure (server/db/pg/store.ts): the galleries the
        // first run decided against hold its rolled-back customers and templates, so that is taken back first.
        each((c, m) => identities.undo(c, m));
        return await writeBatch(this.deps, batch, touched);
      }, { locks });
      each((c, m) => identities.settle(c, m));
      if (out.touch) {
        // Committed: a failure here must not write the batch again; only the shops' last visit time lags.
        await touchShops(this.deps.store, out.touch).catch((err: unknown) => this.deps.log.warn({ err }, 'shops’ last visit time not updated'));
      }
      return out;
    } catch (err) {
      each((c, m) => (err instanceof StaleGallery ? identities.discard(c, m) : identities.undo(c, m)));
      throw err;
    }
  }

  /** After the commit: rows to the main thread, discarded uploads deleted. */
  private async after(out: Written): Promise<void> {
    this.stats.batches++;
    for (const [k, n] of Object.entries(out.counts) as [keyof IngestStats, number][]) this.stats[k] += n;
    if (out.ranges.length > 0) this.deps.emit({ ranges: out.ranges });
    if (out.discard.length > 0) await discardFaces(this.deps, out.discard);
  }
}

/** Finite and not all zeros (the gallery refuses anything else). */
function usable(e: Float32Array): boolean {
  if (e.length !== EMBEDDING_DIMS) return false;
  let s = 0;
  for (let i = 0; i < e.length; i++) {
    const x = e[i]!;
    if (!Number.isFinite(x)) return false;
    s += x * x;
  }
  return s > 0 && Number.isFinite(s);
}
