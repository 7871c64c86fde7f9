import type Database from 'better-sqlite3';

/** A checkpoint at least this long is reported (onSlow). */
const SLOW_MS = 50;

/**
 * WAL checkpoints off the request thread.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1,000 pages, on whichever connection
 * committed: on head office's main thread that is a request (a poll's photo-link audit row is a few pages, so at 200
 * polls a second one poll in about 250 copied up to 4 MB into the database file and synced it before answering). The
 * main thread's connection therefore has automatic checkpoints off (openDatabase's `autoCheckpoint: false`), and the
 * visit-ingest thread, which has its own connection and runs for the server's whole life, checkpoints every
 * `everyMs` instead: PASSIVE, so it never waits for, or blocks, a reader or a writer on another connection.
 * Returns the function that stops it.
 */
export function checkpointEvery(
  sqlite: Database.Database,
  everyMs: number,
  onError: (err: unknown) => void,
  onSlow?: (ms: number, pages: number) => void,
): () => void {
  const timer = setInterval(() => {
    try {
      const t = performance.now();
      const r = sqlite.pragma('wal_checkpoint(PASSIVE)') as { checkpointed: number }[];
      const took = performance.now() - t;
      // A checkpoint syncs the database file: a slow disk makes the thread that runs it wait (reported, not hidden).
      if (took >= SLOW_MS) onSlow?.(took, r[0]?.checkpointed ?? 0);
    } catch (err) {
      onError(err);
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
