/**
 * `footfall migrate --to postgres://...` end to end on a real PostgreSQL (test/support/postgres.ts): a head office
 * filled through its real API and broker (test/support/dashboard-seed.ts), copied while it runs and again once
 * stopped; every row of every table compared through both schemas, the sealed secrets opened with the key file,
 * a non-empty target refused, a failed copy leaving nothing behind.
 */
import { execFileSync } from 'node:child_process';
import { runFootfall, type FootfallRun } from './support/command-output.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { asc, getTableColumns, is } from 'drizzle-orm';
import { drizzle as sqliteDrizzle } from 'drizzle-orm/better-sqlite3';
import { getTableConfig as pgConfig, PgTable, type PgColumn } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteConfig, SQLiteTable, type SQLiteColumn } from 'drizzle-orm/sqlite-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../server/config.js';
import { loadKeys } from '../server/crypto/keys.js';
import { connectPostgres, type PgStore } from '../server/db/pg/open.js';
import * as pgSchema from '../server/db/pg/schema.js';
import * as sqliteSchema from '../server/db/schema.js';
import { packageRoot } from '../server/paths.js';
import { seedChain, type Seeded } from './support/dashboard-seed.js';
import { startHarness, type Harness } from './support/harness.js';
import { startPostgres, postgresMissing, type TestPostgres } from './support/postgres.js';
import { addCamera, jpeg, upload } from './support/shop-pc.js';
import { noteSkip } from './support/skips.js';

const FILE = 'test/migrate-postgres.test.ts';
const missing = postgresMissing();
if (missing) noteSkip(FILE, missing);

const root = packageRoot();

function cli(args: string[], dataDir: string): Promise<FootfallRun> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FOOTFALL_')) env[k] = v;
  return runFootfall(args, { ...env, FOOTFALL_DATA_DIR: dataDir });
}

const sqliteTables = Object.values(sqliteSchema as Record<string, unknown>).filter((t): t is SQLiteTable => is(t, SQLiteTable));
const pgByName = new Map(Object.values(pgSchema as Record<string, unknown>).filter((t): t is PgTable => is(t, PgTable)).map((t) => [pgConfig(t).name, t]));

/** Every row of every table as drizzle reads it through each schema, ordered by the primary key. */
async function everyRow(sqliteFile: string, store: PgStore): Promise<{ sqlite: Record<string, unknown[]>; pg: Record<string, unknown[]> }> {
  const file = new Database(sqliteFile, { readonly: true });
  const sdb = sqliteDrizzle(file);
  const out = { sqlite: {} as Record<string, unknown[]>, pg: {} as Record<string, unknown[]> };
  try {
    for (const st of sqliteTables) {
      const name = sqliteConfig(st).name;
      const pt = pgByName.get(name)!;
      const sc = sqliteConfig(st);
      const keyNames = sc.primaryKeys[0] ? sc.primaryKeys[0].columns.map((c) => c.name) : sc.columns.filter((c) => c.primary).map((c) => c.name);
      const sCols = getTableColumns(st) as Record<string, SQLiteColumn>;
      const pCols = getTableColumns(pt) as Record<string, PgColumn>;
      const keyOf = (cols: Record<string, { name: string }>) => keyNames.map((n) => Object.values(cols).find((c) => c.name === n)!);
      out.sqlite[name] = (await sdb.select().from(st).orderBy(...keyOf(sCols).map((c) => asc(c as SQLiteColumn))));
      const rows = await store.db.select().from(pt).orderBy(...keyOf(pCols).map((c) => asc(c as PgColumn)));
      // Text keys in byte order on both sides (SQLite's BINARY collation; the test cluster is initdb'd with locale C).
      out.pg[name] = rows;
    }
  } finally {
    file.close();
  }
  return out;
}

