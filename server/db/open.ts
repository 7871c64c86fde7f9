import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { packageRoot } from '../paths.js';
import * as schema from './schema.js';
import { sqliteTransactions } from './transaction.js';

export type Db = BetterSQLite3Database<typeof schema>;

export interface Store {
  sqlite: Database.Database;
  db: Db;
  /**
   * Runs fn inside BEGIN IMMEDIATE ... COMMIT (a savepoint when already inside one). fn may await only the database:
   * see server/db/transaction.ts.
   */
  tx<T>(fn: () => Promise<T>): Promise<T>;
  close(): void;
}

/**
 * Opens (creating if needed) the head-office database, in WAL mode with foreign keys on, and migrates it.
 * `autoCheckpoint: false`: this connection never checkpoints in its commits; another connection must (server/db/checkpoint.ts).
 */
export function openDatabase(file: string, opts: { autoCheckpoint?: boolean } = {}): Store {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new Database(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // Erased customers' templates and profiles are overwritten on disk, not left in free pages.
  sqlite.pragma('secure_delete = ON');
  sqlite.pragma('busy_timeout = 5000');
  if (opts.autoCheckpoint === false) sqlite.pragma('wal_autocheckpoint = 0');
  const db = drizzle(sqlite, { schema });
  migrate(db, { migrationsFolder: path.join(packageRoot(), 'server/db/migrations') });
  return {
    sqlite,
    db,
    tx: sqliteTransactions(sqlite).write,
    close: () => sqlite.close(),
  };
}
