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
 *
 * On PostgreSQL (several processes, each with its ingest thread) the same rule comes from a change counter: triggers
 * announce every write of a table a cached answer may read (NOTIFY footfall_changes, delivered at commit), each
 * process LISTENs and moves its counter on each, and on its own commits at once (server/db/pg/changes.ts).
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

/** "Never again": NaN equals nothing, so an answer read at it is never served. */
const NEVER_AGAIN: DbVersion = { data: Number.NaN, changes: Number.NaN };

/** PostgreSQL: each store's change counter (server/db/pg/changes.ts), by the store's `db` outside a transaction. */
const pgVersions = new WeakMap<Db, () => number>();

/**
 * PostgreSQL: `version` tells this store's answers apart (a number that moves on every change announced or committed
 * here, NaN while changes cannot be heard). Without one, nothing is kept (a thread or tool with no listener).
 */
export function watchVersion(db: Db, version: (() => number) | undefined): void {
  if (version) pgVersions.set(db, version);
  else pgVersions.delete(db);
}

/**
 * The version the answers read now are valid at; take it before the reads. On PostgreSQL it is the change counter
 * of server/db/pg/changes.ts (NaN while its LISTEN connection is down, or inside a transaction, whose `db` is not the
 * store's: nothing is kept then).
 */
export function dbVersion(db: Db): DbVersion {
  if (onPostgres) {
    const version = pgVersions.get(db);
    return version ? { data: version(), changes: 0 } : NEVER_AGAIN;
  }
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
