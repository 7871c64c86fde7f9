import { defineConfig } from 'vitest/config';
import LongestFirst from './test/support/sequencer.js';
import SkipSummary from './test/support/skip-summary.js';

export default defineConfig({
  test: {
    include: ['server/**/*.test.ts', 'agent/**/*.test.ts', 'shared/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts'],
    // The install scripts under a real systemd run beside this run, in their own vitest (vitest.systemd.config.ts,
    // `npm test` starts both): minutes of debootstrap and apt-get downloads that would hold one of the two workers.
    exclude: ['**/node_modules/**', 'test/systemd.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    // Three test files at a time whatever the machine (vitest's default on 2 cores is one): most files wait on servers,
    // ffmpeg or Chromium rather than compute. On the 2-core reference machine the run took 710 s with two (1.3 cores
    // busy on average) and 600 s with three (1.6). The suite is written to pass on a loaded 2-core machine: the
    // real-time video tests wait for what they count rather than for a time.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirst },
    // After vitest's own summary: how many tests were skipped and why, one line per missing tool (test/support/skips.ts).
    reporters: ['default', new SkipSummary()],
  },
});
