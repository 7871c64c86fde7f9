import { postgresMissing, startPostgres } from './postgres.js';

/**
 * The global setup of the server suite's run on PostgreSQL (vitest.postgres.config.ts): one throwaway cluster for the
 * whole run; every head office a test starts (test/support/harness.ts) gets an empty database of its own on it,
 * named by FOOTFALL_TEST_POSTGRES_URL (the cluster's superuser URL), which the test processes inherit.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const missing = postgresMissing();
  if (missing) throw new Error(`the server suite on PostgreSQL needs PostgreSQL: ${missing}`);
  const cluster = await startPostgres({ maxConnections: 200 });
  process.env.FOOTFALL_TEST_POSTGRES_URL = cluster.url();
  return async () => await cluster.close();
}
