import type Database from 'better-sqlite3';
import type { Db } from './open.js';
import { onPostgres } from './raw.js';

/**
 * Answers of hot read routes (GET /api/visits, GET /api/visitors), kept while the database has not changed.
 *
 * "Not changed" is exact, not a time-to-live: SQLite's `PRAGMA data_version` moves whenever another connection commits
 * (ingest's thread, the report thread, a `footfall admin` command), and `total_changes()` counts every row this
 * connection has written. The writes no cached answer reads (audit rows, a session's last-used time) are counted by
 * their writers with noteUnreadWrite and taken off, so polling (which writes a photo-link audit row) does not
 * invalidate the cache for everyone else. Anything else written, anywhere, drops every entry.
 */
export interface DbVersion {
  data: number;
  changes: number;
}

interface Counters {
  dataVersion: Database.Statement<[], number>;
  totalChanges: Database.Statement<[], number>;
  unread: number;
}

const counters = new WeakMap<Db, Counters>();

function countersOf(db: Db): Counters {
  let c = counters.get(db);
  if (!c) {
    const sqlite = (db as unknown as { $client: Database.Database }).$client;
    // Two plain statements: half the time of one `select ... from pragma_data_version` (a virtual table).
    const dataVersion = sqlite.prepare<[], number>('pragma data_version').pluck();
    const totalChanges = sqlite.prepare<[], number>('select total_changes()').pluck();
    counters.set(db, (c = { dataVersion, totalChanges, unread: 0 }));
  }
  return c;
}

/** `rows` rows were written that no cached answer reads (audit_log, sessions.last_used_at). */
export function noteUnreadWrite(db: Db, rows: number): void {
  if (onPostgres) return;
  countersOf(db).unread += rows;
}

/**
 * On PostgreSQL nothing tells this process cheaply that another connection (the ingest thread's, another head-office
 * process's) committed, so no answer is kept: every version is new (NaN equals nothing) and every read goes to the
 * database. A change counter announced with LISTEN/NOTIFY would bring the cache back there (docs/scale-out.md).
 */
const NEVER_AGAIN: DbVersion = { data: Number.NaN, changes: Number.NaN };

export function dbVersion(db: Db): DbVersion {
  if (onPostgres) return NEVER_AGAIN;
  const c = countersOf(db);
  return { data: c.dataVersion.get()!, changes: c.totalChanges.get()! - c.unread };
}

/** A bounded map of answers by key, each valid only at the DbVersion it was read at. */
export class ReadCache<V> {
  private readonly entries = new Map<string, { at: DbVersion; value: V }>();

  constructor(private readonly max = 256) {}

  get(key: string, now: DbVersion): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.at.data !== now.data || e.at.changes !== now.changes) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** `value` was read at `at` (taken before the reads, in the same synchronous step). */
  set(key: string, at: DbVersion, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { at, value });
  }
}

const caches = new WeakMap<Db, Map<string, ReadCache<unknown>>>();

/** The cache named `name` of this database (one per route). */
export function readCache<V>(db: Db, name: string, max?: number): ReadCache<V> {
  let byName = caches.get(db);
  if (!byName) caches.set(db, (byName = new Map()));
  let c = byName.get(name);
  if (!c) byName.set(name, (c = new ReadCache<unknown>(max)));
  return c as ReadCache<V>;
}
