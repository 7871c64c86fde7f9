import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import SkipSummary from './test/support/skip-summary.js';
import { postgresMissing } from './test/support/postgres.js';
import { testFilesUnder } from './test/support/test-files.js';

// Where PostgreSQL is not installed (a newcomer's bare machine) the run has nothing to do, and says why.
const missing = postgresMissing();
if (missing) console.warn(`npm run test:postgres: skipped, ${missing}`);

/**
 * The server suite's files that open a database: those that start a head office or open a store themselves, and
 * everything under server/db/pg. The rest (the matcher, the logger, password hashing, the broker's sessions...) run
 * the same code whatever the database, and run once, in the main run: here they were ~25 s of CPU for nothing.
 */
const OPENS_A_DATABASE = /\b(startHarness|startServer|openDatabase|openStore|openPostgresStore|createDatabaseAt|onPostgresRun)\b|support\/(harness|stores)\.js/;
const postgresTestFiles = (): string[] =>
  testFilesUnder('server').filter((f) => f.startsWith(path.join('server', 'db', 'pg')) || OPENS_A_DATABASE.test(readFileSync(f, 'utf8')));

/**
 * Head office's server suite on PostgreSQL (issue 27): the test files of the `server` project of vitest.config.ts
 * that open a database (above), every head office on a database of its own in one throwaway cluster
 * (test/support/postgres-global.ts). FOOTFALL_DATABASE_URL names PostgreSQL before anything is imported, so the
 * tables are PostgreSQL's (server/db/tables.ts); the harness then gives each head office its own database.
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
    env: { FOOTFALL_TEST_PASSWORD_COST: 'low', FOOTFALL_DATABASE_URL: 'postgres://set-per-head-office.invalid/' },
    reporters: ['default', new SkipSummary()],
    include: missing ? [] : postgresTestFiles(),
    isolate: false,
  },
});
