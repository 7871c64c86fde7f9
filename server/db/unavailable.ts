/**
 * Whether an error means the database could not be reached or could not take the write now (a connection refused
 * or lost, PostgreSQL shutting down or out of connections or disk, repeated serialization failures, SQLite's file
 * busy, full or unreadable), as
 * opposed to a refusal of this write itself (a constraint, a bad value). Ingest keeps what such an error stopped and
 * tries again later, unacknowledged, instead of dropping it.
 */
export function databaseUnavailable(err: unknown): boolean {
  return databaseBusy(err) || databaseUnreachable(err);
}

/**
 * Whether an error is the database refusing this moment, not this write: a serialization failure or deadlock that
 * outlasted the store's own re-runs (server/db/pg/store.ts), or SQLite's file busy or locked past its timeout. The
 * same request a moment later may well succeed.
 */
export function databaseBusy(err: unknown): boolean {
  return someCause(err, (code) => {
    // Dropping such an ingest batch would lose a visit (measured: 4 of 9 PostgreSQL bench warm-ups).
    if (code === '40001' || code === '40P01') return true;
    return /^SQLITE_(BUSY|LOCKED)/.test(code);
  });
}

/** Whether an error is the database out of reach or out of resources (connection, disk, shutdown). */
export function databaseUnreachable(err: unknown): boolean {
  return someCause(err, (code, message) => {
    // PostgreSQL: class 08 (connection exception), 53 (insufficient resources: disk full, out of memory, too many
    // connections), 57P01-57P03 (shut down by an administrator or a crash, cannot connect now).
    if (/^(08...|53...|57P0[1-3])$/.test(code)) return true;
    if (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/.test(code)) return true;
    if (/^SQLITE_(FULL|IOERR|CANTOPEN|READONLY|PROTOCOL)/.test(code)) return true;
    // A database closed to new connections (ALTER DATABASE ... ALLOW_CONNECTIONS false), and node-postgres's own
    // words for a lost or unobtainable connection (no code).
    if (code === '55000' && /not currently accepting connections/.test(message)) return true;
    return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed/i.test(message);
  });
}

/** Whether `test` holds for the error or one of its causes (at most 8 deep), given each one's code and message. */
export function someCause(err: unknown, test: (code: string, message: string) => boolean): boolean {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as typeof e, depth++) {
    if (test(typeof e.code === 'string' ? e.code : '', typeof e.message === 'string' ? e.message : '')) return true;
  }
  return false;
}
