import { defineConfig } from 'vitest/config';
import SlowWaitersFirst from './test/support/sequencer.js';
import SkipSummary from './test/support/skip-summary.js';

export default defineConfig({
  test: {
    include: ['server/**/*.test.ts', 'agent/**/*.test.ts', 'shared/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    // Two test files at a time whatever the machine (vitest's default on 2 cores is one): most files wait on servers,
    // ffmpeg, Chromium or a container rather than compute, and the systemd test (first, test/support/sequencer.ts)
    // overlaps everything else. The suite is written to pass on a loaded 2-core machine.
    maxWorkers: 2,
    sequence: { sequencer: SlowWaitersFirst },
    // After vitest's own summary: how many tests were skipped and why, one line per missing tool (test/support/skips.ts).
    reporters: ['default', new SkipSummary()],
  },
});
