import { defineConfig } from 'vitest/config';
import SkipSummary from './test/support/skip-summary.js';

/**
 * Head office's server suite on PostgreSQL (issue 27): the same test files as the `server` project of
 * vitest.config.ts, every head office on a database of its own in one throwaway cluster (test/support/postgres-global.ts).
 * FOOTFALL_DATABASE_URL names PostgreSQL before anything is imported, so the tables are PostgreSQL's
 * (server/db/tables.ts); the harness then gives each head office its own database.
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 3,
    setupFiles: ['test/support/priority.ts', 'test/support/built-threads.ts'],
    globalSetup: ['test/support/postgres-global.ts'],
    env: { FOOTFALL_TEST_PASSWORD_COST: 'low', FOOTFALL_DATABASE_URL: 'postgres://set-per-head-office.invalid/', FOOTFALL_POSTGRES_PREVIEW: 'true' },
    reporters: ['default', new SkipSummary()],
    include: ['server/**/*.test.ts'],
    isolate: false,
  },
});
