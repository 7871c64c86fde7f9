import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { noteSkip } from '../../test/support/skips.js';
import { onPostgresRun } from '../../test/support/stores.js';
import { shopPc, type ShopPc } from '../../test/support/visits.js';
import { waitFor } from '../../test/support/shop-pc.js';
import { loadKeys } from '../crypto/keys.js';
import { advisoryKey } from '../db/pg/store.js';
import type { Store } from '../db/open.js';
import { openStore } from '../db/store.js';
import { Identities } from './identities.js';
import { IngestCore } from './ingest-core.js';

/**
 * A visit is acknowledged to the broker (its PUBACK) only once its batch has committed: the ingest thread's
 * `doneUpTo` must stay below a batch that is still being written. On PostgreSQL a batch's transaction waits for the
 * network and for the company's ingest lock (another head-office process may hold it), and visits keep arriving
 * meanwhile; a head office killed then must not have acknowledged what it had not stored. On SQLite a batch commits
 * within one turn of the thread's event loop, so nothing can ask in between: PostgreSQL's run only.
 */
const FILE = 'server/visits/ingest-ack.test.ts';
if (!onPostgresRun) noteSkip(FILE, "PostgreSQL's (a batch waiting for another process's lock): on the PostgreSQL run only");

describe.skipIf(!onPostgresRun)('visit ingest acknowledges a batch only after its commit', () => {
  let h: Harness;
  let chain: Company;
  let pc: ShopPc;
  let store: Store;
  let core: IngestCore;
  let other: pg.Client;
  let id = 0;

  const give = () =>
    core.accept(
      ++id,
      upTopic(chain.slug, pc.shop.slug, 'visit'),
      Buffer.from(JSON.stringify({ visit_id: randomUUID(), occurred_at: new Date().toISOString(), camera_id: 'door', quality: 0.2, passed_gate: false })),
      new Date().toISOString(),
    );

  beforeAll(async () => {
    h = await startHarness();
    chain = await h.company();
    pc = await shopPc(h, chain.ownerToken, chain.slug, 'Colaba');
    // Batches start on the next turn of the event loop (no window), so a test can know the next flush has begun.
    const config = { ...h.server.deps.config, FOOTFALL_INGEST_BATCH_MS: 0 };
    const log = pino({ level: 'silent' });
    store = await openStore(config, { pool: 2 });
    core = new IngestCore({ store, config, log, identities: new Identities({ store, keys: loadKeys(config), log }, { matchThreshold: config.FOOTFALL_MATCH_THRESHOLD }), emit: () => undefined });
    other = new pg.Client({ connectionString: config.FOOTFALL_DATABASE_URL });
    await other.connect();
  });

  afterAll(async () => {
    await other?.end();
    await pc?.close();
    await store?.close();
    await h?.close();
  });

  it('while the company’s lock is held elsewhere, the waiting batch and what came after it stay unacknowledged', async () => {
    // Another process is writing this company's visits: it holds the lock.
    await other.query('select pg_advisory_lock($1)', [advisoryKey(`ingest:${chain.id}`).toString()]);
    give();
    give();
    const first = core.flush();
    // The batch is off the queue and waiting for the lock.
    await waitFor(async () => (await other.query("select 1 from pg_locks where locktype = 'advisory' and not granted")).rowCount === 1);
    expect(core.doneUpTo).toBe(0);
    give(); // more arrive meanwhile, and their flush begins (it must wait for the batch being written)
    await new Promise((resolve) => setImmediate(resolve));
    expect(core.doneUpTo).toBe(0);
    let drained = false;
    const draining = core.drained().then(() => (drained = true));
    await other.query('select pg_advisory_unlock_all()');
    await first;
    expect(core.doneUpTo).toBe(2);
    await core.flush();
    expect(core.doneUpTo).toBe(3);
    await draining;
    expect(drained).toBe(true);
    expect(core.stats).toMatchObject({ received: 3, stored: 3, failed: 0 });
  });
});
