import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import type { Db, TxOptions } from '../open.js';
import { applyPgMigrations, connectPostgres, drizzleOn, type PgDb, type PgStore } from './open.js';

type PgPool = PgStore['pool'];

/**
 * Head office's data on PostgreSQL (issue 27; docs/scale-out.md, "Head office on PostgreSQL"): the same
 * `db` and `tx` the services use on SQLite, opened by server/db/store.ts when FOOTFALL_DATABASE_URL is set.
 *
 * `db` is the pool, or inside `tx` the transaction's connection: a body keeps calling `store.db` as on SQLite, and an
 * AsyncLocalStorage hands it the open transaction. That costs every promise of the process something on Node 20
 * (server/db/transaction.ts measures it); the SQLite store has no need for it and does not use it.
 */
export interface PostgresStore {
  readonly dialect: 'postgres';
  readonly pool: PgPool;
  readonly db: Db;
  tx<T>(fn: () => Promise<T>, opts?: TxOptions): Promise<T>;
  /** `fn` runs after each outermost `tx` commits, before it resolves (the read cache's counter: ./changes.ts). */
  afterCommit(fn: () => void): void;
  close(): Promise<void>;
}

/** A named lock's advisory lock key: the first 8 bytes of the name's SHA-256, as a signed 64-bit integer. */
export function advisoryKey(name: string): bigint {
  return createHash('sha256').update(`footfall:${name}`).digest().readBigInt64BE(0);
}

/** The advisory lock key of migrations (any fixed number; 'ffmg' in ASCII). */
const MIGRATION_LOCK = 0x66666d67;

/**
 * Transactions are SERIALIZABLE, as SQLite's are (one writer at a time): a body that reads and then writes on what it
 * read (the last owner of a company, a login's failure count, the next customer number) is right on PostgreSQL as it
 * is on SQLite, whichever process runs it. PostgreSQL refuses one of two transactions that would have interleaved
 * (SQLSTATE 40001) or deadlocked (40P01); the body is run again from the start, a few times, as PostgreSQL's
 * documentation advises. A body may await only the database (server/db/transaction.ts), so running it again repeats
 * nothing else.
 */
const SERIALIZABLE_TRIES = 8;
const retryable = (err: unknown): boolean => {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '40001' || e.code === '40P01') return true;
  }
  return false;
};

type PgTx = Parameters<Parameters<PgDb['transaction']>[0]>[0];

export async function openPostgresStore(url: string, opts: { max?: number } = {}): Promise<PostgresStore> {
  const pg = connectPostgres(url, opts);
  try {
    await pg.db.transaction(async (t) => {
      // One process (or thread) at a time: the others wait here, then find the migrations applied.
      await t.execute(sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`);
      await applyPgMigrations(t as unknown as PgDb);
    });
  } catch (err) {
    await pg.close();
    throw err;
  }
  const open = new AsyncLocalStorage<PgTx>();
  const committed: (() => void)[] = [];
  return {
    dialect: 'postgres',
    pool: pg.pool,
    get db(): Db {
      // Typed as the SQLite database: the services are written once against the query builder both dialects share,
      // with the dialect's tables (server/db/tables.ts).
      return (open.getStore() ?? pg.db) as unknown as Db;
    },
    async tx<T>(fn: () => Promise<T>, opts: TxOptions = {}): Promise<T> {
      const outer = open.getStore();
      // Inside a transaction, drizzle's nested transaction is a savepoint, as on SQLite (its locks are the outer's).
      if (outer) return await outer.transaction((t) => open.run(t, fn));
      const result = opts.readCommitted
        ? await pg.db.transaction((t) => open.run(t, fn), { isolationLevel: 'read committed' })
        : !opts.locks?.length
          ? await serializable(pg.db, fn)
          : await withLocks(pg.pool, opts.locks, (db) => serializable(db, fn));
      for (const hook of committed) hook();
      return result;
    },
    afterCommit: (fn) => void committed.push(fn),
    close: () => pg.close(),
  };

  async function serializable<T>(db: PgDb, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.transaction((t) => open.run(t, fn), { isolationLevel: 'serializable' });
      } catch (err) {
        if (attempt >= SERIALIZABLE_TRIES || !retryable(err)) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
      }
    }
  }
}

/**
 * Runs `fn` on one pooled connection that holds the named locks (session advisory locks, taken in key order so two
 * holders of overlapping sets cannot deadlock) and lets them go after it, committed or not. Taken before BEGIN: a
 * serializable transaction's snapshot is taken at its first statement, so one that waited inside the transaction
 * would not see what the lock's previous holder committed. If the process dies, PostgreSQL ends the session and
 * releases them.
 */
async function withLocks<T>(pool: pg.Pool, names: readonly string[], fn: (db: PgDb) => Promise<T>): Promise<T> {
  const keys = [...new Set(names.map(advisoryKey))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);
  return await lockingSession(pool, async (client) => {
    await client.query('select pg_advisory_lock(k) from unnest($1::bigint[]) as t(k)', [keys]);
    return await fn(drizzleOn(client));
  });
}

/**
 * Runs `fn` holding the named lock if no other session holds it (`pg_try_advisory_lock`); resolves undefined at once
 * if one does (server/db/alone.ts).
 */
export async function ifUnlocked<T>(pool: pg.Pool, name: string, fn: () => Promise<T>): Promise<T | undefined> {
  const key = String(advisoryKey(name));
  return await lockingSession(pool, async (client) => {
    const got = (await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1::bigint) as ok', [key])).rows[0]?.ok === true;
    return got ? await fn() : undefined;
  });
}

/**
 * Runs `fn` on one pooled connection for session advisory locks, then lets every lock of that session go. A
 * connection that could not let them go is closed rather than handed to the next user with them.
 */
async function lockingSession<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await fn(client);
  } finally {
    try {
      await client.query('select pg_advisory_unlock_all()');
    } catch (err) {
      broken = err instanceof Error ? err : new Error(String(err));
    }
    client.release(broken);
  }
}
