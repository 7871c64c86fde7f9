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
 * A transaction started while one is open on the connection becomes a savepoint in it, as with better-sqlite3's own
 * nested transactions. Within one turn the only transactions that can start while one is open are those its body
 * starts, or ones started side by side with it in the same chain (Promise.all of two transactions). Those would be
 * nested, not independent, so they are refused: the outer transaction finds a savepoint its body did not wait for,
 * rolls back and throws BesideError (head office never starts transactions side by side). No AsyncLocalStorage tells
 * the two apart at the start: on Node 20 its first use slows every promise of the process (measured: a chain of three
 * awaited async calls 0.33 us before, 1.17 us after), which is most of what a request is made of.
 */
export type AsyncTx = <T>(fn: () => Promise<T>) => Promise<T>;

export class BesideError extends Error {
  constructor() {
    super('A database transaction was started beside another in the same chain (Promise.all of two transactions): rolled back. Start them one after the other.');
  }
}

export class CrossedTurnError extends Error {
  constructor() {
    super('A database transaction awaited something other than the database (see server/db/transaction.ts): rolled back.');
  }
}

type Begin = 'BEGIN IMMEDIATE' | 'BEGIN DEFERRED';

const runners = new WeakMap<Database.Database, (begin: Begin) => AsyncTx>();

/**
 * The connection's transactions: `write` (BEGIN IMMEDIATE: store.tx) and `read` (BEGIN DEFERRED: the reports' one
 * snapshot). Both share the connection's one open transaction, so either started inside the other is a savepoint.
 */
export function sqliteTransactions(sqlite: Database.Database): { write: AsyncTx; read: AsyncTx } {
  let runner = runners.get(sqlite);
  if (!runner) runners.set(sqlite, (runner = transactionRunner(sqlite)));
  return { write: runner('BEGIN IMMEDIATE'), read: runner('BEGIN DEFERRED') };
}

function transactionRunner(sqlite: Database.Database): (begin: Begin) => AsyncTx {
  let depth = 0;
  let savepoints = 0;
  /** Which outer transaction is open: a savepoint that outlives its outer transaction was started beside it. */
  let generation = 0;

  async function outer<T>(begin: Begin, fn: () => Promise<T>): Promise<T> {
    let crossed = false;
    sqlite.exec(begin);
    depth = 1;
    const mine = ++generation;
    const mark = () => {
      if (depth > 0 && generation === mine) crossed = true;
    };
    // Whatever the body awaits besides the database resumes it from the event loop, after one of these has run: the
    // immediate for I/O (the loop does not wait in its poll phase while an immediate is pending) and for immediates;
    // the 1-ms timer for timers. The timer is needed when this turn is itself an immediate: this immediate then runs
    // in the next loop's check phase, after that loop's timers, and a timer the body set could resume it first (seen
    // under load in CI). Timers fire in order of expiry, and this one expires first.
    const immediate = setImmediate(mark);
    const timer = setTimeout(mark, 0);
    try {
      const value = await fn();
      if (crossed) throw new CrossedTurnError();
      // A savepoint still open when the body is done was not awaited by it: started beside this transaction.
      if (depth !== 1) throw new BesideError();
      sqlite.exec('COMMIT');
      return value;
    } catch (e) {
      if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
      throw e;
    } finally {
      depth = 0;
      clearImmediate(immediate);
      clearTimeout(timer);
    }
  }

  async function nested<T>(fn: () => Promise<T>): Promise<T> {
    const name = `ff_sp${++savepoints}`;
    const within = generation;
    sqlite.exec(`SAVEPOINT ${name}`);
    depth++;
    try {
      const value = await fn();
      if (generation !== within || !sqlite.inTransaction) throw new BesideError();
      sqlite.exec(`RELEASE ${name}`);
      return value;
    } catch (e) {
      if (generation === within && sqlite.inTransaction) {
        sqlite.exec(`ROLLBACK TO ${name}`);
        sqlite.exec(`RELEASE ${name}`);
      }
      throw e;
    } finally {
      if (generation === within) depth--;
    }
  }

  return (begin) =>
    <T>(fn: () => Promise<T>): Promise<T> =>
      depth > 0 ? nested(fn) : outer(begin, fn);
}

/** The reports' read snapshot on the connection under a drizzle database (a savepoint inside an open transaction). */
export function readTransactionOf(db: { $client: Database.Database }): AsyncTx {
  return sqliteTransactions(db.$client).read;
}
