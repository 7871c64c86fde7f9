import { sql, type SQL } from 'drizzle-orm';
import pg from 'pg';
import { isoFromPostgres } from './pg/columns.js';
import { databaseDialect } from './dialect.js';
import type { Db } from './open.js';

/**
 * SQL that drizzle's query builder cannot say, written once where both dialects agree and per dialect where they do
 * not (docs/scale-out.md, "What differs between the drizzle dialects"). The dialect is the process's, read once, as
 * server/db/tables.ts reads it.
 */
export const onPostgres = databaseDialect() === 'postgres';

/** The dialect's text of a fragment: `bySql(sql\`json_each(...)\`, sql\`jsonb_array_elements(...)\`)`. */
export const bySql = (sqlite: SQL, postgres: SQL): SQL => (onPostgres ? postgres : sqlite);

/**
 * ` indexed by <index>` after a table on SQLite, where its planner needs telling which index covers a query's columns
 * (each use measured); nothing on PostgreSQL, which has no such clause and plans by its statistics.
 */
export function indexedBy(index: string): SQL {
  return onPostgres ? sql`` : sql.raw(` indexed by ${index}`);
}

/** A boolean column is false / true: SQLite holds 0 and 1 (`= 0` keeps its partial indexes usable), PostgreSQL booleans. */
export function isFalse(column: string): SQL {
  return onPostgres ? sql.raw(`not ${column}`) : sql.raw(`${column} = 0`);
}
export function isTrue(column: string): SQL {
  return onPostgres ? sql.raw(column) : sql.raw(`${column} = 1`);
}

/**
 * `column` is one of `ids`: one parameter on both (not one per id): SQLite reads a JSON array with json_each,
 * PostgreSQL takes a text array.
 */
export function amongIds(column: SQL, ids: readonly string[]): SQL {
  return bySql(sql`${column} in (select value from json_each(${JSON.stringify(ids)}))`, sql`${column} = any(${sql.param(ids)}::text[])`);
}

export interface PgResult {
  rows: Record<string, unknown>[];
  rowCount: number | null;
  fields: { name: string; dataTypeID: number }[];
}
/** node-postgres's type id of `timestamp with time zone`: drizzle hands raw SQL's times over as PostgreSQL's text. */
const TIMESTAMPTZ = 1184;

/** Runs SQL on PostgreSQL (drizzle's `db.execute`), its timestamptz columns read as ISO strings. */
export async function executeOnPostgres(db: Db, query: SQL): Promise<PgResult> {
  return isoTimes(await (db as unknown as { execute(q: SQL): Promise<PgResult> }).execute(query));
}

function isoTimes(r: PgResult): PgResult {
  const times = r.fields.filter((f) => f.dataTypeID === TIMESTAMPTZ).map((f) => f.name);
  if (times.length > 0) {
    for (const row of r.rows) for (const name of times) if (typeof row[name] === 'string' || row[name] instanceof Date) row[name] = isoFromPostgres(row[name] as string | Date);
  }
  return r;
}

/** node-postgres's pool, or the connection of an open transaction: what a drizzle database runs its queries on. */
interface PgQueryable {
  query(config: { name: string; text: string; types: typeof DRIZZLE_TYPES }, values: unknown[]): Promise<PgResult>;
}

/**
 * The type ids whose text drizzle hands over as it is (times, dates, intervals and their arrays): node-postgres's
 * parsers for the rest (server/db/pg/open.ts sets int8's and numeric's), so a named statement's rows read as the same
 * query's rows through `db.execute`.
 */
const AS_TEXT = new Set([pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.TIMESTAMP, pg.types.builtins.DATE, pg.types.builtins.INTERVAL, 1115, 1182, 1185, 1187, 1231]);
const DRIZZLE_TYPES = {
  getTypeParser: (id: number, format?: 'text' | 'binary') => (AS_TEXT.has(id) ? (v: string) => v : pg.types.getTypeParser(id, format)),
};

/**
 * Runs a named prepared statement on PostgreSQL (node-postgres's query config with a `name`): parsed once per
 * connection, then only bound and executed, where drizzle's `db.execute` sends the text to be parsed and planned for
 * every call. `text` has `$1...` placeholders; the same name must always carry the same text (node-postgres refuses
 * another). Runs where `db` runs its queries: the pool, or inside `store.tx` the transaction's connection (drizzle's
 * session keeps it as `client`). Rows read as `executeOnPostgres` reads them; an error names the statement, with
 * PostgreSQL's error (its SQLSTATE `code`) as its cause, as drizzle's does.
 */
export async function executeNamedOnPostgres(db: Db, name: string, text: string, values: unknown[]): Promise<PgResult> {
  const client = (db as unknown as { session?: { client?: PgQueryable } }).session?.client;
  if (typeof client?.query !== 'function') throw new Error('executeNamedOnPostgres: not a drizzle node-postgres database');
  try {
    return isoTimes(await client.query({ name, text, types: DRIZZLE_TYPES }, values));
  } catch (err) {
    throw new Error(`Failed query (${name}): ${text}`, { cause: err });
  }
}

/**
 * The rows of raw SQL (drizzle's `db.all` on SQLite, `db.execute` on PostgreSQL), keyed by the columns' names or
 * aliases. Read the same on both stores: times as ISO strings, counts and sums as numbers (server/db/pg/open.ts sets
 * node-postgres's parsers for int8 and numeric), booleans as PostgreSQL's booleans where SQLite gives 0/1 (select
 * them as integers, `(x)::int` on PostgreSQL, when the caller compares with 1).
 */
export async function rows<T>(db: Db, query: SQL): Promise<T[]> {
  if (!onPostgres) return await db.all<T>(query);
  return (await executeOnPostgres(db, query)).rows as T[];
}

/** The first row of raw SQL, or undefined (drizzle's `db.get` on SQLite). */
export async function row<T>(db: Db, query: SQL): Promise<T | undefined> {
  return (await rows<T>(db, query))[0];
}

/** Runs raw SQL that writes; how many rows it changed (`changes` on SQLite, `rowCount` on PostgreSQL). */
export async function run(db: Db, query: SQL): Promise<number> {
  if (!onPostgres) return (await db.run(query)).changes;
  return (await executeOnPostgres(db, query)).rowCount ?? 0;
}
