import { createHash } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import type { Db, Store } from './open.js';
import { executeNamedOnPostgres, type PgResult } from './raw.js';

/**
 * Prepared statements for the hot paths (the ingest thread's batch writes, stays, crossings, heartbeats), written as
 * SQL text once and run on either store (docs/scale-out.md). Building these through drizzle's query builder for every
 * row cost more than running them on SQLite (docs/decisions.md, "Ingest CPU per visit"), so on SQLite they stay
 * better-sqlite3's prepared statements, prepared once per connection; their answers come back as promises only so the
 * code around them is the same on PostgreSQL.
 *
 * On PostgreSQL the same text, with `?` and `@name` turned into `$1...` once, is a named prepared statement
 * (node-postgres's query config with a `name`, raw.ts `executeNamedOnPostgres`): parsed and planned once per
 * connection, then only bound and executed, where building it through drizzle's `sql` and sending the text for
 * every call cost head office and PostgreSQL more (docs/benchmarks.md, "Named prepared statements on PostgreSQL,
 * before and after"). It runs where the store's `db` runs (inside `store.tx`, the transaction's connection). Where
 * SQLite's text is not PostgreSQL's (scalar `max(a, b)`, `indexed by`, a boolean compared with 1), the statement
 * gives PostgreSQL's text beside it. Answers read as SQLite's do: booleans as 1 and 0, counts and sums as numbers,
 * times as ISO strings, and `lastInsertRowid` the first column of the row a PostgreSQL text's `returning` gives back.
 */
export type Params = unknown[] | [Record<string, unknown>];

export interface Statement {
  get<R>(...params: Params): Promise<R | undefined>;
  all<R>(...params: Params): Promise<R[]>;
  run(...params: Params): Promise<{ changes: number; lastInsertRowid: number }>;
}

/** Prepares one statement: SQLite's text, and PostgreSQL's where it differs. */
export type Prepare = (sqliteText: string, postgresText?: string) => Statement;

/**
 * A module's statements, built once per store: `const statementsOf = preparedStatements((prep) => ({ touch:
 * prep('update shops set ...') }))`, then `statementsOf(store).touch.run(...)`.
 */
export function preparedStatements<T>(build: (prep: Prepare) => T): (store: Store) => T {
  const bySqlite = new WeakMap<BetterSqlite3.Database, T>();
  const byPostgres = new WeakMap<object, T>();
  return (store) => {
    if (store.dialect === 'sqlite') {
      let q = bySqlite.get(store.sqlite);
      if (!q) bySqlite.set(store.sqlite, (q = build((text) => sqliteStatement(store.sqlite.prepare(text)))));
      return q;
    }
    let q = byPostgres.get(store.pool);
    if (!q) byPostgres.set(store.pool, (q = build((text, pgText) => postgresStatement(() => store.db, pgText ?? text))));
    return q;
  };
}

function sqliteStatement(stmt: BetterSqlite3.Statement): Statement {
  return {
    get: <R>(...params: Params) => Promise.resolve(stmt.get(...params) as R | undefined),
    all: <R>(...params: Params) => Promise.resolve(stmt.all(...params) as R[]),
    run: (...params: Params) => {
      const r = stmt.run(...params);
      return Promise.resolve({ changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) });
    },
  };
}

/** node-postgres's type id of boolean. */
const BOOL = 16;

/** `?` (positional) or `@name` (from one object), outside quoted strings. */
const PLACEHOLDER = /'(?:[^']|'')*'|\?|@([A-Za-z_]\w*)/g;

function postgresStatement(db: () => Db, text: string): Statement {
  // Once: PostgreSQL's text, each placeholder a `$n` of its own (a name used twice is two parameters, as drizzle
  // made them), and for each `$n` its position or name.
  const slots: (number | string)[] = [];
  let position = 0;
  const pgText = text.replace(PLACEHOLDER, (m: string, name: string | undefined) => {
    if (m.startsWith("'")) return m;
    slots.push(name ?? position++);
    return `$${slots.length}`;
  });
  const byName = slots.some((s) => typeof s === 'string');
  // The same text always gets the same name, so statementOn's statements do not pile up on a connection.
  const name = `ff_${createHash('sha1').update(pgText).digest('hex').slice(0, 20)}`;
  const values = (params: Params): unknown[] => {
    const named = byName ? (params[0] as Record<string, unknown>) : undefined;
    return slots.map((slot) => {
      const value = typeof slot === 'string' ? named![slot] : params[slot];
      return value === undefined ? null : value;
    });
  };
  const execute = async (params: Params): Promise<PgResult> => {
    const r = await executeNamedOnPostgres(db(), name, pgText, values(params));
    const bools = r.fields.filter((f) => f.dataTypeID === BOOL).map((f) => f.name);
    if (bools.length > 0) for (const row of r.rows) for (const n of bools) if (typeof row[n] === 'boolean') row[n] = row[n] ? 1 : 0;
    return r;
  };
  return {
    get: async <R>(...params: Params) => (await execute(params)).rows[0] as R | undefined,
    all: async <R>(...params: Params) => (await execute(params)).rows as R[],
    run: async (...params: Params) => {
      const r = await execute(params);
      const first = r.rows[0];
      return { changes: r.rowCount ?? 0, lastInsertRowid: first ? Number(Object.values(first)[0]) : 0 };
    },
  };
}

/** One statement on a store, not kept: for tests and tools that look at rows on either store. */
export function statementOn(store: Store, sqliteText: string, postgresText?: string): Statement {
  return store.dialect === 'sqlite' ? sqliteStatement(store.sqlite.prepare(sqliteText)) : postgresStatement(() => store.db, postgresText ?? sqliteText);
}
