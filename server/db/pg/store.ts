import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'drizzle-orm';
import type { Db } from '../open.js';
import { applyPgMigrations, connectPostgres, type PgDb, type PgStore } from './open.js';

type PgPool = PgStore['pool'];

/**
 * Head office's data on PostgreSQL (issue 27; docs/scale-out.md, "Head office on PostgreSQL: the preview"): the same
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
  tx<T>(fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
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
  return {
    dialect: 'postgres',
    pool: pg.pool,
    get db(): Db {
      // Typed as the SQLite database: the services are written once against the query builder both dialects share,
      // with the dialect's tables (server/db/tables.ts).
      return (open.getStore() ?? pg.db) as unknown as Db;
    },
    async tx<T>(fn: () => Promise<T>): Promise<T> {
      const outer = open.getStore();
      // Inside a transaction, drizzle's nested transaction is a savepoint, as on SQLite.
      if (outer) return await outer.transaction((t) => open.run(t, fn));
      for (let attempt = 1; ; attempt++) {
        try {
          return await pg.db.transaction((t) => open.run(t, fn), { isolationLevel: 'serializable' });
        } catch (err) {
          if (attempt >= SERIALIZABLE_TRIES || !retryable(err)) throw err;
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
        }
      }
    },
    close: () => pg.close(),
  };
}
