/**
 * A setup file of every test run (vitest.config.ts): the real-time camera files come first for the CPU.
 *
 * The files that call `useCameraSlot()` count what a shop PC saw in a video played at real speed; a shop PC that
 * cannot keep up drops frames, as it should, and then counts wrong (docs/decisions.md: the door test counted 5
 * entries of 7 when head office's files shared processes beside it). Every other file is batch work: it lowers its
 * own process's priority to nice 10 (every thread; the threads, workers and programs it starts later inherit it:
 * Chromium, the agents, ffmpeg), so that on a busy machine the camera file's shop PC gets the CPU it needs and the
 * rest share what it leaves. Lowering needs no privilege; a camera file's process is never lowered (vitest starts
 * each of the isolated files in a fresh process at the run's own priority). The systemd test runs at nice 15.
 */
import fs from 'node:fs';
import os from 'node:os';
import { expect } from 'vitest';
import { usesCameraSlot } from './camera-files.js';

/** The batch files' niceness (the camera files stay at the run's own, usually 0). */
export const BATCH_NICE = 10;

/** This process's threads (Linux keeps the niceness per thread), or [0], the process, elsewhere. */
export function threadIds(): number[] {
  return process.platform === 'linux' ? fs.readdirSync('/proc/self/task').map(Number) : [0];
}

/** Lowers this process's priority to `nice`: every thread it has now. */
function lowerPriority(nice: number): void {
  for (const tid of threadIds()) {
    try {
      if (os.getPriority(tid) < nice) os.setPriority(tid, nice);
    } catch {
      // (a thread that has just ended)
    }
  }
}

const file = expect.getState().testPath;
if (file && !usesCameraSlot(file)) lowerPriority(BATCH_NICE);