describe.skipIf(missing !== undefined)('footfall migrate --to postgres://... (real PostgreSQL)', () => {
  let pgServer: TestPostgres;
  let h: Harness;
  let seeded: Seeded;
  let dataDir: string;
  const faceIds: string[] = [];
  const stores: PgStore[] = [];
  const connect = (url: string) => {
    const s = connectPostgres(url, { max: 2 });
    stores.push(s);
    return s;
  };

  beforeAll(async () => {
    if (!fs.existsSync(path.join(root, 'dist/cli/migrate.js'))) {
      execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
    }
    pgServer = await startPostgres();
    h = await startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1, FOOTFALL_IMAGES: 'local' }, { keepDataDir: true });
    dataDir = h.dataDir;
    seeded = await seedChain(h, { days: 3 });
    // A camera with a password: a column sealed with the server key.
    const cam = await addCamera(h, seeded.chain.ownerToken, seeded.colaba.slug, { camera_id: 'back', label: 'Back door', username: 'viewer', password: 'camera-secret-1' });
    expect(cam.camera_id ?? cam.id).toBeDefined();
    // Two face photos (files in the data folder); the second's file is then lost, as an operator might lose one.
    for (const shade of [60, 200]) {
      const r = await upload(h, 'POST', '/api/agent/faces', seeded.bandra.enrolment.token, await jpeg(112, 112, shade));
      expect(r.status).toBe(201);
      faceIds.push(r.body.face_image_id as string);
    }
    const lost = new Database(path.join(dataDir, 'footfall.db'), { readonly: true });
    const lostPath = (lost.prepare('select path from face_images where id = ?').get(faceIds[1]) as { path: string }).path;
    lost.close();
    fs.rmSync(path.join(dataDir, lostPath));
  }, 180_000);

  afterAll(async () => {
    await seeded?.stop();
    for (const s of stores) await s.close().catch(() => undefined);
    await h?.close().catch(() => undefined);
    await pgServer?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('copies a running head office into an empty database, checks every table, and says the key goes with it', async () => {
    const url = await pgServer.createDatabase('live_copy');
    const r = await cli(['migrate', '--to', url], dataDir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const { readMigrationFiles } = await import('drizzle-orm/migrator');
    const { pgMigrationsFolder } = await import('../server/db/pg/open.js');
    const migrations = readMigrationFiles({ migrationsFolder: pgMigrationsFolder() }).length;
    // Every table of the PostgreSQL schema is copied.
    const { is } = await import('drizzle-orm');
    const { PgTable } = await import('drizzle-orm/pg-core');
    const pgSchema = await import('../server/db/pg/schema.js');
    // Every table but the picture tables, which the data folder's files fill.
    const tables = Object.values(pgSchema).filter((t) => is(t, PgTable)).length - pgSchema.postgresOnlyTables.length;
    expect(tables).toBeGreaterThanOrEqual(32);
    expect(r.stdout).toMatch(new RegExp(`Done: ${tables} tables, \\d+ rows, committed in one transaction after ${migrations} schema migrations?`));
    expect(r.stdout).toMatch(/^ {2}visits +\d+ rows {2}keys checked/m);
    expect(r.stdout).toContain(path.join(dataDir, 'encryption.key'));
    expect(r.stdout).toContain('cameras.password');
    expect(r.stdout).toContain('Stop head office before the copy you switch to');
    expect(r.stdout).toContain(`Pictures from ${dataDir} are rows now: 1 customer photos`);
    expect(r.stdout).toContain('1 customer photo rows had no file');

    // Tables the running head office does not touch between the snapshot and now have the same rows.
    const live = new Database(path.join(dataDir, 'footfall.db'), { readonly: true });
    const store = connect(url);
    try {
      for (const t of ['companies', 'users', 'shops', 'cameras', 'customers', 'visits', 'sightings', 'purchases']) {
        const n = (live.prepare(`select count(*) as n from ${t}`).get() as { n: number }).n;
        expect(n, t).toBeGreaterThan(0);
        const p = await store.pool.query<{ n: string }>(`select count(*)::text as n from ${t}`);
        expect(Number(p.rows[0]!.n), t).toBe(n);
      }
    } finally {
      live.close();
    }
  });

  it('refuses a database that is not empty, and leaves it as it was', async () => {
    const url = await pgServer.createDatabase('not_empty');
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('create table notes (id int primary key)');
    await c.query('insert into notes values (1)');
    const r = await cli(['migrate', '--to', url], dataDir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is not empty \(it has public\.notes\)\. migrate --to copies into an empty database only/);
    const tables = await c.query(`select table_name from information_schema.tables where table_schema = 'public'`);
    expect(tables.rows.map((x) => x.table_name)).toEqual(['notes']);
    await c.end();
  });

  describe('a stopped head office', () => {
    let url: string;
    let store: PgStore;
    let rows: Awaited<ReturnType<typeof everyRow>>;

    beforeAll(async () => {
      await seeded.stop();
      await h.close();
      url = await pgServer.createDatabase('stopped_copy');
      const r = await cli(['migrate', '--to', url], dataDir);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      store = connect(url);
      rows = await everyRow(path.join(dataDir, 'footfall.db'), store);
    }, 120_000);

    it('has every row of every table, each the same through both schemas (timestamps as the same ISO strings, booleans, JSON, blobs)', () => {
      expect(Object.keys(rows.pg).sort()).toEqual(Object.keys(rows.sqlite).sort());
      let total = 0;
      // A face photo whose file was copied has an empty path: its bytes are a row of face_image_bytes.
      const copied = (r: any) => (r.id === faceIds[0] ? { ...r, path: '' } : r);
      for (const [table, sRows] of Object.entries(rows.sqlite)) {
        expect(rows.pg[table], table).toEqual(table === 'face_images' ? sRows.map(copied) : sRows);
        total += sRows.length;
      }
      expect(total).toBeGreaterThan(100);
      const visit = rows.pg.visits!.find((v: any) => v.customerId) as Record<string, unknown>;
      expect(visit.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(typeof visit.passedGate).toBe('boolean');
      const customer = rows.pg.customers!.find((c: any) => c.template) as { template: Buffer };
      expect(Buffer.isBuffer(customer.template)).toBe(true);
      expect(customer.template.length).toBe(512 * 4);
      expect(typeof (rows.pg.cameras![0] as { tuning: unknown }).tuning).toBe('object');
    });

    it('has the data folder\'s pictures as rows: the face photo that had a file, and every camera\'s picture', async () => {
      const faces = (await store.pool.query<{ id: string; jpeg: Buffer }>('select face_image_id as id, jpeg from face_image_bytes')).rows;
      const kept = rows.sqlite.face_images!.find((f: any) => f.id === faceIds[0]) as { path: string };
      expect(faces).toEqual([{ id: faceIds[0], jpeg: fs.readFileSync(path.join(dataDir, kept.path)) }]);
      const lost = rows.pg.face_images!.find((f: any) => f.id === faceIds[1]) as { path: string };
      expect(lost.path).toMatch(/^images\//);
      const pictures = (await store.pool.query<{ id: string; jpeg: Buffer }>('select c.id, c.company_id as company, p.jpeg from camera_pictures p join cameras c on c.id = p.camera_id')).rows as any[];
      expect(pictures.length).toBe(3);
      for (const p of pictures) expect(p.jpeg.equals(fs.readFileSync(path.join(dataDir, 'snapshots', p.company, `${p.id}.jpg`)))).toBe(true);
    });

    it('keeps the sealed secrets as they were: the key file opens them', () => {
      const keys = loadKeys({ dataDir } as Config);
      const cam = rows.pg.cameras!.find((c: any) => c.cameraId === 'back') as { password: string };
      expect(cam.password).toMatch(/^v1:/);
      expect(keys.decrypt(cam.password)).toBe('camera-secret-1');
    });

    it('numbers new rows after the copied ones (identity sequences moved on)', async () => {
      const max = Number((await store.pool.query<{ m: string }>('select max(seq)::text as m from visits')).rows[0]!.m);
      const next = Number((await store.pool.query<{ n: string }>(`select nextval(pg_get_serial_sequence('visits', 'seq'))::text as n`)).rows[0]!.n);
      expect(max).toBeGreaterThan(0);
      expect(next).toBeGreaterThan(max);
    });

    it('has the tables and columns of server/db/pg/schema.ts, as the checked-in migrations made them', async () => {
      const cols = await store.pool.query<{ t: string; c: string; nullable: string }>(
        `select table_name as t, column_name as c, is_nullable as nullable from information_schema.columns where table_schema = 'public'`,
      );
      const inDb = cols.rows.map((r) => `${r.t}.${r.c}${r.nullable === 'NO' ? ' not null' : ''}`).sort();
      const inSchema = [...pgByName].flatMap(([t, table]) => pgConfig(table).columns.map((c) => `${t}.${c.name}${c.notNull ? ' not null' : ''}`)).sort();
      expect(inDb).toEqual(inSchema);
    });

    it('refuses a database file at an older schema than this version, before touching PostgreSQL', async () => {
      const old = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-migrate-old-'));
      try {
        fs.copyFileSync(path.join(dataDir, 'footfall.db'), path.join(old, 'footfall.db'));
        const db = new Database(path.join(old, 'footfall.db'));
        db.prepare('delete from __drizzle_migrations where created_at = (select max(created_at) from __drizzle_migrations)').run();
        db.close();
        const target = await pgServer.createDatabase('older_schema');
        const r = await cli(['migrate', '--to', target], old);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/is at an older schema than this footfall: start head office of this version on it once/);
        const c = new pg.Client({ connectionString: target });
        await c.connect();
        const left = await c.query(`select schema_name from information_schema.schemata where schema_name = 'drizzle'`);
        await c.end();
        expect(left.rows).toEqual([]);
      } finally {
        fs.rmSync(old, { recursive: true, force: true });
      }
    });

    it('rolls everything back when a row cannot be copied: the database stays empty', async () => {
      const broken = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-migrate-broken-'));
      try {
        fs.copyFileSync(path.join(dataDir, 'footfall.db'), path.join(broken, 'footfall.db'));
        const db = new Database(path.join(broken, 'footfall.db'));
        const victim = db.prepare('select id from customers order by id desc limit 1').get() as { id: string };
        db.prepare(`update customers set last_seen_at = 'yesterday-ish' where id = ?`).run(victim.id);
        db.close();
        const target = await pgServer.createDatabase('rolled_back');
        const r = await cli(['migrate', '--to', target], broken);
        expect(r.code).toBe(1);
        expect(r.stderr).toBe(`Copying customers failed at the row with id ${victim.id}: invalid input syntax for type timestamp with time zone: "yesterday-ish". Nothing was kept.\n`);
        const c = new pg.Client({ connectionString: target });
        await c.connect();
        const left = await c.query(`select table_schema, table_name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')`);
        await c.end();
        expect(left.rows).toEqual([]);
      } finally {
        fs.rmSync(broken, { recursive: true, force: true });
      }
    });
  });
});
