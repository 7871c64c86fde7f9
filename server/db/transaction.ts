import { AsyncLocalStorage } from 'node:async_hooks';
import type Database from 'better-sqlite3';

/**
 * Asynchronous transactions on one better-sqlite3 connection (docs/scale-out.md, "The data layer").
 *
 * Head office's services are written as async functions so that one code path serves SQLite and PostgreSQL. On SQLite
 * every query still runs synchronously and its promise is already resolved, so a transaction body that awaits only
 * the database runs from BEGIN to COMMIT within one turn of the event loop: no other request, timer or message can
 * run in between and see, or write into, the open transaction on the shared connection. A body that awaits anything
 * else (a file, a hash, the network) would break that, so it is refused: the transaction is rolled back and the call
 * throws, on every run, not only when a race happens. Work of that kind is done before or after the transaction.
 *
 * A transaction started inside another (the same connection, within its body) becomes a savepoint, as with
 * better-sqlite3's own nested transactions. Transactions started side by side in one turn (Promise.all) wait for each
 * other.
 */
export type AsyncTx = <T>(fn: () => Promise<T>) => Promise<T>;

export class CrossedTurnError extends Error {
  constructor() {
    super('A database transaction awaited something other than the database (see server/db/transaction.ts): rolled back.');
  }
}

export function sqliteTransactions(sqlite: Database.Database, begin: 'BEGIN IMMEDIATE' | 'BEGIN DEFERRED' = 'BEGIN IMMEDIATE'): AsyncTx {
  const inside = new AsyncLocalStorage<true>();
  let queue: Promise<unknown> = Promise.resolve();
  let savepoints = 0;

  async function run<T>(fn: () => Promise<T>): Promise<T> {
    let crossed = false;
    let open = true;
    sqlite.exec(begin);
    setImmediate(() => {
      if (open) crossed = true;
    });
    try {
      const value = await inside.run(true, fn);
      if (crossed) throw new CrossedTurnError();
      open = false;
      sqlite.exec('COMMIT');
      return value;
    } catch (e) {
      open = false;
      if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
      throw e;
    }
  }

  async function nested<T>(fn: () => Promise<T>): Promise<T> {
    const name = `ff_sp${++savepoints}`;
    sqlite.exec(`SAVEPOINT ${name}`);
    try {
      const value = await fn();
      sqlite.exec(`RELEASE ${name}`);
      return value;
    } catch (e) {
      if (sqlite.inTransaction) {
        sqlite.exec(`ROLLBACK TO ${name}`);
        sqlite.exec(`RELEASE ${name}`);
      }
      throw e;
    }
  }

  return <T>(fn: () => Promise<T>): Promise<T> => {
    if (inside.getStore()) return nested(fn);
    const next = queue.then(() => run(fn));
    queue = next.catch(() => undefined);
    return next;
  };
}

const readers = new WeakMap<Database.Database, AsyncTx>();

/**
 * Read transactions (BEGIN DEFERRED) on the connection under a drizzle database: the reports' one snapshot. Inside a
 * transaction of the same runner it is a savepoint, as above.
 */
export function readTransactionOf(db: { $client: Database.Database }): AsyncTx {
  const sqlite = db.$client;
  let tx = readers.get(sqlite);
  if (!tx) readers.set(sqlite, (tx = sqliteTransactions(sqlite, 'BEGIN DEFERRED')));
  return tx;
}
