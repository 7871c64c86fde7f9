import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, startSecondHeadOffice, type Company, type Harness } from '../../test/support/harness.js';
import { syntheticFace } from '../../test/support/shop-pc.js';
import { onPostgresRun } from '../../test/support/stores.js';
import { noteSkip } from '../../test/support/skips.js';
import { openStream, shopPc, type ShopPc } from '../../test/support/visits.js';
import { parseArrivals } from './arrivals-relay.js';

/**
 * Two head offices on one PostgreSQL database (two processes behind a load balancer, here in one test process):
 * a stream opened on either gets every arrival once, whichever of them stored it.
 */
if (!onPostgresRun) noteSkip('server/visits/arrivals-relay.test.ts', 'the arrivals relay is PostgreSQL\'s: it runs in `npm run test:postgres` (and test/scale-out-e2e.test.ts runs two processes)');

describe('parseArrivals', () => {
  it('reads company:first:last parts and skips malformed ones', () => {
    expect(parseArrivals('a-1:5:9,b:10:10,bad,c:x:1')).toEqual([
      ['a-1', 5, 9],
      ['b', 10, 10],
    ]);
  });
});

describe.skipIf(!onPostgresRun)('the arrivals relay: two head offices, one database', () => {
  let a: Harness;
  let b: Harness;
  let chain: Company;
  let pc: ShopPc;

  beforeAll(async () => {
    a = await startHarness();
    // b: the same database and the same server key (a second process of the same head office).
    b = await startSecondHeadOffice(a);
    chain = await a.company();
    pc = await shopPc(a, chain.ownerToken, chain.slug, 'Bandra');
  });

  afterAll(async () => {
    await pc?.close();
    await b?.close();
    await a?.close();
  });

  it('arrivals stored by one head office reach the streams of both, once each, in order', async () => {
    const onA = await openStream(a, chain.ownerToken);
    const onB = await openStream(b, chain.ownerToken);
    try {
      expect([onA.res.status, onB.res.status]).toEqual([200, 200]);
      const sent: string[] = [];
      for (let i = 0; i < 5; i++) {
        const visitId = randomUUID();
        sent.push(visitId);
        await pc.publish({
          visit_id: visitId,
          occurred_at: new Date(Date.now() - (5 - i) * 600_000).toISOString(),
          camera_id: 'door',
          embedding: syntheticFace(900 + i),
          recognition_model: 'test-model',
          quality: 0.9,
          passed_gate: true,
        });
      }
      const gotA = await onA.reader.next(5);
      const gotB = await onB.reader.next(5);
      expect(gotB.map((e) => e.id)).toEqual(gotA.map((e) => e.id));
      expect(gotB.map((e) => e.arrival)).toEqual(gotA.map((e) => e.arrival));
      // Nothing more arrives (each once).
      await new Promise((r) => setTimeout(r, 300));
      expect(onB.reader.events.filter((e) => e.event === 'arrival')).toHaveLength(5);
      expect(onA.reader.events.filter((e) => e.event === 'arrival')).toHaveLength(5);
      expect(b.server.ingest.stats.stored).toBe(0);
      expect(a.server.ingest.stats.stored).toBe(5);
    } finally {
      await onA.close();
      await onB.close();
    }
  });
});
