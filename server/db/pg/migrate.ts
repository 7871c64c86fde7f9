/**
 * `footfall migrate --to postgres://...`: copies an embedded (SQLite) head-office database into an empty PostgreSQL
 * database (docs/scale-out.md). The SQLite file is read inside one read transaction, so the copy is one instant of
 * it even while head office keeps writing (WAL: the reader blocks nobody). On PostgreSQL everything happens in one
 * transaction: the migrations of server/db/pg/migrations, then the tables in foreign-key order, the identity
 * sequences moved past the copied keys, and the check (rows and a checksum of the keys per table, both sides); a
 * failure anywhere rolls all of it back and leaves the database empty.
 *
 * Rows are copied as they are, sealed secrets included: the PostgreSQL database is only readable with the same server
 * key (the key file, or FOOTFALL_ENCRYPTION_KEY). Given the data folder, its face photos and camera pictures become
 * rows too (server/photos/pictures.ts), in the same transaction.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { getTableColumns, is, sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { drizzle } from 'drizzle-orm/node-postgres';
import { getTableConfig as pgConfig, PgTable, type PgColumn } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteConfig, SQLiteTable, type SQLiteColumn } from 'drizzle-orm/sqlite-core';
import pg from 'pg';
import { snapshotFile } from '../../cameras/snapshots.js';
import { isPostgresUrl } from '../dialect.js';
import { packageRoot } from '../../paths.js';
import * as sqliteSchema from '../schema.js';
import { applyPgMigrations, type PgDb } from './open.js';
import * as pgSchema from './schema.js';

/** A migration that cannot go ahead or did not check out; the message says why and what to do. Nothing was written. */
export class MigrateError extends Error {}

export interface TableCopy {
  table: string;
  rows: number;
  /** Of the primary keys: the sum of each key's first 28 bits of MD5, computed by SQLite and by PostgreSQL alike. */
  keySum: string;
}

export interface MigrateReport {
  /** When the SQLite snapshot was taken: what head office wrote after it is not in PostgreSQL. */
  snapshotAt: string;
  migrationsApplied: number;
  /** In the order copied (foreign keys first). */
  tables: TableCopy[];
  rows: number;
  /** Identity columns set to continue after the copied keys (SQLite's AUTOINCREMENT never reuses one, nor will this). */
  sequences: { table: string; column: string; next: number }[];
  /** The data folder's pictures now rows (face_image_bytes, camera_pictures), when a data folder was given. */
  pictures?: PictureCopy;
}

export interface PictureCopy {
  /** Face photos copied (their rows' path emptied), and photo rows whose file was not in the data folder (kept as they were). */
  faces: number;
  facesMissing: number;
  /** Cameras' latest pictures copied. */
  cameras: number;
}

/** The columns whose values are sealed or keyed with the server key: useless without it. */
export const KEYED_COLUMNS = ['shops.broker_secret', 'cameras.password', 'alert_settings.webhook_secret', 'invitations.code_hash', 'enrolment_codes.code_hash', 'idp_codes.code_mac'];

const byName = <T>(tables: T[], name: (t: T) => string) => new Map(tables.map((t) => [name(t), t]));
const sqliteTables = byName(
  Object.values(sqliteSchema as Record<string, unknown>).filter((t): t is SQLiteTable => is(t, SQLiteTable)),
  (t) => sqliteConfig(t).name,
);
/** The tables copied row for row: all but the picture tables, which are filled from the data folder's files. */
const pgTables = Object.values(pgSchema as Record<string, unknown>).filter((t): t is PgTable => is(t, PgTable) && !pgSchema.postgresOnlyTables.includes(t as never));

/** Tables so that each comes after those its foreign keys name (schema order otherwise). */
export function copyOrder(tables: PgTable[] = pgTables): PgTable[] {
  const name = (t: PgTable) => pgConfig(t).name;
  const deps = new Map(tables.map((t) => [name(t), new Set(pgConfig(t).foreignKeys.map((fk) => name(fk.reference().foreignTable as PgTable)).filter((n) => n !== name(t)))]));
  const done = new Set<string>();
  const out: PgTable[] = [];
  while (out.length < tables.length) {
    const next = tables.find((t) => !done.has(name(t)) && [...deps.get(name(t))!].every((d) => done.has(d)));
    if (!next) throw new Error(`foreign keys form a cycle among ${tables.filter((t) => !done.has(name(t))).map(name).join(', ')}`);
    done.add(name(next));
    out.push(next);
  }
  return out;
}

