import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { spawnWorker } from '../thread.js';
import { WRITER_BACKSTOP_FRAMES } from './checkpoint.js';
import type { CheckpointInit } from './checkpoint-worker.js';
import type { SqliteStore } from './open.js';

/** How often the WAL is checkpointed (PASSIVE): small WAL files, each checkpoint copying little. */
const EVERY_MS = 250;

/**
 * Head office's WAL checkpoints on a thread of their own (server/db/checkpoint-worker.ts). They used to run on the
 * visit-ingest thread (a timer, and SQLite's automatic checkpoint inside its commits), where each one's disk sync
 * held every shop PC's next PUBACK: measured in-process, a batch's wall time was 1.1-1.4 ms a visit against 0.84-0.88
 * ms of CPU with them, 0.84-0.88 against 0.74-0.82 without (docs/benchmarks.md, "Where the ingest thread's CPU
 * goes"). If the thread ends unexpectedly it is started again; while none runs the WAL only grows.
 */
export function startCheckpointer(config: Config, log: Logger, opts: { restartFrames?: number } = {}): { stop(): Promise<void> } {
  let worker: Worker | undefined;
  let stopping = false;
  const init: CheckpointInit = { file: path.join(config.dataDir, 'footfall.db'), everyMs: EVERY_MS, logLevel: config.FOOTFALL_LOG_LEVEL, ...opts };
  const spawn = () => {
    const w = spawnWorker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: init });
    worker = w;
    w.on('error', (err) => log.error({ err }, 'WAL checkpoint thread failed'));
    w.on('exit', (code) => {
      if (stopping || worker !== w) return;
      log.error({ code }, 'WAL checkpoint thread ended; starting it again');
      setTimeout(() => {
        if (!stopping) spawn();
      }, 1000).unref();
    });
  };
  spawn();
  return {
    async stop() {
      if (stopping) return;
      stopping = true;
      const w = worker;
      if (!w) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5000);
        w.once('message', () => {
          clearTimeout(timer);
          resolve();
        });
        w.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        w.postMessage('stop');
      });
      await w.terminate();
    },
  };
}

/**
 * The checkpoint thread, started when head office starts taking visits (the ingest thread's start: server/start.ts)
 * rather than with head office. Until then the main thread's connection checkpoints in its own commits (SQLite's
 * default, every 1,000 pages): the few writes of the console and the API, with no PUBACK waiting on them. `start`
 * moves that to WRITER_BACKSTOP_FRAMES before the thread's first checkpoint.
 */
export function laterCheckpointer(config: Config, log: Logger, store: SqliteStore): { start(): void; stop(): Promise<void> } {
  let running: { stop(): Promise<void> } | undefined;
  let stopped = false;
  return {
    start() {
      if (running || stopped) return;
      store.sqlite.pragma(`wal_autocheckpoint = ${WRITER_BACKSTOP_FRAMES}`);
      running = startCheckpointer(config, log);
    },
    async stop() {
      stopped = true;
      await running?.stop();
    },
  };
}
