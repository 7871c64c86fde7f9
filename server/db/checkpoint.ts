import type Database from 'better-sqlite3';

/** A checkpoint at least this long is reported (onSlow): at 400 visits a second one tick's copy and sync take 50-75 ms here. */
const SLOW_MS = 200;

/**
 * The WAL is started over (a TRUNCATE checkpoint) once it holds this many frames (pages): 64 MiB at 4 KiB pages.
 * A PASSIVE checkpoint copies the WAL into the database file but never starts the file over: SQLite does that at the
 * start of a write transaction only when every frame has been copied and no reader still uses the WAL, which under a
 * steady stream of visits (a batch every few milliseconds, a checkpoint taking longer) never happens. The file then
 * grew by ~17 MB a second at 400 visits a second (12 GB in a 10-minute run), filling the page cache with dirty pages
 * until the kernel throttled the writer: PUBACK p99 above a second (docs/decisions.md, "Ingest CPU per visit, third
 * round").
 */
export const RESTART_FRAMES = 16_384;

/**
 * A connection that leaves checkpoints to the checkpoint thread still checkpoints in its own commits (SQLite's automatic
 * PASSIVE one) once the WAL holds this many frames (128 MiB at 4 KiB pages): the thread has fallen behind a writer that
 * never pauses, and only the writer paying for the copy bounds the file. A test writer committing 32 MB a second with no
 * pause took the WAL to 13,846 frames of a 200-frame restart size without it, ~400 with it at twice that size
 * (server/db/checkpoint.test.ts). The ingest thread at 2,000 shop PCs never comes near it (0 TRUNCATEs needed).
 */
export const WRITER_BACKSTOP_FRAMES = 2 * RESTART_FRAMES;

/** How soon the next PASSIVE checkpoint runs once the WAL holds a quarter of RESTART_FRAMES (see checkpointEvery). */
const HURRY_MS = 10;
/** The hurry ends when nothing was written for this long (a large WAL left by a burst is only started over by the next write). */
const HURRY_IDLE_MS = 1000;

/** How long a TRUNCATE checkpoint waits for the writer and for readers to leave the WAL before giving up (next tick). */
const RESTART_WAIT_MS = 50;

export interface CheckpointOptions {
  onError: (err: unknown) => void;
  onSlow?: (ms: number, pages: number) => void;
  /** The WAL's frames at which it is started over (default RESTART_FRAMES). */
  restartFrames?: number;
  /** The WAL reached `restartFrames` and could not be started over (a reader or the writer stayed): told once a minute at most. */
  onStuck?: (frames: number) => void;
}

/**
 * WAL checkpoints off the request thread.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1,000 pages, on whichever connection
 * committed: on head office's main thread that is a request (a poll's photo-link audit row is a few pages, so at 200
 * polls a second one poll in about 250 copied up to 4 MB into the database file and synced it before answering). The
 * main thread's and the ingest thread's connections therefore checkpoint only past WRITER_BACKSTOP_FRAMES (openDatabase's
 * `autoCheckpoint: false`), and the checkpoint thread (checkpoint-worker.ts) checkpoints every `everyMs` instead:
 * PASSIVE, so it never waits for, or blocks, a reader or a writer on another connection. Once the WAL holds a quarter
 * of `restartFrames` and is being written (its frame count changed within HURRY_IDLE_MS) it checkpoints every
 * HURRY_MS instead, each time copying only the last commit or two: one that ends between two commits leaves every
 * frame copied, and the writer's next transaction then starts the WAL over by itself, which costs the writer nothing.
 * Only if the WAL still reaches `restartFrames`, TRUNCATE, which blocks the writer: it waits up to RESTART_WAIT_MS for
 * the writer to finish its batch and for readers to leave the WAL, copies what the PASSIVE one left, and starts the
 * file over (measured at 2,000 shop PCs: every ~2 s, 38-136 ms each, with the writer held: the PUBACK p99;
 * docs/decisions.md, "The WAL starts over by itself"). Returns the function that stops it.
 */
export function checkpointEvery(sqlite: Database.Database, everyMs: number, o: CheckpointOptions): () => void {
  const restartFrames = o.restartFrames ?? RESTART_FRAMES;
  let stuckToldAt = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let lastFrames = -1;
  let writtenAt = 0;
  const tick = (): number => {
    try {
      const t = performance.now();
      const [r] = sqlite.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
      const took = performance.now() - t;
      // A checkpoint syncs the database file: a slow disk makes the thread that runs it wait (reported, not hidden).
      if (took >= SLOW_MS) o.onSlow?.(took, r?.checkpointed ?? 0);
      const frames = r?.log ?? 0;
      const now = performance.now();
      if (frames !== lastFrames) [lastFrames, writtenAt] = [frames, now]; // grown, or started over by a writer
      if (frames < restartFrames) return frames >= restartFrames / 4 && now - writtenAt < HURRY_IDLE_MS ? HURRY_MS : everyMs;
      if (truncateWal(sqlite, RESTART_WAIT_MS)) return everyMs;
      if (Date.now() - stuckToldAt >= 60_000) {
        stuckToldAt = Date.now();
        o.onStuck?.(r!.log);
      }
    } catch (err) {
      o.onError(err);
    }
    return everyMs;
  };
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => schedule(tick()), ms);
    timer.unref();
  };
  schedule(everyMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * A TRUNCATE checkpoint (everything copied into the database file, the WAL emptied) that waits at most `waitMs` for
 * the writer and the readers, without the connection's own busy timeout; true when the WAL was emptied.
 */
export function truncateWal(sqlite: Database.Database, waitMs: number): boolean {
  const timeout = sqlite.pragma('busy_timeout', { simple: true }) as number;
  sqlite.pragma(`busy_timeout = ${waitMs}`);
  try {
    const [r] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    return r?.busy === 0;
  } finally {
    sqlite.pragma(`busy_timeout = ${timeout}`);
  }
}
