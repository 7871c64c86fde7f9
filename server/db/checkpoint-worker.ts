import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { createLogger } from '../logger.js';
import { checkpointEvery } from './checkpoint.js';

/** What the checkpoint thread is started with (server/db/checkpointer.ts). */
export interface CheckpointInit {
  file: string;
  everyMs: number;
  logLevel: string;
  /** Tests: the WAL's frames at which it is started over (server/db/checkpoint.ts, RESTART_FRAMES). */
  restartFrames?: number;
}

/**
 * The checkpoint thread: its own connection to head office's SQLite file, running a PASSIVE WAL checkpoint every
 * `everyMs` (and a TRUNCATE one when the WAL has grown: server/db/checkpoint.ts) and nothing else. A checkpoint
 * copies the WAL into the database file and syncs it; every other connection (the main thread's, the ingest
 * thread's) checkpoints only if this thread falls far behind (WRITER_BACKSTOP_FRAMES), so none of them waits for a disk
 * sync.
 */
const port = parentPort!;
const { file, everyMs, logLevel, restartFrames } = workerData as CheckpointInit;
const log = createLogger(logLevel).child({ thread: 'checkpoint' });
const sqlite = new Database(file, { fileMustExist: true });
sqlite.pragma('busy_timeout = 5000');
sqlite.pragma('wal_autocheckpoint = 0');
const stop = checkpointEvery(sqlite, everyMs, {
  onError: (err) => log.error({ err }, 'WAL checkpoint failed'),
  onSlow: (ms, pages) => log.warn({ ms: Math.round(ms), pages }, 'slow WAL checkpoint (the disk took long to sync; no request or visit waited for it)'),
  ...(restartFrames !== undefined ? { restartFrames } : {}),
  onStuck: (frames) =>
    log.warn({ frames }, 'the WAL could not be started over (a reader or the writer kept it busy): it grows until a checkpoint finds it free; tried again every tick'),
});
port.on('message', (m: unknown) => {
  if (m !== 'stop') return;
  stop();
  // A last checkpoint, so a stopped head office leaves a small WAL behind.
  try {
    sqlite.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    log.warn({ err }, 'last WAL checkpoint failed');
  }
  sqlite.close();
  port.postMessage('stopped');
  port.close();
});
