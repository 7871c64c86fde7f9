import { threadId, parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import * as schema from '../db/schema.js';
import type { FromThread, ThreadInit, ToThread } from './pool.js';
import { conversionReport, footfallReport } from './service.js';

/**
 * A report thread (pool.ts): its own read-only connection to head office's database file, opened once. The main
 * thread has migrated the database and keeps it in WAL mode, so this connection reads beside the writers without
 * blocking them, and each report's read transaction sees everything committed before it began. Reports come one at
 * a time; the plain report object goes back by structured clone and the route presents it. SQLite's only: on
 * PostgreSQL the pool runs reports on the main thread against the store's connections (pool.ts).
 */
const port = parentPort!;
const { file } = workerData as ThreadInit;
const sqlite = new Database(file, { readonly: true, fileMustExist: true });
sqlite.pragma('busy_timeout = 5000');
const db = drizzle(sqlite, { schema });
const send = (m: FromThread) => port.postMessage(m);

const handle = async (m: ToThread): Promise<void> => {
  switch (m.t) {
    case 'report':
      try {
        const report = m.kind === 'footfall' ? await footfallReport(db, m.companyId, m.query) : await conversionReport(db, m.companyId, m.query);
        send({ t: 'done', id: m.id, report });
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        send({ t: 'failed', id: m.id, message: e.message, stack: e.stack });
      }
      break;
    case 'probe': {
      let writeRefused: string | null = null;
      try {
        sqlite.prepare('delete from visits where 0').run(); // changes nothing even where writing is allowed
      } catch (err) {
        writeRefused = err instanceof Error ? err.message : String(err);
      }
      send({ t: 'probe', id: m.id, probe: { threadId, readonly: sqlite.readonly, writeRefused, file: sqlite.name } });
      break;
    }
    case 'hold':
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, m.ms);
      break;
  }
};
// A failure is the thread's to report, as a throw in a synchronous handler was: an unhandled rejection ends the thread.
port.on('message', (m: ToThread) => void handle(m));