const q = (ident: string) => `"${ident.replace(/"/g, '""')}"`;

/** The primary key's columns (a composite key, or the one column marked primary). */
function keyColumns<C extends { name: string; primary: boolean }>(cols: C[], composite: { columns: { name: string }[] }[]): string[] {
  return composite[0] ? composite[0].columns.map((c) => c.name) : cols.filter((c) => c.primary).map((c) => c.name);
}

/** PostgreSQL's own words (drizzle wraps them in a message holding the whole statement and its parameters). */
const reason = (err: unknown): string => {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : (err as Error).message;
};

const keyHash = (text: string): number => parseInt(createHash('md5').update(text, 'utf8').digest('hex').slice(0, 7), 16);

/** Without the password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/**
 * `dataDir`: the data folder whose `images/` and `snapshots/` hold the database's pictures; they become rows of
 * face_image_bytes and camera_pictures in the same transaction (server/photos/pictures.ts), checked by counts.
 */
export async function migrateSqliteToPostgres(opts: { sqliteFile: string; url: string; dataDir?: string; onTable?: (t: TableCopy) => void }): Promise<MigrateReport> {
  if (!isPostgresUrl(opts.url)) throw new MigrateError(`--to must be a postgres:// or postgresql:// URL, not ${redactUrl(opts.url)}.`);
  if (!fs.existsSync(opts.sqliteFile)) throw new MigrateError(`There is no database at ${opts.sqliteFile}: is FOOTFALL_DATA_DIR the head office's data folder?`);
  const sqlite = new Database(opts.sqliteFile, { readonly: true, fileMustExist: true });
  sqlite.function('footfall_key_hash', { deterministic: true }, (k: unknown) => keyHash(String(k)));
  const client = new pg.Client({ connectionString: opts.url, options: '-c TimeZone=UTC' });
  client.on('error', () => undefined);
  try {
    // One read transaction for everything read below: one instant of the database, whatever head office writes meanwhile.
    sqlite.exec('begin');
    sqlite.prepare('select count(*) from sqlite_master').get();
    const snapshotAt = new Date().toISOString();
    checkSqliteSchema(sqlite, opts.sqliteFile);
    try {
      await client.connect();
    } catch (err) {
      throw new MigrateError(`Cannot connect to ${redactUrl(opts.url)}: ${(err as Error).message}`);
    }
    await refuseNonEmpty(client, opts.url);
    const db = drizzle(client, { schema: pgSchema });
    const report = await db.transaction(async (tx) => {
      const migrationsApplied = await applyPgMigrations(tx as unknown as PgDb);
      const tables: TableCopy[] = [];
      const sequences: MigrateReport['sequences'] = [];
      for (const pt of copyOrder()) {
        const name = pgConfig(pt).name;
        const st = sqliteTables.get(name);
        if (!st) throw new MigrateError(`The PostgreSQL table ${name} has no SQLite counterpart (server/db/pg/schema.test.ts should have caught this).`);
        await copyTable(sqlite, tx as unknown as PgDb, st, pt, name);
        const seq = await moveSequence(sqlite, tx as unknown as PgDb, pt, name);
        if (seq) sequences.push(seq);
        const copy = await verifyTable(sqlite, tx as unknown as PgDb, st, pt, name);
        tables.push(copy);
        opts.onTable?.(copy);
      }
      const pictures = opts.dataDir === undefined ? undefined : await copyPictures(sqlite, tx as unknown as PgDb, opts.dataDir);
      return { snapshotAt, migrationsApplied, tables, rows: tables.reduce((n, t) => n + t.rows, 0), sequences, ...(pictures ? { pictures } : {}) };
    });
    sqlite.exec('commit');
    return report;
  } finally {
    sqlite.close();
    await client.end().catch(() => undefined);
  }
}

