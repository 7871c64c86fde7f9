import path from 'node:path';
import type { Config } from '../config.js';
import { openDatabase, type Store } from './open.js';
import { openPostgresStore } from './pg/store.js';

/**
 * Head office's store as the configuration says: PostgreSQL when FOOTFALL_DATABASE_URL names a database (the tables
 * were chosen for it when the process started: server/db/tables.ts), else the embedded SQLite file of the data
 * folder. `pool` is the PostgreSQL pool's size for this connection's user (the main thread, the ingest thread).
 */
export async function openStore(config: Config, opts: { autoCheckpoint?: boolean; pool?: number } = {}): Promise<Store> {
  const url = config.FOOTFALL_DATABASE_URL;
  if (url) return await openPostgresStore(url, { max: opts.pool ?? 10 });
  return openDatabase(path.join(config.dataDir, 'footfall.db'), { autoCheckpoint: opts.autoCheckpoint ?? true });
}
