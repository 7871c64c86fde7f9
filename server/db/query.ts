import { onPostgres } from './raw.js';

/**
 * Helpers that read the answer of an awaited drizzle query the same way on either store (docs/scale-out.md, "The
 * data layer"): drizzle's better-sqlite3 queries are awaitable as well as synchronous, node-postgres's are awaitable
 * only, so head office's services await every query and use these where the two drivers' answers differ.
 */

/** The first row of a query's answer, or undefined: drizzle's SQLite `.get()`, written so PostgreSQL has it too. */
export async function one<T>(query: PromiseLike<T[]>): Promise<T | undefined> {
  return (await query)[0];
}

/** How many rows a write changed: better-sqlite3's `changes`, node-postgres's `rowCount`. */
export function changes(result: { changes: number } | { rowCount: number | null }): number {
  return 'changes' in result ? result.changes : (result.rowCount ?? 0);
}

/** The one row a write's `returning()` gives back (an insert, or an update of a row known to exist). */
export async function returned<T>(query: PromiseLike<T[]>): Promise<T> {
  const rows = await query;
  if (rows.length === 0) throw new Error('the write returned no row');
  return rows[0]!;
}

/**
 * A query prepared once: drizzle's SQLite prepare() takes no name, its PostgreSQL one takes the statement's name (a
 * named statement, planned once per pooled connection).
 */
export function prepareNamed<Q extends { prepare(): unknown }>(query: Q, name: string): ReturnType<Q['prepare']> {
  return (onPostgres ? (query as unknown as { prepare(name: string): unknown }).prepare(name) : query.prepare()) as ReturnType<Q['prepare']>;
}
