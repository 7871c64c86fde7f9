import path from 'node:path';
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import pg from 'pg';
import { packageRoot } from '../../paths.js';
import * as schema from './schema.js';

export type PgDb = NodePgDatabase<typeof schema>;

/** What drizzle's own migrator reads and writes: the same bookkeeping, so either can run after the other. */
const MIGRATIONS_SCHEMA = 'drizzle';
const MIGRATIONS_TABLE = '__drizzle_migrations';

export const pgMigrationsFolder = (): string => path.join(packageRoot(), 'server/db/pg/migrations');

export interface PgStore {
  pool: pg.Pool;
  db: PgDb;
  close(): Promise<void>;
}

/**
 * A pool of connections to FOOTFALL_DATABASE_URL's database. Every connection works in UTC (timestamps come back as
 * `...+00`; server/db/pg/columns.ts reads any zone anyway).
 */
export function connectPostgres(url: string, opts: { max?: number } = {}): PgStore {
  numbersAsNumbers();
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10, options: '-c TimeZone=UTC' });
  // An idle connection the server drops (restart, failover) must not take the process down.
  pool.on('error', () => undefined);
  const db = drizzle(pool, { schema });
  return { pool, db, close: () => pool.end() };
}

/** drizzle on one pooled connection (its queries and transactions run on that connection). */
const onClient = new WeakMap<pg.PoolClient, PgDb>();
export function drizzleOn(client: pg.PoolClient): PgDb {
  let db = onClient.get(client);
  if (!db) onClient.set(client, (db = drizzle(client, { schema })));
  return db;
}

/**
 * int8 (count(*), sums of integers, bigint keys) and numeric (sums of bigints, avg) as JavaScript numbers, as SQLite
 * answers them: node-postgres gives strings by default (for values past 2^53; none of head office's counts, sums of
 * milliseconds or money in minor units gets near it). Set on the pg module, which drizzle's queries read: drizzle
 * passes its own parsers for times and dates with every query and takes the module's for the rest.
 */
function numbersAsNumbers(): void {
  pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v: string) => Number(v));
}

/**
 * Applies the migrations of server/db/pg/migrations that `db` lacks, inside the caller's transaction when `db` is
 * one (drizzle's own migrator opens a transaction of its own, which would commit the caller's): PostgreSQL's DDL is
 * transactional, so a failure later in that transaction leaves no table behind. Returns how many it applied.
 */
export async function applyPgMigrations(db: PgDb): Promise<number> {
  const migrations = readMigrationFiles({ migrationsFolder: pgMigrationsFolder() });
  await db.execute(sql.raw(`create schema if not exists "${MIGRATIONS_SCHEMA}"`));
  await db.execute(sql.raw(`create table if not exists "${MIGRATIONS_SCHEMA}"."${MIGRATIONS_TABLE}" (id serial primary key, hash text not null, created_at bigint)`));
  const last = await db.execute<{ created_at: string | null }>(sql.raw(`select created_at from "${MIGRATIONS_SCHEMA}"."${MIGRATIONS_TABLE}" order by created_at desc limit 1`));
  const lastMillis = Number(last.rows[0]?.created_at ?? -1);
  let applied = 0;
  for (const m of migrations) {
    if (m.folderMillis <= lastMillis) continue;
    for (const stmt of m.sql) if (stmt.trim()) await db.execute(sql.raw(stmt));
    await db.execute(sql`insert into ${sql.identifier(MIGRATIONS_SCHEMA)}.${sql.identifier(MIGRATIONS_TABLE)} ("hash", "created_at") values (${m.hash}, ${m.folderMillis})`);
    applied++;
  }
  return applied;
}
