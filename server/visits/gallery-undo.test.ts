import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VisitMessage } from '../../shared/messages.js';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { syntheticFace, waitFor } from '../../test/support/shop-pc.js';
import { shopPc, type ShopPc } from '../../test/support/visits.js';
import { loadKeys } from '../crypto/keys.js';
import type { Store } from '../db/open.js';
import { statementOn } from '../db/statement.js';
import { openStore } from '../db/store.js';
import { Identities } from './identities.js';
import { IngestCore } from './ingest-core.js';

/**
 * A batch whose transaction fails after deciding (new customers enrolled, templates updated in memory) leaves the
 * gallery as the database has it, by taking back what the attempt changed (Identities.undo), not by reloading the
 * company's gallery (docs/benchmarks.md, finding 1: on PostgreSQL every serialization failure reloaded 20,000
 * templates inside the next attempt). Real stores: the failure is a trigger on sightings, inserted after the
 * decisions; on PostgreSQL a serialization failure (SQLSTATE 40001: the store runs the body again, 8 times, and the
 * batch is then held for later), on SQLite an abort (the batch, then each visit, fails).
 */
const MODEL = 'test-model';
let h: Harness;
let chain: Company;
let pc: ShopPc;
let store: Store;
let identities: Identities;
let core: IngestCore;
let messageId = 0;

function give(faces: number[]): void {
  const topic = upTopic(chain.slug, pc.shop.slug, 'visit');
  for (const face of faces) {
    const visit: VisitMessage = {
      visit_id: randomUUID(),
      occurred_at: new Date().toISOString(),
      camera_id: 'door',
      embedding: syntheticFace(face),
      recognition_model: MODEL,
      quality: 0.9,
      passed_gate: true,
    };
    core.accept(++messageId, topic, Buffer.from(JSON.stringify(visit)), new Date().toISOString());
  }
}

const run = (text: string) => statementOn(h.server.store, text).run();
const storedCustomers = async () =>
  await statementOn(h.server.store, 'select id, template_count as count from customers where company_id = ? and template is not null and erased_at is null and merged_into is null order by id').all<{ id: string; count: number }>(chain.id);

/** The in-memory gallery equals one freshly loaded from the database: the same customers, templates and weights. */
async function expectEqualToDatabase(): Promise<void> {
  const mine = identities.loaded(chain.id, MODEL)!.gallery;
  const fresh = new Identities({ store, keys: loadKeys(h.server.deps.config), log: pino({ level: 'silent' }) });
  await fresh.loadAll();
  const theirs = fresh.loaded(chain.id, MODEL)!.gallery;
  const stored = await storedCustomers();
  expect(mine.size).toBe(stored.length);
  expect(theirs.size).toBe(stored.length);
  for (const { id, count } of stored) {
    const a = mine.entry(id);
    const b = theirs.entry(id);
    expect(a, id).toBeDefined();
    expect(a!.count).toBe(count);
    expect(a!.count).toBe(b!.count);
    // The same template to float32 precision (the stored blob is the float32 the gallery had before normalising).
    let worst = 0;
    for (let i = 0; i < a!.template.length; i++) worst = Math.max(worst, Math.abs(a!.template[i]! - b!.template[i]!));
    expect(worst).toBeLessThan(1e-6);
  }
}

beforeAll(async () => {
  h = await startHarness({ FOOTFALL_VISIT_GAP_S: 0 });
  chain = await h.company();
  pc = await shopPc(h, chain.ownerToken, chain.slug, 'Powai');
  const config = h.server.deps.config;
  store = await openStore(config, { pool: 2 });
  identities = new Identities({ store, keys: loadKeys(config), log: pino({ level: 'silent' }) }, { matchThreshold: config.FOOTFALL_MATCH_THRESHOLD });
  core = new IngestCore({ store, config, log: pino({ level: 'silent' }), identities, emit: () => undefined });
});

afterAll(async () => {
  await pc?.close();
  await store?.close();
  await h?.close();
});

describe('a failed ingest transaction and the gallery in memory', () => {
  it('takes back exactly what the failed attempt changed, keeps the loaded gallery, and the batch then stores as if it had never failed', async () => {
    give([1, 2, 3, 4, 5, 6]);
    await core.flush();
    const before = await storedCustomers();
    expect(before).toHaveLength(6);
    const gallery = identities.loaded(chain.id, MODEL)!.gallery;
    await expectEqualToDatabase();

    // Returning faces (template updates) and new faces (enrolments), refused after they were decided.
    const postgres = store.dialect === 'postgres';
    if (postgres) {
      await run(`create function refuse_sighting() returns trigger language plpgsql as $$
        begin raise exception 'refused for the test' using errcode = 'serialization_failure'; end $$`);
      await run('create trigger refuse_sighting before insert on sightings for each row execute function refuse_sighting()');
    } else {
      await run(`create trigger refuse_sighting before insert on sightings begin select raise(abort, 'refused for the test'); end`);
    }
    const failedBefore = core.stats.failed;
    give([1, 2, 3, 101, 102, 103]);
    await core.flush();
    if (postgres) expect(core.waitingForDatabase).toBe(true);
    else expect(core.stats.failed - failedBefore).toBe(6);
    expect(await storedCustomers()).toEqual(before);
    // The same gallery object, not a reload, and equal to the database again.
    expect(identities.loaded(chain.id, MODEL)!.gallery).toBe(gallery);
    await expectEqualToDatabase();

    if (postgres) await run('drop trigger refuse_sighting on sightings');
    else await run('drop trigger refuse_sighting');
    if (postgres) await run('drop function refuse_sighting()');
    // PostgreSQL held the batch and writes it when its pause is over; SQLite dropped it, so it is sent again.
    if (!postgres) give([1, 2, 3, 101, 102, 103]);
    await waitFor(async () => {
      await core.flush();
      return (await storedCustomers()).length === 9;
    });
    const after = await storedCustomers();
    // Three new customers, once each; the three returning faces' weights moved on once.
    expect(after.filter((c) => !before.some((b) => b.id === c.id))).toHaveLength(3);
    for (const b of before.slice(0, 6)) {
      const a = after.find((c) => c.id === b.id)!;
      expect(a.count - b.count).toBeLessThanOrEqual(1);
    }
    expect(after.reduce((n, c) => n + c.count, 0) - before.reduce((n, c) => n + c.count, 0)).toBe(3 + 3);
    expect(identities.loaded(chain.id, MODEL)!.gallery).toBe(gallery);
    await expectEqualToDatabase();
  });
});
