import { defineConfig } from 'vitest/config';
import SkipSummary from './test/support/skip-summary.js';

/**
 * The install scripts under a real systemd (test/systemd.test.ts), run by `npm test` beside the main run
 * (vitest.config.ts): it spends its two to three minutes downloading and unpacking (debootstrap, apt-get, npm) in a
 * container, so it gets a process of its own rather than one of the main run's two workers. Its own cache folder
 * keeps the main run's record of file durations (test/support/sequencer.ts) whole. `npm test` runs it at nice 15:
 * its unpacking and installing is batch work, while the main run's real-time camera tests count what arrives in
 * time; on 2 cores the two runs together took 766 s at the same priority (CI, 2026-11-29), over the 12 minutes. The
 * main run's other files lower themselves to nice 10 (test/support/priority.ts), so this stays below them; at nice 19
 * beside four workers its debootstrap ran out of its 8 minutes.
 */
export default defineConfig({
  cacheDir: 'node_modules/.vite-systemd',
  test: {
    include: ['test/systemd.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', new SkipSummary()],
  },
});
