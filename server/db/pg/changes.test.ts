import pg from 'pg';
import pino from 'pino';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseAt } from '../../../test/support/postgres.js';
import { onPostgresRun } from '../../../test/support/stores.js';
import { noteSkip } from '../../../test/support/skips.js';
import { run } from '../raw.js';
import { ReadCache, dbVersion } from '../read-cache.js';
import { ChangeListener } from './changes.js';
import { openPostgresStore, type PostgresStore } from './store.js';

/**
 * The read cache's change counter on PostgreSQL (server/db/pg/changes.ts): a store with its listener (one head
 * office), and a second store on the same database with none (another process). The HTTP side, two head offices:
 * server/visits/read-cache-processes.test.ts.
 */
if (!onPostgresRun) noteSkip('server/db/pg/changes.test.ts', 'the read cache\'s PostgreSQL change counter: it runs in `npm run test:postgres`');

/**
 * Tables no cached answer reads, written by requests all the time: no change notices (migration 0003; the picture
 * bytes of 0005, a camera's every minute).
 */
const UNANNOUNCED = ['audit_log', 'camera_pictures', 'face_image_bytes', 'retired_refresh_tokens', 'sessions'];

const until = async (what: string, ok: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe.skipIf(!onPostgresRun)('the read cache\'s change counter on PostgreSQL', () => {
  let url: string;
  let here: PostgresStore;
  let other: PostgresStore;
  let listener: ChangeListener;
  let admin: pg.Client;
  const version = () => dbVersion(here.db).data;

  beforeAll(async () => {
    url = await createDatabaseAt(process.env.FOOTFALL_TEST_POSTGRES_URL!);
    here = await openPostgresStore(url, { max: 2 });
    other = await openPostgresStore(url, { max: 2 });
    // A long first pause before connecting again, so the test sees the listener down.
    listener = new ChangeListener({ url, store: here, log: pino({ level: 'silent' }), retryMs: 1500 });
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterAll(async () => {
    await listener?.stop();
    await admin?.end();
    await here?.close();
    await other?.close();
  });

  it('every table but the unannounced ones has the change trigger', async () => {
    const tables = (await admin.query<{ t: string; has: boolean }>(`
      select c.relname as t, exists (select 1 from pg_trigger g where g.tgrelid = c.oid and g.tgname = 'footfall_changes') as has
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`)).rows;
    expect(tables.length).toBeGreaterThan(30);
    expect(tables.filter((r) => !r.has).map((r) => r.t)).toEqual(UNANNOUNCED);
  });

  it('before the listener listens nothing is kept', async () => {
    expect(version()).toBeNaN();
    await listener.start();
    expect(listener.live).toBe(true);
    expect(version()).not.toBeNaN();
  });

  it('another connection\'s commit moves the version, once per transaction; unannounced tables do not', async () => {
    const cache = new ReadCache<string>(4);
    const v0 = version();
    cache.set('k', dbVersion(here.db), 'answer');
    // Unannounced writes, then one transaction of three announced statements: the counter moves by exactly one.
    await run(other.db, sql`insert into audit_log (at, action) values (now(), 'unannounced')`);
    await other.tx(async () => {
      for (const ip of ['1', '2', '3']) await run(other.db, sql`insert into login_failures (email, ip, at) values ('a@b.c', ${ip}, now())`);
    });
    await until('the notification', () => version() !== v0);
    await new Promise((r) => setTimeout(r, 100));
    expect(version()).toBe(v0 + 1);
    expect(cache.get('k', dbVersion(here.db))).toBeUndefined();
  });

  it('a rolled-back transaction announces nothing', async () => {
    const v0 = version();
    await expect(other.tx(async () => {
      await run(other.db, sql`insert into login_failures (email, ip, at) values ('a@b.c', 'x', now())`);
      throw new Error('roll back');
    })).rejects.toThrow('roll back');
    await run(other.db, sql`insert into login_failures (email, ip, at) values ('a@b.c', 'after', now())`);
    await until('the notification', () => version() !== v0);
    await new Promise((r) => setTimeout(r, 100));
    expect(version()).toBe(v0 + 1);
  });

  it('its own commit moves the version before tx resolves, without waiting for the notification', async () => {
    const v0 = version();
    await here.tx(async () => {
      await run(here.db, sql`insert into login_failures (email, ip, at) values ('a@b.c', 'own', now())`);
      // Inside the transaction: its db is not the store's, nothing is kept.
      expect(dbVersion(here.db).data).toBeNaN();
    });
    expect(version()).toBeGreaterThan(v0);
  });

  it('while the LISTEN connection is down nothing is served; back, what was read before is gone', async () => {
    const cache = new ReadCache<string>(4);
    const before = dbVersion(here.db);
    cache.set('k', before, 'answer');
    const killed = await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'footfall-changes' and datname = current_database()`);
    expect(killed.rowCount).toBe(1);
    await until('the loss', () => !listener.live);
    expect(version()).toBeNaN();
    expect(cache.get('k', dbVersion(here.db))).toBeUndefined();
    // Read and kept while down: never served.
    cache.set('k', dbVersion(here.db), 'read while down');
    expect(cache.get('k', dbVersion(here.db))).toBeUndefined();
    // Written while nobody listens: its notification is lost, the reconnect makes up for it.
    cache.set('k', before, 'answer');
    await run(other.db, sql`insert into login_failures (email, ip, at) values ('a@b.c', 'unheard', now())`);
    await until('the reconnect', () => listener.live, 10_000);
    expect(version()).not.toBe(before.data);
    expect(cache.get('k', dbVersion(here.db))).toBeUndefined();
    const v1 = version();
    await run(other.db, sql`insert into login_failures (email, ip, at) values ('a@b.c', 'heard', now())`);
    await until('the notification after the reconnect', () => version() !== v1);
  });

  it('stopped: nothing is kept', async () => {
    await listener.stop();
    expect(version()).toBeNaN();
  });
});
