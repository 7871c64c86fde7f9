import { defineConfig } from 'vitest/config';
import SkipSummary from './test/support/skip-summary.js';
import { postgresMissing } from './test/support/postgres.js';

// Where PostgreSQL is not installed (a newcomer's bare machine) the run has nothing to do, and says why.
const missing = postgresMissing();
if (missing) console.warn(`npm run test:postgres: skipped, ${missing}`);

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
    globalSetup: missing ? [] : ['test/support/postgres-global.ts'],
    passWithNoTests: true,
    env: { FOOTFALL_TEST_PASSWORD_COST: 'low', FOOTFALL_DATABASE_URL: 'postgres://set-per-head-office.invalid/', FOOTFALL_POSTGRES_PREVIEW: 'true' },
    reporters: ['default', new SkipSummary()],
    include: missing ? [] : ['server/**/*.test.ts'],
    isolate: false,
  },
});
