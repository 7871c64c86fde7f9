import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Store } from '../db/open.js';
import { HttpError } from '../http/errors.js';
import type { ReportQuery } from './query.js';
import { conversionReport, footfallReport, type ConversionReport, type FootfallReport } from './service.js';
import { spawnWorker } from '../thread.js';

/**
 * Reports off the event loop (docs/reports.md, "Where reports run"). A year of a whole chain takes seconds of
 * synchronous SQLite work; on the main thread that would stall the broker, ingest hand-over, sign-ins and every other
 * request meanwhile. So `footfallReport` / `conversionReport` run in worker threads (report-worker.ts), each with its
 * own read-only connection to the same database file (WAL: it never blocks the writer and sees what is committed).
 *
 * - Pool: `FOOTFALL_REPORT_WORKERS` threads (default 1), each started on the first report that needs it. Requests
 *   wait in one queue, first come first served; a free thread takes the oldest. 0, or a database that is not a
 *   file, runs the reports inline on the calling thread, one at a time.
 * - A thread that dies (or cannot start) fails the report it was computing with 503 `reports_unavailable`; the next
 *   report starts a new thread. An error thrown by the report itself (a bug) is rejected as it is (500 `internal`, as
 *   inline) and the thread stays.
 * - close() (head office stopping) refuses queued and new reports with 503 `reports_unavailable` and terminates the
 *   threads. An idle thread never keeps the process alive (unref'd), so a pool nobody closes cannot hang it either.
 *
 * On PostgreSQL there are no threads: the counting is PostgreSQL's, in its own processes, and what is left on the
 * calling thread (sending the statements, reading a few rows per bucket, adding them up) is awaited piece by piece,
 * so it never holds the event loop for long. A report holds one of the store's pooled connections for its read
 * snapshot, so at most `FOOTFALL_REPORT_WORKERS` reports run at once (0: no limit) and the others wait in the queue,
 * first come first served, leaving the rest of the connections to the requests.
 */

/** 503 reports_unavailable: the thread computing the report stopped (or head office is stopping). */
export const reportsUnavailable = (message: string) => new HttpError(503, 'reports_unavailable', message);

const CRASHED = 'The report could not be computed: the thread computing it stopped. Try again (a new one is started).';
const STOPPING = 'Head office is stopping, so it cannot compute reports now. Try again once it is back.';

export type Kind = 'footfall' | 'conversion';
interface Reports {
  footfall: FootfallReport;
  conversion: ConversionReport;
}

/** What the report thread tells about itself (tests: computed elsewhere, read-only). */
export interface ThreadProbe {
  threadId: number;
  /** The connection was opened read-only (better-sqlite3's `readonly`). */
  readonly: boolean;
  /** The error of a write statement that changes nothing (`delete from visits where 0`), or null if it ran. */
  writeRefused: string | null;
  file: string;
}

/** Messages to the report thread. `hold` (tests only) blocks the thread for `ms`, outside the pool's queue. */
export type ToThread =
  | { t: 'report'; id: number; kind: Kind; companyId: string; query: ReportQuery }
  | { t: 'probe'; id: number }
  | { t: 'hold'; ms: number };

export type FromThread =
  | { t: 'done'; id: number; report: unknown }
  | { t: 'probe'; id: number; probe: ThreadProbe }
  /** The report threw: message and stack of the error, rejected as an Error. */
  | { t: 'failed'; id: number; message: string; stack: string | undefined };

export interface ThreadInit {
  file: string;
}

type Task = { t: 'report'; kind: Kind; companyId: string; query: ReportQuery } | { t: 'probe' };

interface Job {
  task: Task;
  resolve: (v: unknown) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  /** The job it is computing (one at a time). */
  job: { id: number; job: Job } | null;
}

export interface ReportPoolOptions {
  store: Store;
  /** Threads at most; 0 runs inline. */
  size: number;
  log: Logger;
}

export class ReportPool {
  private readonly queue: Job[] = [];
  private readonly slots: Slot[] = [];
  private nextId = 0;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** The database file, or null to run inline (size 0, an in-memory database, or PostgreSQL). */
  readonly file: string | null;
  private readonly busyWaiters: (() => void)[] = [];
  /** Inline: reports running on this thread, and those waiting for a place (inline()). */
  private running = 0;
  private readonly waiting: { start: () => void; refuse: (err: Error) => void }[] = [];

  constructor(private readonly opts: ReportPoolOptions) {
    const store = opts.store;
    this.file = store.dialect !== 'sqlite' || opts.size === 0 || store.sqlite.memory ? null : path.resolve(store.sqlite.name);
  }

  footfall(companyId: string, query: ReportQuery): Promise<FootfallReport> {
    return this.report('footfall', companyId, query);
  }

  conversion(companyId: string, query: ReportQuery): Promise<ConversionReport> {
    return this.report('conversion', companyId, query);
  }

  /** Threads running (or starting). */
  get threads(): number {
    return this.slots.length;
  }

  /** Reports computing (in a thread, or inline on this one), and waiting for a place. */
  get pending(): { running: number; queued: number } {
    if (this.file === null) return { running: this.running, queued: this.waiting.length };
    return { running: this.slots.filter((s) => s.job).length, queued: this.queue.length };
  }

