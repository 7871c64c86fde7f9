/**
 * The PostgreSQL schema must stay table for table and column for column the SQLite one: a migration that adds a
 * table or column to one store only fails here. Names, TypeScript keys (server/db/pg/migrate copies row objects
 * from one to the other by key), nullability, defaults, primary keys, unique columns, foreign keys and index names.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { getTableColumns, is } from 'drizzle-orm';
import { getTableConfig as pgConfig, PgTable, type PgColumn } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteConfig, SQLiteTable, type SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { copyOrder } from './migrate.js';
import * as pg from './schema.js';
import * as sqlite from '../schema.js';
import { packageRoot } from '../../paths.js';

const sqliteTables = new Map(Object.values(sqlite as Record<string, unknown>).filter((t): t is SQLiteTable => is(t, SQLiteTable)).map((t) => [sqliteConfig(t).name, t]));
const allPgTables = new Map(Object.values(pg as Record<string, unknown>).filter((t): t is PgTable => is(t, PgTable)).map((t) => [pgConfig(t).name, t]));
/**
 * The one exception: picture bytes, which the embedded store keeps as files in its data folder and PostgreSQL as rows
 * (server/photos/pictures.ts). Each is keyed by a table both stores have, and goes with its row.
 */
const POSTGRES_ONLY = pg.postgresOnlyTables.map((t) => pgConfig(t).name);
const pgTables = new Map([...allPgTables].filter(([name]) => !POSTGRES_ONLY.includes(name)));

/** The PostgreSQL types a SQLite column may become (docs/scale-out.md, "Types"). */
function allowedTypes(c: SQLiteColumn): string[] {
  switch (c.columnType) {
    case 'SQLiteBoolean':
      return ['boolean'];
    case 'SQLiteInteger':
    case 'SQLiteTimestamp':
      return ['integer', 'bigint'];
    case 'SQLiteReal':
      return ['double precision'];
    case 'SQLiteBlobBuffer':
      return ['bytea'];
    case 'SQLiteTextJson':
      return ['jsonb'];
    case 'SQLiteText':
      // An ISO time is named `at`, `*_at` or `*_since`, and is a timestamptz; other text stays text (or a date for `YYYY-MM-DD`).
      return /^(at|.*_at|.*_since)$/.test(c.name) ? ['timestamp(3) with time zone'] : ['text', 'date'];
    default:
      return [`(no mapping for ${c.columnType}: add one here and in docs/scale-out.md)`];
  }
}

const fks = (fkList: { reference(): { columns: { name: string }[]; foreignColumns: { name: string; table: unknown }[] }; onDelete?: string | undefined }[], nameOf: (t: never) => string) =>
  fkList
    .map((fk) => {
      const r = fk.reference();
      return `${r.columns.map((c) => c.name).join(',')} -> ${nameOf(r.foreignColumns[0]!.table as never)}(${r.foreignColumns.map((c) => c.name).join(',')}) on delete ${fk.onDelete ?? 'no action'}`;
    })
    .sort();

