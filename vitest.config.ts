import { defineConfig } from 'vitest/config';
import LongestFirst from './test/support/sequencer.js';
import SkipSummary from './test/support/skip-summary.js';

export default defineConfig({
  test: {
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
    // Every file but the real-time camera files lowers its own priority (nice 10): those count what arrives in time.
    setupFiles: ['test/support/priority.ts', 'test/support/built-threads.ts'],
    // Passwords hashed at 1 MiB and one pass instead of OWASP's 19 MiB and two (server/auth/passwords.ts): the run
    // hashes and verifies some 1,500 of them (estimated), about 50 s of CPU at the real cost. Honoured only under vitest.
    env: { FOOTFALL_TEST_PASSWORD_COST: 'low' },
    // After vitest's own summary: how many tests were skipped and why, one line per missing tool (test/support/skips.ts).
    reporters: ['default', new SkipSummary()],
    projects: [
      {
        // Head office's files share a worker process, one after another (no isolation): a fresh process per file spent
        // ~3 s importing head office before each file's first test, most of the folder's time (server/ alone on 2 cores:
        // 240 s isolated, 149 s not). Each file starts its own head office on its own temp database, and restores
        // what it changes of the process (fake clocks). Files that touch process-wide state they cannot undo (the
        // shop PC's models, worker threads, the CPU's float mode) live under agent/, cli/ and test/, isolated.
        extends: true,
        test: { name: 'server', include: ['server/**/*.test.ts', 'shared/**/*.test.ts'], isolate: false },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['agent/**/*.test.ts', 'cli/**/*.test.ts', 'test/**/*.test.ts'],
          // The install scripts under a real systemd run beside this run, in their own vitest (vitest.systemd.config.ts,
          // `npm test` starts both): minutes of debootstrap and apt-get downloads that would hold one of the workers.
          exclude: ['**/node_modules/**', 'test/systemd.test.ts'],
        },
      },
    ],
  },
});