  /** Refuses queued and new reports (503) and terminates the threads. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      for (const job of this.queue.splice(0)) job.reject(reportsUnavailable(STOPPING));
      for (const w of this.waiting.splice(0)) w.refuse(reportsUnavailable(STOPPING));
      await Promise.all(this.slots.map((s) => s.worker.terminate()));
    })();
    return this.closing;
  }

  /** Tests only: the thread that computes reports tells its id and how its connection was opened. */
  probeForTest(): Promise<ThreadProbe> {
    return this.enqueue({ t: 'probe' }) as Promise<ThreadProbe>;
  }

  /** Tests only: blocks a thread (started if need be) for `ms` without the pool knowing, so a report waits in it. */
  holdForTest(ms: number): void {
    if (this.file === null) throw new Error('reports run inline: no thread to hold');
    const slot = this.slots[0] ?? this.spawn(this.file);
    slot.worker.postMessage({ t: 'hold', ms } satisfies ToThread);
  }

  /** Tests only: resolves once a report is being computed in a thread. */
  busyForTest(): Promise<void> {
    if (this.slots.some((s) => s.job)) return Promise.resolve();
    return new Promise((resolve) => this.busyWaiters.push(resolve));
  }

  /** Tests only: terminates every thread as a crash would (the pool is not closing). */
  async killForTest(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }

  private report<K extends Kind>(kind: K, companyId: string, query: ReportQuery): Promise<Reports[K]> {
    if (this.file === null && !this.closed) return this.inline(kind, companyId, query);
    return this.enqueue({ t: 'report', kind, companyId, query }) as Promise<Reports[K]>;
  }

  /**
   * On this thread, against the store's database, waiting for a place: PostgreSQL's reports `size` at once (0: no
   * limit; see the top of the file). SQLite's one at a time: each report's read transaction is the connection's one
   * open transaction, and a second begun beside it (two reports asked for together, as the regions route does)
   * would be taken for a savepoint of the first and refused (server/db/transaction.ts, BesideError).
   */
  private async inline<K extends Kind>(kind: K, companyId: string, query: ReportQuery): Promise<Reports[K]> {
    const limit = this.opts.store.dialect === 'sqlite' ? 1 : this.opts.size === 0 ? Infinity : this.opts.size;
    // A place is handed from the report that ends to the oldest waiting one, so none is taken twice.
    if (this.running < limit) this.running++;
    else await new Promise<void>((start, refuse) => this.waiting.push({ start, refuse }));
    try {
      const db = this.opts.store.db;
      return (await (kind === 'footfall' ? footfallReport(db, companyId, query) : conversionReport(db, companyId, query))) as Reports[K];
    } finally {
      const next = this.waiting.shift();
      if (next) next.start();
      else this.running--;
    }
  }

  private enqueue(task: Task): Promise<unknown> {
    if (this.closed) return Promise.reject(reportsUnavailable(STOPPING));
    if (this.file === null) return Promise.reject(new Error('reports run inline: no thread'));
    return new Promise((resolve, reject) => {
      this.queue.push({ task, resolve, reject });
      this.pump();
    });
  }

  /** Hands the oldest queued jobs to free threads, starting threads up to the pool's size. */
  private pump(): void {
    while (this.queue.length > 0 && !this.closed && this.file !== null) {
      const slot = this.slots.find((s) => !s.job) ?? (this.slots.length < this.opts.size ? this.spawn(this.file) : undefined);
      if (!slot) return;
      const job = this.queue.shift()!;
      const id = ++this.nextId;
      slot.job = { id, job };
      slot.worker.ref();
      slot.worker.postMessage({ ...job.task, id } satisfies ToThread);
      for (const wake of this.busyWaiters.splice(0)) wake();
    }
  }

  private spawn(file: string): Slot {
    const worker = spawnWorker(new URL('./report-worker.js', import.meta.url), { workerData: { file } satisfies ThreadInit });
    worker.unref();
    const slot: Slot = { worker, job: null };
    this.slots.push(slot);
    worker.on('message', (m: FromThread) => {
      const current = slot.job;
      if (!current || current.id !== m.id) return;
      slot.job = null;
      worker.unref();
      if (m.t === 'failed') current.job.reject(Object.assign(new Error(m.message), { stack: m.stack ?? m.message }));
      else current.job.resolve(m.t === 'done' ? m.report : m.probe);
      this.pump();
    });
    worker.on('error', (err) => this.opts.log.error({ err }, 'report thread failed'));
    worker.on('exit', (code) => {
      this.slots.splice(this.slots.indexOf(slot), 1);
      const current = slot.job;
      slot.job = null;
      if (current) {
        if (!this.closed) this.opts.log.error({ code }, 'report thread stopped while computing a report; the next report starts a new one');
        current.job.reject(reportsUnavailable(this.closed ? STOPPING : CRASHED));
      }
      this.pump();
    });
    return slot;
  }
}

const pools = new WeakMap<Store, ReportPool>();

/**
 * The report pool of a head office's database: made by startServer (which closes it on close), found by the routes
 * through the same store (an app built again on the same deps, as some tests do, shares it).
 */
export function reportPool(deps: { store: Store; log: Logger; config: { FOOTFALL_REPORT_WORKERS: number } }): ReportPool {
  let pool = pools.get(deps.store);
  if (!pool) {
    pool = new ReportPool({ store: deps.store, size: deps.config.FOOTFALL_REPORT_WORKERS, log: deps.log });
    pools.set(deps.store, pool);
  }
  return pool;
}