describe('the PostgreSQL schema mirrors the SQLite schema', () => {
  it('has the same tables (and PostgreSQL the picture tables besides)', () => {
    expect(sqliteTables.size).toBeGreaterThan(25);
    expect([...pgTables.keys()].sort()).toEqual([...sqliteTables.keys()].sort());
    for (const name of POSTGRES_ONLY) {
      expect(allPgTables.has(name), name).toBe(true);
      expect(sqliteTables.has(name), name).toBe(false);
      const fk = pgConfig(allPgTables.get(name)!).foreignKeys.map((k) => ({ on: k.onDelete, table: pgConfig(k.reference().foreignTable as PgTable).name }));
      expect(fk, `${name} goes with the row it belongs to`).toEqual([{ on: 'cascade', table: expect.stringMatching(/^(cameras|face_images)$/) }]);
    }
  });

  for (const [name, st] of sqliteTables) {
    it(`${name}: same columns, keys, nullability, defaults, types as mapped`, () => {
      const pt = pgTables.get(name);
      expect(pt, `no PostgreSQL table ${name} in server/db/pg/schema.ts`).toBeDefined();
      const sCols = getTableColumns(st) as Record<string, SQLiteColumn>;
      const pCols = getTableColumns(pt!) as Record<string, PgColumn>;
      const shape = (cols: Record<string, SQLiteColumn | PgColumn>) =>
        Object.fromEntries(
          Object.entries(cols).map(([key, c]) => [
            key,
            { name: c.name, notNull: c.notNull, primary: c.primary, unique: c.isUnique, hasDefault: c.hasDefault && !c.generatedIdentity, default: c.default },
          ]),
        );
      const sShape = shape(sCols);
      // SQLite's `integer primary key autoincrement` has a default (the rowid); PostgreSQL's is an identity column.
      for (const [key, c] of Object.entries(sCols)) if (c.primary && c.columnType === 'SQLiteInteger') sShape[key]!.hasDefault = false;
      expect(shape(pCols)).toEqual(sShape);
      for (const [key, c] of Object.entries(sCols)) {
        expect(allowedTypes(c), `${name}.${c.name}`).toContain(pCols[key]!.getSQLType());
        if (c.primary && c.columnType === 'SQLiteInteger' && c.name !== 'number') expect(pCols[key]!.generatedIdentity?.type, `${name}.${c.name} (autoincrement)`).toBe('byDefault');
      }
    });

    it(`${name}: same composite primary key, foreign keys and indexes`, () => {
      const s = sqliteConfig(st);
      const p = pgConfig(pgTables.get(name)!);
      expect(p.primaryKeys.map((k) => k.columns.map((c) => c.name))).toEqual(s.primaryKeys.map((k) => k.columns.map((c) => c.name)));
      expect(fks(p.foreignKeys, (t: PgTable) => pgConfig(t).name)).toEqual(fks(s.foreignKeys, (t: SQLiteTable) => sqliteConfig(t).name));
      const pkName = Object.values(getTableColumns(pgTables.get(name)!)).find((c) => c.primary)?.name;
      const indexes = (list: { config: { name?: string | undefined; unique: boolean; columns: unknown[]; where?: unknown } }[]) =>
        list
          .map((i) => ({
            name: i.config.name ?? '',
            unique: i.config.unique,
            partial: i.config.where !== undefined,
            columns: (i.config.columns as { name: string }[]).map((c) => c.name),
          }))
          .sort((a, b) => a.name.localeCompare(b.name));
      const sIdx = indexes(s.indexes);
      const pIdx = indexes(p.indexes);
      expect(pIdx.map((i) => i.name)).toEqual(sIdx.map((i) => i.name));
      for (const [n, si] of sIdx.entries()) {
        const pi = pIdx[n]!;
        expect({ unique: pi.unique, partial: pi.partial }, si.name).toEqual({ unique: si.unique, partial: si.partial });
        // A SQLite index holds the rowid implicitly; the PostgreSQL one may name the integer key at its end.
        const cols = pi.columns.at(-1) === pkName && si.columns.at(-1) !== pkName ? pi.columns.slice(0, -1) : pi.columns;
        expect(cols, si.name).toEqual(si.columns);
      }
    });
  }
});

describe('the PostgreSQL migrations are generated from the PostgreSQL schema', () => {
  it('the last snapshot of server/db/pg/migrations has every table, column, index and key of server/db/pg/schema.ts (else: npm run db:generate:pg)', () => {
    const dir = path.join(packageRoot(), 'server/db/pg/migrations');
    const journal = JSON.parse(fs.readFileSync(path.join(dir, 'meta/_journal.json'), 'utf8')) as { entries: { idx: number; tag: string }[] };
    const last = journal.entries.at(-1)!;
    expect(fs.existsSync(path.join(dir, `${last.tag}.sql`))).toBe(true);
    type Snap = {
      tables: Record<string, { name: string; columns: Record<string, { type: string; notNull: boolean; primaryKey: boolean }>; indexes: Record<string, { isUnique: boolean }>; foreignKeys: Record<string, unknown> }>;
    };
    const snap = JSON.parse(fs.readFileSync(path.join(dir, `meta/${String(last.idx).padStart(4, '0')}_snapshot.json`), 'utf8')) as Snap;
    const fromSnapshot = Object.fromEntries(
      Object.values(snap.tables).map((t) => [
        t.name,
        {
          columns: Object.fromEntries(Object.entries(t.columns).map(([n, c]) => [n, `${c.type}${c.notNull ? ' not null' : ''}${c.primaryKey ? ' primary key' : ''}`])),
          indexes: Object.entries(t.indexes).map(([n, i]) => `${n}${i.isUnique ? ' unique' : ''}`).sort(),
          foreignKeys: Object.keys(t.foreignKeys).length,
        },
      ]),
    );
    const fromSchema = Object.fromEntries(
      [...allPgTables].map(([name, t]) => {
        const c = pgConfig(t);
        return [
          name,
          {
            columns: Object.fromEntries(c.columns.map((col) => [col.name, `${col.getSQLType()}${col.notNull ? ' not null' : ''}${col.primary ? ' primary key' : ''}`])),
            indexes: c.indexes.map((i) => `${i.config.name}${i.config.unique ? ' unique' : ''}`).sort(),
            foreignKeys: c.foreignKeys.length,
          },
        ];
      }),
    );
    expect(fromSnapshot).toEqual(fromSchema);
  });
});

describe('migrate --to copies the tables in foreign-key order', () => {
  it('puts every table after the tables its foreign keys name', () => {
    const order = copyOrder().map((t) => pgConfig(t).name);
    expect(order.length).toBe(pgTables.size);
    for (const [name, t] of pgTables) {
      for (const fk of pgConfig(t).foreignKeys) {
        const target = pgConfig(fk.reference().foreignTable as PgTable).name;
        if (target !== name) expect(order.indexOf(target), `${name} -> ${target}`).toBeLessThan(order.indexOf(name));
      }
    }
  });
});