/** The SQLite file must be a head-office database at exactly this version's last migration. */
function checkSqliteSchema(sqlite: Database.Database, file: string): void {
  const has = sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = '__drizzle_migrations'").get();
  if (!has) throw new MigrateError(`${file} is not a head-office database (no migrations table).`);
  const last = (sqlite.prepare('select max(created_at) as at from __drizzle_migrations').get() as { at: number | null }).at ?? 0;
  const ours = readMigrationFiles({ migrationsFolder: path.join(packageRoot(), 'server/db/migrations') }).at(-1)!.folderMillis;
  if (last < ours) throw new MigrateError(`${file} is at an older schema than this footfall: start head office of this version on it once (it migrates the file at start), then migrate.`);
  if (last > ours) throw new MigrateError(`${file} was written by a newer footfall than this one: run migrate --to with that version.`);
}

async function refuseNonEmpty(client: pg.Client, url: string): Promise<void> {
  const r = await client.query<{ name: string }>(
    `select table_schema || '.' || table_name as name from information_schema.tables
      where table_schema not in ('pg_catalog', 'information_schema') and table_schema not like 'pg\\_%' order by 1 limit 6`,
  );
  if (r.rows.length > 0) {
    const names = r.rows.slice(0, 5).map((x) => x.name).join(', ') + (r.rows.length > 5 ? ', ...' : '');
    throw new MigrateError(
      `The database ${redactUrl(url)} is not empty (it has ${names}). migrate --to copies into an empty database only: create a new one (createdb -O <user> footfall) and give its URL.`,
    );
  }
}

async function copyTable(sqlite: Database.Database, tx: PgDb, st: SQLiteTable, pt: PgTable, name: string): Promise<void> {
  const sCols = getTableColumns(st) as Record<string, SQLiteColumn>;
  const keys = Object.keys(sCols);
  const stmt = sqlite.prepare(`select ${keys.map((k) => q(sCols[k]!.name)).join(', ')} from ${q(name)}`).raw(true);
  // PostgreSQL takes at most 65,535 parameters a statement.
  const perBatch = Math.max(1, Math.min(1000, Math.floor(30_000 / keys.length)));
  let batch: Record<string, unknown>[] = [];
  const pkCols = keyColumns(Object.values(getTableColumns(pt)) as PgColumn[], pgConfig(pt).primaryKeys);
  const keyProps = pkCols.map((c) => keys.find((k) => sCols[k]!.name === c)!);
  const flush = async () => {
    if (!batch.length) return;
    const rows = batch;
    batch = [];
    try {
      // In a savepoint, so that a refused batch can be tried row by row to name the row PostgreSQL refuses.
      await tx.transaction(async (sp) => {
        await sp.insert(pt).values(rows as never);
      });
    } catch (err) {
      for (const row of rows) {
        try {
          await tx.transaction(async (sp) => {
            await sp.insert(pt).values(row as never);
          });
        } catch (rowErr) {
          const key = keyProps.map((k, i) => `${pkCols[i]} ${String(row[k])}`).join(', ');
          throw new MigrateError(`Copying ${name} failed at the row with ${key}: ${reason(rowErr)}. Nothing was kept.`);
        }
      }
      throw new MigrateError(`Copying ${name} failed: ${reason(err)}. Nothing was kept.`);
    }
  };
  for (const raw of stmt.iterate() as Iterable<unknown[]>) {
    const row: Record<string, unknown> = {};
    keys.forEach((k, i) => {
      const v = raw[i];
      // Each side's own column mapping: SQLite's 0/1 to a boolean, JSON text to a value; PostgreSQL's back to its types.
      row[k] = v === null || v === undefined ? null : sCols[k]!.mapFromDriverValue(v);
    });
    batch.push(row);
    if (batch.length >= perBatch) await flush();
  }
  await flush();
}

/** An identity column continues after the largest key SQLite ever gave (sqlite_sequence: deleted ones included). */
async function moveSequence(sqlite: Database.Database, tx: PgDb, pt: PgTable, name: string): Promise<MigrateReport['sequences'][number] | undefined> {
  const col = (Object.values(getTableColumns(pt)) as PgColumn[]).find((c) => c.generatedIdentity);
  if (!col) return undefined;
  const maxRow = (sqlite.prepare(`select max(${q(col.name)}) as m from ${q(name)}`).get() as { m: number | null }).m ?? 0;
  const hasSeqTable = sqlite.prepare("select 1 from sqlite_master where name = 'sqlite_sequence'").get();
  const given = hasSeqTable ? ((sqlite.prepare('select seq from sqlite_sequence where name = ?').get(name) as { seq: number } | undefined)?.seq ?? 0) : 0;
  const next = Math.max(maxRow, given) + 1;
  await tx.execute(sql`select setval(pg_get_serial_sequence(${q(name)}, ${col.name}), ${next}, false)`);
  return { table: name, column: col.name, next };
}

