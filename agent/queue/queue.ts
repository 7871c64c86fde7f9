/**
 * The shop PC's durable outbox: messages that must reach head office at least once (visits, and the doors'
 * crossings from agent/runtime/crossings.ts: any topic, in order) wait here, in a SQLite file, until the broker
 * acknowledges them.
 *
 * - Written with WAL and synchronous=FULL: an enqueue that returned survives a power cut.
 * - Locked (SQLite's exclusive locking mode) while open: a second agent on the same data folder is refused.
 * - A file SQLite cannot read is renamed `queue.sqlite.damaged-<time>` and a new one started.
 * - `peek(n)` hands out the oldest waiting items and marks them in flight; `ack(id)` deletes one (only then is it
 *   gone); `release(id)` puts it back. In-flight marks live in memory only, so after a restart (or a crash) every
 *   item not acknowledged is waiting again: nothing is lost, some may be sent twice (receivers de-duplicate).
 * - Bounded by `maxItems`: when full, the oldest waiting items are dropped and counted in `dropped`, which is
 *   stored in the same file and never decreases; each drop is logged as a warning. The count is the shop's (`shop`):
 *   a PC enrolled again for another shop starts that shop's count at 0, and finds the first shop's count again if
 *   it goes back.
 * - Item ids only grow (AUTOINCREMENT), so order is the order of enqueueing and an old id is never reused.
 */
