import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';

/**
 * A write the database will not take at this moment (a serialization failure on every one of the store's re-runs on
 * PostgreSQL; the SQLite file held by another writer past the busy timeout) answers the envelope's 503
 * `database_busy` with Retry-After, never a 500, and nothing of the request is kept.
 */
describe('a transaction the database keeps refusing', () => {
  let h: Harness;
  let owner: string;

  beforeAll(async () => {
    h = await startHarness();
    owner = (await h.company('Busy Co')).ownerToken;
  });
  afterAll(() => h.close());

  it('answers 503 database_busy with Retry-After; the same request later succeeds', async () => {
    const store = h.server.store;
    let release: () => Promise<void>;
    if (store.dialect === 'postgres') {
      // Every audit row raises a real serialization failure (SQLSTATE 40001), so every re-run of the opening fails.
      await store.pool.query(`create function refuse_audit() returns trigger language plpgsql as $$
        begin raise exception 'refused for the test' using errcode = 'serialization_failure'; end $$`);
      await store.pool.query('create trigger refuse_audit before insert on audit_log for each row execute function refuse_audit()');
      release = async () => {
        await store.pool.query('drop trigger refuse_audit on audit_log');
        await store.pool.query('drop function refuse_audit()');
      };
    } else {
      // Another connection holds the write lock past head office's busy timeout (5 s): SQLITE_BUSY.
      const other = new Database(path.join(h.dataDir, 'footfall.db'));
      other.prepare('begin immediate').run();
      release = async () => {
        other.prepare('rollback').run();
        other.close();
      };
    }
    let r;
    try {
      r = await h.request('POST', '/api/sites', { token: owner, body: { name: 'Refused Shop' } });
    } finally {
      await release();
    }
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: 'database_busy', message: expect.stringMatching(/nothing was changed/) });
    expect(r.headers.get('retry-after')).toBe('1');
    expect((await h.request('GET', '/api/sites', { token: owner })).body).toEqual([]);

    const again = await h.request('POST', '/api/sites', { token: owner, body: { name: 'Refused Shop' } });
    expect(again.status).toBe(201);
    expect(again.body.slug).toBe('refused-shop');
  }, 20_000);
});
