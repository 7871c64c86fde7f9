import { noteSkip } from './skips.js';

/** Whether this is the server suite's run on PostgreSQL (vitest.postgres.config.ts, test/support/postgres-global.ts). */
export const onPostgresRun = process.env.FOOTFALL_TEST_POSTGRES_URL !== undefined;

/**
 * For `describe.skipIf` / `it.skipIf`: true on the PostgreSQL run, for a test of SQLite's own machinery (its file, its
 * transactions, its threads, its triggers), with the reason printed at the end of the run.
 */
export function sqliteOnly(file: string, what: string): boolean {
  if (onPostgresRun) noteSkip(file, `SQLite's own (${what}): not on the PostgreSQL run`);
  return onPostgresRun;
}
