import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { WRITER_BACKSTOP_FRAMES } from '../db/checkpoint.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { heartbeat, waitFor } from '../../test/support/shop-pc.js';
import { onPostgresRun } from '../../test/support/stores.js';
import { arrivals, shopPc, type ShopPc } from '../../test/support/visits.js';

/**
 * The visit ingest thread and the WAL checkpoint thread start when shop PCs report, not with head office
 * (server/visits/ingest.ts, server/db/checkpointer.ts): the console and the API work without them, the first visit
 * (with no heartbeat before it) is written and acknowledged, and a heartbeat starts them before any visit comes.
 */
const visit = () => ({ visit_id: randomUUID(), occurred_at: new Date().toISOString(), camera_id: 'door', quality: 0.2, passed_gate: false });

/** The main connection's auto-checkpoint (SQLite: 1,000 pages by default; only a backstop once the checkpoint thread runs). */
const autoCheckpoint = (h: Harness) => (h.server.store.dialect === 'sqlite' ? h.server.store.sqlite.pragma('wal_autocheckpoint', { simple: true }) : undefined);

describe('the ingest and checkpoint threads start when shop PCs report', () => {
  let h: Harness;
  let chain: Company;
  let pc: ShopPc;

  beforeAll(async () => {
    h = await startHarness();
    chain = await h.company();
    pc = await shopPc(h, chain.ownerToken, chain.slug, 'Colaba');
  });

  afterAll(async () => {
    await pc?.close();
    await h?.close();
  });

  it('a head office nobody reports to runs neither; its API writes and reads, and SQLite checkpoints in its own commits', async () => {
    expect(h.server.ingest.threadStarted).toBe(false);
    if (!onPostgresRun) expect(autoCheckpoint(h)).toBe(1000);
    // The company, shop and enrolment above were written; a drain with nothing handed over resolves at once.
    const shops = await h.request('GET', '/api/sites', { token: chain.ownerToken });
    expect(shops.status).toBe(200);
    expect(shops.body.map((s: { slug: string }) => s.slug)).toEqual([pc.shop.slug]);
    await h.server.ingest.drained();
    expect(h.server.ingest.threadStarted).toBe(false);
  });

  it('the first visit, with no heartbeat before it, starts both, is acknowledged once written and is in the feed', async () => {
    const v = visit();
    await pc.publish(v); // resolves on the PUBACK, which waits for the write
    expect(h.server.ingest.threadStarted).toBe(true);
    if (!onPostgresRun) expect(autoCheckpoint(h)).toBe(WRITER_BACKSTOP_FRAMES);
    const rows = await arrivals(h, chain.ownerToken, 1);
    expect(rows.map((r: { visit_id: string }) => r.visit_id)).toEqual([v.visit_id]);
    expect(h.server.ingest.stats).toMatchObject({ received: 1 });
  });

  it("a shop PC's first heartbeat starts them before any visit comes", async () => {
    const other = await startHarness();
    try {
      const c = await other.company();
      const quiet = await shopPc(other, c.ownerToken, c.slug, 'Bandra');
      try {
        expect(other.server.ingest.threadStarted).toBe(false);
        await quiet.client.publishAsync(upTopic(c.slug, quiet.shop.slug, 'heartbeat'), JSON.stringify(heartbeat()), { qos: 1 });
        await waitFor(() => other.server.ingest.threadStarted);
        if (!onPostgresRun) expect(autoCheckpoint(other)).toBe(WRITER_BACKSTOP_FRAMES);
        expect(other.server.ingest.stats).toMatchObject({ received: 0 });
      } finally {
        await quiet.close();
      }
    } finally {
      await other.close();
    }
  });
});
