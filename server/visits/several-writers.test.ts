import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VisitMessage } from '../../shared/messages.js';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { syntheticFace, waitFor } from '../../test/support/shop-pc.js';
import { noteSkip } from '../../test/support/skips.js';
import { onPostgresRun } from '../../test/support/stores.js';
import { shopPc, type ShopPc } from '../../test/support/visits.js';
import { loadKeys } from '../crypto/keys.js';
import type { Store } from '../db/open.js';
import { statementOn } from '../db/statement.js';
import { openStore } from '../db/store.js';
import { Identities } from './identities.js';
import { IngestCore } from './ingest-core.js';

/**
 * Two writers of one company's visits, as two head-office processes are (issue 27 item 3): each its own database
 * connection, its own in-memory galleries and its own ingest, over one database. On PostgreSQL (the server suite's
 * PostgreSQL run) they really run at once; on SQLite they take turns, which must give the same answers.
 */
if (!onPostgresRun) noteSkip('server/visits/several-writers.test.ts', 'a database that refuses connections is made with PostgreSQL: on the PostgreSQL run');

let h: Harness;
let chain: Company;
let pc: ShopPc;
const writers: { store: Store; core: IngestCore }[] = [];
let messageId = 0;

const visit = (face: number): VisitMessage => ({
  visit_id: randomUUID(),
  occurred_at: new Date().toISOString(),
  camera_id: 'door',
  embedding: syntheticFace(face),
  recognition_model: 'test-model',
  quality: 0.9,
  passed_gate: true,
});

/** Hands visits of these faces to one writer (not yet written). */
function give(w: { core: IngestCore }, faces: number[]): void {
  const topic = upTopic(chain.slug, pc.shop.slug, 'visit');
  for (const f of faces) w.core.accept(++messageId, topic, Buffer.from(JSON.stringify(visit(f))), new Date().toISOString());
}

const count = async (sqlText: string, ...params: unknown[]) => (await statementOn(h.server.store, sqlText).get<{ n: number }>(...params))!.n;
const customersOf = () => count('select count(*) as n from customers where company_id = ? and erased_at is null and merged_into is null', chain.id);
const lastVisit = () => statementOn(h.server.store, 'select customer_id as id from visits where company_id = ? order by seq desc limit 1').get<{ id: string | null }>(chain.id);
const sightingsOf = () => count('select count(*) as n from sightings where company_id = ?', chain.id);

beforeAll(async () => {
  // A long visit gap would make a second sighting extend the first visit; here each sighting is its own visit.
  h = await startHarness({ FOOTFALL_VISIT_GAP_S: 0 });
  chain = await h.company();
  pc = await shopPc(h, chain.ownerToken, chain.slug, 'Bandra');
  const config = h.server.deps.config;
  const keys = loadKeys(config);
  const log = pino({ level: 'silent' });
  for (let i = 0; i < 2; i++) {
    const store = await openStore(config, { pool: 2 });
    const identities = new Identities({ store, keys, log }, { matchThreshold: config.FOOTFALL_MATCH_THRESHOLD });
    writers.push({ store, core: new IngestCore({ store, config, log, identities, emit: () => undefined }) });
  }
});

afterAll(async () => {
  await pc?.close();
  for (const w of writers) await w.store.close();
  await h?.close();
});

describe('two ingest writers over one database', () => {
  it('the same new faces given to both at the same moment make one customer each', async () => {
    const faces = [101, 102, 103, 104, 105, 106, 107, 108, 109, 110];
    for (const w of writers) give(w, faces);
    // SQLite's writers are threads of one process (one connection each), never two connections in one thread: a
    // second BEGIN IMMEDIATE there would block the thread that must finish the first. They take turns here.
    if (h.server.store.dialect === 'postgres') await Promise.all(writers.map((w) => w.core.flush()));
    else for (const w of writers) await w.core.flush();
    expect(await sightingsOf()).toBe(20);
    expect(await customersOf()).toBe(10);
    const made = writers.map((w) => w.core.stats.newCustomers);
    expect(made[0]! + made[1]!).toBe(10);
    expect(writers.map((w) => w.core.stats.failed)).toEqual([0, 0]);
  });

  it("a face one writer enrolled is recognised by the other, whose gallery was loaded before", async () => {
    const [a, b] = writers as [(typeof writers)[0], (typeof writers)[0]];
    give(b, [101]); // b's gallery is loaded and up to date
    await b.core.flush();
    give(a, [201]); // a new person, enrolled by a
    await a.core.flush();
    const before = b.core.stats.matched;
    give(b, [201]);
    await b.core.flush();
    expect(b.core.stats.matched).toBe(before + 1);
    expect(await customersOf()).toBe(11);
  });

  it('template updates made by both are all kept (none written over a stale count)', async () => {
    const [a, b] = writers as [(typeof writers)[0], (typeof writers)[0]];
    give(a, [301]);
    await a.core.flush();
    const { id } = (await lastVisit())!;
    for (let i = 0; i < 3; i++) {
      give(a, [301]);
      await a.core.flush();
      give(b, [301]);
      await b.core.flush();
    }
    // Enrolled with a count of 1, then six good sightings averaged in.
    expect(await statementOn(h.server.store, 'select template_count as n from customers where id = ?').get(id)).toEqual({ n: 7 });
  });

  it("an erasure through the API reaches the other writer's gallery: the face is neither matched nor enrolled again", async () => {
    const [, b] = writers as [(typeof writers)[0], (typeof writers)[0]];
    give(b, [401]);
    await b.core.flush();
    const { id } = (await lastVisit())!;
    const erased = await h.request('DELETE', `/api/visitors/${id}`, { token: chain.ownerToken });
    expect(erased.status).toBe(200);
    const customers = await customersOf();
    const matched = b.core.stats.matched;
    give(b, [401]);
    await b.core.flush();
    expect(b.core.stats.matched).toBe(matched);
    expect(await customersOf()).toBe(customers);
    expect(await lastVisit()).toEqual({ id: null });
  });

  it.skipIf(!onPostgresRun)('while the database refuses connections, visits wait unacknowledged and are written when it is back (PostgreSQL)', async () => {
    const [a] = writers as [(typeof writers)[0]];
    const url = new URL(h.server.deps.config.FOOTFALL_DATABASE_URL!);
    const db = decodeURIComponent(url.pathname.slice(1));
    // The database is closed from another one (PostgreSQL refuses to close the one a session is on); one reader
    // stays connected to count.
    const admin = new pg.Client({ connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString() });
    const reader = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    await reader.connect();
    try {
      const readerPid = (await reader.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      await admin.query(`alter database "${db}" allow_connections false`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> $2', [db, readerPid]);
      const before = await countWith(reader);
      give(a, [501, 502, 503]);
      await waitFor(() => a.core.waitingForDatabase);
      // Tried at least twice meanwhile; nothing acknowledged, nothing dropped.
      await new Promise((r) => setTimeout(r, 600));
      expect(a.core.doneUpTo).toBe(messageId - 3);
      expect(a.core.stats.failed).toBe(0);
      await admin.query(`alter database "${db}" allow_connections true`);
      await waitFor(() => a.core.doneUpTo === messageId, 15_000);
      expect(await countWith(reader)).toBe(before + 3);
      expect(a.core.stats.failed).toBe(0);
    } finally {
      await admin.query(`alter database "${db}" allow_connections true`).catch(() => undefined);
      await admin.end();
      await reader.end();
    }
  });
});

async function countWith(c: pg.Client): Promise<number> {
  return Number((await c.query<{ n: string }>('select count(*) as n from sightings where company_id = $1', [chain.id])).rows[0]!.n);
}
