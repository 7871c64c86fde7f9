import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lock } from 'proper-lockfile';
import { afterAll, beforeAll } from 'vitest';

/**
 * One real-time camera test file at a time, across vitest's workers.
 *
 * The files that count what a shop PC saw in a video played at real speed (people at the door, faces per showing,
 * visits per stay) lose frames when the CPU is starved, and then count wrong: the shop PC drops frames it cannot
 * analyse in time, as it should. Two of them side by side on a 2-core machine, beside Chromium and the systemd test,
 * did that in CI (a two-second showing of four faces analysed once: no visit; a stay split in two). A file that calls
 * this first (before its own hooks) waits for the slot in its beforeAll and frees it in its afterAll. The test
 * sequencer (test/support/sequencer.ts) finds these files by that call and spreads them over the run so that the
 * other workers do other files meanwhile rather than wait.
 *
 * The slot is a lock folder in the temp directory, one per checkout (proper-lockfile: a crashed worker's lock goes
 * stale in seconds and is taken over).
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const target = path.join(os.tmpdir(), `footfall-camera-slot-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);

/** How long a file may wait for the slot: every other camera file running before it, on a loaded machine. */
const WAIT_MS = 15 * 60_000;

export function useCameraSlot(): void {
  let release: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const waited = Date.now();
    release = await lock(target, {
      realpath: false,
      stale: 15_000,
      update: 5_000,
      retries: { retries: Math.ceil(WAIT_MS / 250), factor: 1, minTimeout: 250, maxTimeout: 250 },
      // A holder too starved to refresh its lock for 15 s loses it to the next file: the two then overlap, as
      // before the slot existed. proper-lockfile's default here is to throw from a timer, which would fail the run.
      onCompromised: (err) => console.warn(`the camera slot was taken over: ${err.message}`),
    });
    const ms = Date.now() - waited;
    if (ms > 1000 && process.env.FOOTFALL_TEST_TIMING) console.log(`waited ${ms} ms for the camera slot`);
  }, WAIT_MS + 60_000);
  afterAll(async () => {
    await release?.().catch(() => undefined); // (taken over meanwhile: nothing to free)
  });
}