import { EventEmitter } from 'node:events';
import { chmodSync, chownSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { pino, type Logger } from 'pino';
import { newFileOwner } from '../config/private-file.js';

export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface QueueItem {
  id: number;
  topic: string;
  payload: Buffer;
  /** When it was enqueued (RFC 3339 UTC). */
  createdAt: string;
}

export interface QueueStats {
  /** Items on disk not yet acknowledged (waiting or in flight). */
  queued: number;
  /** Items of this shop lost to overflow since the file was created; never decreases. */
  dropped: number;
}

export interface DurableQueueOptions {
  /** The SQLite file, e.g. `<data dir>/queue.sqlite`; its folder is created (mode 0700) when missing. */
  file: string;
  /** At most this many items; default 100 000. */
  maxItems?: number;
  /**
   * The shop whose messages are queued now (the enrolment's `site.id`): `dropped` is counted for it alone. Without
   * it, one count for the file (as older agents kept it); the first shop that opens such a file takes that count.
   */
  shop?: string;
  log?: Log;
}

interface QueueEvents {
  /** An item was added (a publisher wakes up). */
  enqueued: [item: QueueItem];
}

interface Row {
  id: number;
  topic: string;
  payload: Buffer;
  created_at: string;
}

export const DEFAULT_MAX_ITEMS = 100_000;

/** Opens (or creates) the queue file, locked for this process, and counts its items. */
function openFile(file: string): { db: Database.Database; count: number } {
  // No waiting for a lock: the only other user of the file would be another agent (below).
  const db = new Database(file, { timeout: 0 });
  try {
    // Visits carry face embeddings: only the agent's user may read the file (the WAL file inherits this).
    if (process.platform !== 'win32') chmodSync(file, 0o600);
    // Run as root in the service user's data folder (an installer trying `footfall agent` by hand): the files are
    // the service's, else it could not open them at its next start. Also those an earlier root run left. SQLite,
    // run as root, gives the WAL file it creates the main file's owner.
    const owner = newFileOwner(path.dirname(file));
    if (owner) {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chownSync(f, owner.uid, owner.gid);
    }
    // One agent per data folder: the file stays locked until it is closed or the process ends. A second agent on
    // the same folder (run by hand beside the service) would count every visitor again under new visit ids and
    // fight the first for the broker session and the cameras' streams.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.exec(`
      CREATE TABLE IF NOT EXISTS items (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        topic TEXT NOT NULL,
        payload BLOB NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      INSERT OR IGNORE INTO counters (name, value) VALUES ('dropped', 0);
    `);
    const count = (db.prepare('SELECT COUNT(*) AS n FROM items').get() as { n: number }).n;
    return { db, count };
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      throw new Error(`${file} is in use by another footfall agent: only one may run with a data folder (stop the other one first, e.g. systemctl stop footfall-agent)`);
    }
    throw err;
  }
}

/**
 * The `counters` row that holds `shop`'s `dropped` (`dropped:<shop>`), made when missing. A PC moved to another shop
 * must not report the first shop's losses as the new shop's (head office shows them on the shop), and a shop's count
 * must not go down when the PC comes back to it: one count per shop. The file's single count of an older agent
 * (`dropped`) is taken over by the first shop that opens the file, the one the PC was most likely counting for.
 */
function droppedCounterOf(db: Database.Database, shop: string): string {
  const name = `dropped:${shop}`;
  db.transaction(() => {
    if (db.prepare('SELECT 1 FROM counters WHERE name = ?').get(name)) return;
    const anyShop = db.prepare("SELECT 1 FROM counters WHERE name LIKE 'dropped:%'").get();
    if (anyShop) db.prepare('INSERT INTO counters (name, value) VALUES (?, 0)').run(name);
    else db.prepare("UPDATE counters SET name = ? WHERE name = 'dropped'").run(name);
  })();
  return name;
}

export class DurableQueue extends EventEmitter<QueueEvents> {
  readonly file: string;
  readonly maxItems: number;
  private readonly db: Database.Database;
  private readonly log: Log;
  private readonly inFlight = new Set<number>();
  private count: number;
  /** The `counters` row of this shop's `dropped`. */
  private readonly droppedCounter: string;
  private readonly sql: {
    insert: Database.Statement<[string, Buffer, string]>;
    oldest: Database.Statement<[number], Row>;
    oldestIds: Database.Statement<[number], { id: number }>;
    remove: Database.Statement<[number]>;
    addDropped: Database.Statement<[number, string]>;
    dropped: Database.Statement<[string], { value: number }>;
  };

  constructor(options: DurableQueueOptions) {
    super();
    this.file = options.file;
    this.maxItems = options.maxItems ?? DEFAULT_MAX_ITEMS;
    if (!Number.isInteger(this.maxItems) || this.maxItems < 1) throw new Error(`queue bound must be a whole number of at least 1, not ${this.maxItems}`);
    this.log = options.log ?? pino({ level: 'silent' });

    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    let opened: { db: Database.Database; count: number };
    try {
      opened = openFile(this.file);
    } catch (err) {
      // A file SQLite cannot read (a disk that lied about a flush, a power cut): without this the agent would stop at
      // every start and count nothing more. The file is kept for whoever wants to recover its visits.
      const code = (err as { code?: string }).code;
      if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') throw err;
      const aside = `${this.file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      for (const suffix of ['', '-wal', '-shm']) {
        if (!existsSync(this.file + suffix)) continue;
        renameSync(this.file + suffix, aside + suffix);
        if (process.platform !== 'win32') chmodSync(aside + suffix, 0o600);
      }
      this.log.error(
        { file: this.file, kept_as: aside, problem: (err as Error).message },
        'queue file is damaged: kept aside and a new one started (the visits it held are not delivered; dropped starts again at 0)',
      );
      opened = openFile(this.file);
    }
    this.db = opened.db;
    this.count = opened.count;
    this.droppedCounter = options.shop === undefined ? 'dropped' : droppedCounterOf(this.db, options.shop);
    this.sql = {
      insert: this.db.prepare('INSERT INTO items (topic, payload, created_at) VALUES (?, ?, ?)'),
      oldest: this.db.prepare('SELECT id, topic, payload, created_at FROM items ORDER BY id LIMIT ?'),
      oldestIds: this.db.prepare('SELECT id FROM items ORDER BY id LIMIT ?'),
      remove: this.db.prepare('DELETE FROM items WHERE id = ?'),
      addDropped: this.db.prepare('UPDATE counters SET value = value + ? WHERE name = ?'),
      dropped: this.db.prepare('SELECT value FROM counters WHERE name = ?'),
    };
    // A smaller bound than last time: the file shrinks to it now, counted like any overflow.
    if (this.count > this.maxItems) this.afterDrop(this.db.transaction(() => this.dropOldest(this.count - this.maxItems))());
  }

  /** Stores a message durably (the call returns after the data is on disk); may drop the oldest to make room. */
  enqueue(topic: string, payload: string | Uint8Array): QueueItem {
    const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    const createdAt = new Date().toISOString();
    // The count and the in-flight marks change only once the transaction is on disk: a commit that fails (disk
    // full) changes nothing, and `queued` stays what waits on disk.
    const { id, victims } = this.db.transaction(() => {
      const { lastInsertRowid } = this.sql.insert.run(topic, body, createdAt);
      const over = this.count + 1 - this.maxItems;
      return { id: Number(lastInsertRowid), victims: over > 0 ? this.dropOldest(over) : [] };
    })();
    this.count++;
    this.afterDrop(victims);
    const item: QueueItem = { id, topic, payload: body, createdAt };
    this.emit('enqueued', item);
    return item;
  }

  /** The oldest `n` items that are not in flight, now marked in flight (oldest first). */
  peek(n: number): QueueItem[] {
    if (n <= 0) return [];
    const rows = this.sql.oldest.all(n + this.inFlight.size);
    const items: QueueItem[] = [];
    for (const row of rows) {
      if (this.inFlight.has(row.id)) continue;
      this.inFlight.add(row.id);
      items.push({ id: row.id, topic: row.topic, payload: row.payload, createdAt: row.created_at });
      if (items.length === n) break;
    }
    return items;
  }

  /** Acknowledged: deletes the item. False when it was not there (already acknowledged, or dropped). */
  ack(id: number): boolean {
    this.inFlight.delete(id);
    const { changes } = this.sql.remove.run(id);
    this.count -= changes;
    return changes > 0;
  }

  /** Not acknowledged after all (the send failed): the item waits again, in its place. */
  release(id: number): void {
    this.inFlight.delete(id);
  }

  releaseAll(): void {
    this.inFlight.clear();
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  stats(): QueueStats {
    return { queued: this.count, dropped: this.sql.dropped.get(this.droppedCounter)!.value };
  }

  /**
   * Deletes every item whose topic is not under `prefix` (`ff/<company>/<shop>/`) and returns how many there were.
   * They were queued under an earlier enrolment of this PC for another shop: the broker refuses a publish outside
   * the login's own topics by closing the connection, and the MQTT client sends that same message first after every
   * reconnection, so one of them would hold back every visit behind it for good. They are not counted in `dropped`
   * (they are not visits of this shop) but logged as a warning.
   */
  discardOutside(prefix: string): number {
    const outside = this.db.prepare('SELECT id, topic FROM items WHERE substr(topic, 1, length(@prefix)) <> @prefix ORDER BY id').all({ prefix }) as { id: number; topic: string }[];
    if (outside.length === 0) return 0;
    const removed = this.db.transaction(() => outside.reduce((n, { id }) => n + this.sql.remove.run(id).changes, 0))();
    this.count -= removed;
    const topics: Record<string, number> = {};
    for (const { id, topic } of outside) {
      this.inFlight.delete(id);
      topics[topic] = (topics[topic] ?? 0) + 1;
    }
    this.log.warn({ discarded: removed, topics, file: this.file }, 'queued messages of an earlier enrolment for another shop cannot be delivered: discarded');
    return removed;
  }

  /** Checkpoints the WAL into the main file and closes it. */
  close(): void {
    if (!this.db.open) return;
    this.inFlight.clear();
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch (err) {
      // A full disk: the WAL stays as it is and is read back at the next open.
      this.log.warn({ err: (err as Error).message, file: this.file }, 'queue file not checkpointed');
    }
    this.db.close();
  }

  get open(): boolean {
    return this.db.open;
  }

  /**
   * Inside a transaction: deletes `n` of the oldest items, waiting ones first (in-flight ones are on the wire), and
   * counts them in `dropped`. Returns their ids, for `afterDrop()` once the transaction is committed.
   */
  private dropOldest(n: number): number[] {
    const candidates = this.sql.oldestIds.all(n + this.inFlight.size).map((r) => r.id);
    const waiting = candidates.filter((id) => !this.inFlight.has(id));
    const victims = waiting.length >= n ? waiting.slice(0, n) : [...waiting, ...candidates.filter((id) => this.inFlight.has(id))].slice(0, n);
    for (const id of victims) this.sql.remove.run(id);
    this.sql.addDropped.run(victims.length, this.droppedCounter);
    return victims;
  }

  /** After the commit of a dropOldest(): the count, the in-flight marks and the warning. */
  private afterDrop(victims: number[]): void {
    if (victims.length === 0) return;
    for (const id of victims) this.inFlight.delete(id);
    this.count -= victims.length;
    this.log.warn({ dropped: victims.length, bound: this.maxItems, file: this.file }, 'queue full: dropped the oldest messages');
  }
}
