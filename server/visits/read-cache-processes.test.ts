import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, startSecondHeadOffice, type Company, type Harness } from '../../test/support/harness.js';
import { syntheticFace } from '../../test/support/shop-pc.js';
import { onPostgresRun } from '../../test/support/stores.js';
import { noteSkip } from '../../test/support/skips.js';
import { arrivals, settled, shopPc, type ShopPc } from '../../test/support/visits.js';

/**
 * The read cache with two head offices on one PostgreSQL database (server/db/pg/changes.ts): an answer one keeps
 * goes when the other writes, a process's own write shows on its next request, and sessions are not cached there (a
 * session revoked through one is refused by the other at once). The counter itself: server/db/pg/changes.test.ts.
 */
if (!onPostgresRun) noteSkip('server/visits/read-cache-processes.test.ts', 'the read cache across processes is PostgreSQL\'s: it runs in `npm run test:postgres`');

const feed = async (h: Harness, token: string): Promise<{ visit_id: string; quality: number; visitor_id?: string }[]> => {
  const r = await h.request('GET', '/api/visits?limit=50', { token });
  expect(r.status).toBe(200);
  return r.body.arrivals;
};

const until = async (what: string, ok: () => Promise<boolean>, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe.skipIf(!onPostgresRun)('the read cache: two head offices, one database', () => {
  let a: Harness;
  let b: Harness;
  let chain: Company;
  let pc: ShopPc;
  /** Writes that announce nothing (triggers off for this session): they show only when an answer is read again. */
  let silent: pg.Client;

  const publish = async (n: number) => {
    await pc.publish({
      visit_id: randomUUID(),
      occurred_at: new Date(Date.now() - 60_000 + n).toISOString(),
      camera_id: 'door',
      embedding: syntheticFace(700 + n),
      recognition_model: 'test-model',
      quality: 0.9,
      passed_gate: true,
    });
  };

  beforeAll(async () => {
    a = await startHarness();
    b = await startSecondHeadOffice(a);
    chain = await a.company();
    pc = await shopPc(a, chain.ownerToken, chain.slug, 'Bandra');
    await publish(1);
    await arrivals(a, chain.ownerToken, 1);
    await settled(a);
    silent = new pg.Client({ connectionString: fs.readFileSync(path.join(a.dataDir, 'test-database-url'), 'utf8') });
    await silent.connect();
    // The test cluster's user is a superuser: replica mode fires no ordinary triggers.
    await silent.query('set session_replication_role = replica');
  });

  afterAll(async () => {
    await silent?.end();
    await pc?.close();
    await b?.close();
    await a?.close();
  });

  it('GET /api/visits: kept by one while nothing is announced, read again when the other writes', async () => {
    const first = await feed(b, chain.ownerToken);
    expect(first).toHaveLength(1);
    // Served from b's cache: a silent change is not seen. (Tried a few times: a background write, such as a
    // heartbeat, between the two reads rightly drops the answer.)
    let quality = 0;
    let kept = false;
    for (let i = 0; i < 5 && !kept; i++) {
      const was = (await feed(b, chain.ownerToken))[0]!.quality;
      quality = 0.2 + i / 100;
      await silent.query('update visits set quality = $2 where visit_id = $1', [first[0]!.visit_id, quality]);
      kept = (await feed(b, chain.ownerToken))[0]!.quality === was;
    }
    expect(kept).toBe(true);
    // A visit stored through a (its ingest thread): b reads again.
    await publish(2);
    await until('b to see the visit a stored', async () => (await feed(b, chain.ownerToken)).length === 2);
    const again = await feed(b, chain.ownerToken);
    expect(again.find((v) => v.visit_id === first[0]!.visit_id)!.quality).toBe(quality);
    expect(b.server.ingest.stats.stored).toBe(0);
  });

  it('GET /api/visitors: a customer marked staff through one leaves the other\'s list', async () => {
    const list = async (h: Harness) => {
      const r = await h.request('GET', '/api/visitors?staff=false', { token: chain.ownerToken });
      expect(r.status).toBe(200);
      return (r.body as { id: string }[]).map((c) => c.id);
    };
    const before = await list(b);
    expect(before.length).toBeGreaterThan(0);
    expect(await list(b)).toEqual(before);
    const r = await a.request('PATCH', `/api/visitors/${before[0]}`, { token: chain.ownerToken, body: { staff: true } });
    expect(r.status).toBe(200);
    await until('b to drop the staff member', async () => !(await list(b)).includes(before[0]!));
    // And back, through b itself: its own write shows on its very next request.
    expect((await b.request('PATCH', `/api/visitors/${before[0]}`, { token: chain.ownerToken, body: { staff: false } })).status).toBe(200);
    expect(await list(b)).toContain(before[0]);
  });

  it('a process\'s own write shows on its next request', async () => {
    const rows = await feed(b, chain.ownerToken);
    const visitor = rows.find((v) => v.visitor_id)!.visitor_id!;
    expect((await b.request('PATCH', `/api/visitors/${visitor}`, { token: chain.ownerToken, body: { staff: true } })).status).toBe(200);
    expect((await feed(b, chain.ownerToken)).some((v) => v.visitor_id === visitor)).toBe(false);
    expect((await b.request('PATCH', `/api/visitors/${visitor}`, { token: chain.ownerToken, body: { staff: false } })).status).toBe(200);
    expect((await feed(b, chain.ownerToken)).some((v) => v.visitor_id === visitor)).toBe(true);
  });

  it('a session signed out through one is refused by the other on its next request', async () => {
    for (let i = 0; i < 5; i++) {
      const device = await a.login(chain.ownerEmail, chain.ownerPassword, `phone ${i}`);
      expect((await b.request('GET', '/api/auth/me', { token: device.access_token })).status).toBe(200);
      expect((await b.request('GET', '/api/visits?limit=5', { token: device.access_token })).status).toBe(200);
      expect((await a.request('POST', '/api/auth/logout', { token: device.access_token })).status).toBe(204);
      expect((await b.request('GET', '/api/visits?limit=5', { token: device.access_token })).status).toBe(401);
      expect((await b.request('GET', '/api/auth/me', { token: device.access_token })).status).toBe(401);
    }
  });
});
