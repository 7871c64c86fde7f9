import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { packageRoot } from '../paths.js';
import { WRITER_BACKSTOP_FRAMES } from './checkpoint.js';
import * as schema from './schema.js';
import { sqliteTransactions } from './transaction.js';
import type { PostgresStore } from './pg/store.js';

export type Db = BetterSQLite3Database<typeof schema>;

/**
 * Head office's database: the embedded SQLite file (the default), or PostgreSQL when FOOTFALL_DATABASE_URL names
 * one (server/db/pg/store.ts). `db` and `tx` are the same on both; what only one has (SQLite's connection for its
 * prepared statements, PostgreSQL's pool) is reached after asking `dialect`.
 */
export type Store = SqliteStore | PostgresStore;

/** What a transaction may ask of the store besides its body. */
export interface TxOptions {
  /**
   * Named locks held for the whole transaction, across processes, taken before it starts (so its snapshot is taken
   * after they are held). PostgreSQL: session advisory locks. SQLite has one writer at a time and ignores them.
   */
  locks?: readonly string[];
  /**
   * PostgreSQL: run at READ COMMITTED instead of SERIALIZABLE, for a body whose writes do not depend on what it read
   * (last-writer-wins updates: heartbeats). It then takes no part in serializable transactions' conflicts, so it
   * cannot make them fail. SQLite has one writer at a time and ignores it.
   */
  readCommitted?: boolean;
}

export interface SqliteStore {
  readonly dialect: 'sqlite';
  sqlite: Database.Database;
  db: Db;
  /**
   * Runs fn inside BEGIN IMMEDIATE ... COMMIT (a savepoint when already inside one). fn may await only the database:
   * see server/db/transaction.ts. `opts.locks` are not needed on SQLite (one writer at a time) and ignored.
   */
  tx<T>(fn: () => Promise<T>, opts?: TxOptions): Promise<T>;
  close(): void;
}

/**
 * Opens (creating if needed) the head-office database, in WAL mode with foreign keys on, and migrates it.
 * `autoCheckpoint: false`: this connection leaves checkpoints to another (server/db/checkpoint.ts), checkpointing in its
 * own commits only once the WAL holds WRITER_BACKSTOP_FRAMES (a number: at that many frames instead; tests).
 */
export function openDatabase(file: string, opts: { autoCheckpoint?: boolean | number } = {}): SqliteStore {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Erased customers' templates and profiles are overwritten on disk, not left in free pages.
  sqlite.pragma('secure_delete = ON');
  sqlite.pragma('busy_timeout = 5000');
  if (opts.autoCheckpoint === false) sqlite.pragma(`wal_autocheckpoint = ${WRITER_BACKSTOP_FRAMES}`);
  else if (typeof opts.autoCheckpoint === 'number') sqlite.pragma(`wal_autocheckpoint = ${opts.autoCheckpoint}`);
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: path.join(packageRoot(), 'server/db/migrations') });
  return {
    dialect: 'sqlite',
    sqlite,
    db,
    tx: sqliteTransactions(sqlite).write,
    close: () => sqlite.close(),
  };
}

/** The SQLite connection of a store known to be SQLite's: benchmarks and tests that look at the file itself. */
export function sqliteOf(store: Store): Database.Database {
  if (store.dialect !== 'sqlite') throw new Error('this reads the SQLite file directly: not on PostgreSQL');
  return store.sqlite;
}