async function verifyTable(sqlite: Database.Database, tx: PgDb, st: SQLiteTable, pt: PgTable, name: string): Promise<TableCopy> {
  const sc = sqliteConfig(st);
  const pc = pgConfig(pt);
  const sKey = keyColumns(sc.columns, sc.primaryKeys);
  const pKey = keyColumns(pc.columns, pc.primaryKeys);
  // The key as the same text on both sides: timestamps as SQLite holds them (ISO, UTC, milliseconds).
  const sExpr = sKey.map((c) => `cast(${q(c)} as text)`).join(` || '|' || `);
  const pExpr = pKey
    .map((c) => {
      const col = pc.columns.find((x) => x.name === c)!;
      return col.getSQLType().startsWith('timestamp') ? `to_char(${q(c)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` : `${q(c)}::text`;
    })
    .join(` || '|' || `);
  const s = sqlite
    .prepare(`select count(*) as n, coalesce(sum(footfall_key_hash(${sExpr})), 0) as h from ${q(name)}`)
    .safeIntegers(true)
    .get() as { n: bigint; h: bigint };
  const p = (await tx.execute<{ n: string; h: string }>(sql.raw(`select count(*)::text as n, coalesce(sum(('x' || substr(md5(${pExpr}), 1, 7))::bit(28)::int), 0)::text as h from ${q(name)}`))).rows[0]!;
  if (String(s.n) !== p.n) throw new MigrateError(`Check failed for ${name}: ${s.n} rows in SQLite, ${p.n} in PostgreSQL. Nothing was kept.`);
  if (String(s.h) !== p.h) throw new MigrateError(`Check failed for ${name}: the keys differ (checksum ${s.h} in SQLite, ${p.h} in PostgreSQL). Nothing was kept.`);
  return { table: name, rows: Number(s.n), keySum: String(s.h) };
}

/** A file's bytes, or undefined when there is none. */
function readIfThere(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new MigrateError(`Cannot read ${file}: ${(err as Error).message}. Nothing was kept.`);
  }
}

/**
 * The data folder's pictures into PostgreSQL, after the rows: each face photo row's file (its path then emptied: the
 * bytes are a row now) and each camera's latest picture. Checked by counting the rows written.
 */
async function copyPictures(sqlite: Database.Database, tx: PgDb, dataDir: string): Promise<PictureCopy> {
  const out: PictureCopy = { faces: 0, facesMissing: 0, cameras: 0 };
  const faces = sqlite.prepare("select id, path from face_images where path <> ''").all() as { id: string; path: string }[];
  for (const f of faces) {
    const jpeg = readIfThere(path.resolve(dataDir, f.path));
    if (!jpeg) {
      out.facesMissing++;
      continue;
    }
    await tx.execute(sql`insert into face_image_bytes (face_image_id, jpeg) values (${f.id}, ${jpeg})`);
    out.faces++;
  }
  // The photos whose bytes are rows now have no file: one statement for all of them.
  await tx.execute(sql`update face_images set path = '' where id in (select face_image_id from face_image_bytes)`);
  const cameras = sqlite.prepare('select id, company_id as companyId from cameras').all() as { id: string; companyId: string }[];
  for (const c of cameras) {
    const jpeg = readIfThere(snapshotFile(dataDir, c.companyId, c.id));
    if (!jpeg) continue;
    await tx.execute(sql`insert into camera_pictures (camera_id, jpeg) values (${c.id}, ${jpeg})`);
    out.cameras++;
  }
  const count = async (table: string) => Number((await tx.execute<{ n: string }>(sql.raw(`select count(*)::text as n from ${q(table)}`))).rows[0]!.n);
  const [faceRows, cameraRows] = [await count('face_image_bytes'), await count('camera_pictures')];
  if (faceRows !== out.faces || cameraRows !== out.cameras) {
    throw new MigrateError(`Check failed for the pictures: ${out.faces} face photos and ${out.cameras} camera pictures read, ${faceRows} and ${cameraRows} in PostgreSQL. Nothing was kept.`);
  }
  return out;
}
