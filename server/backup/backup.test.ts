import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/open.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { addCamera, enrol, openShop } from '../../test/support/shop-pc.js';
import { appVersion, packageRoot } from '../paths.js';
import { BackupError, createBackup, restoreBackup } from './backup.js';
import { sqliteOnly } from '../../test/support/stores.js';

const execFileP = promisify(execFile);

function tempDir(name: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `footfall-${name}-`));
}

describe.skipIf(sqliteOnly('server/backup/backup.test.ts', 'footfall backup copies the SQLite file; PostgreSQL is backed up with pg_dump'))('backup and restore of head office', () => {
  let h: Harness;
  let a: Company;
  let agentToken: string;
  let site: string;
  const dirs: string[] = [];
  const fresh = (name: string): string => {
    const d = tempDir(name);
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    h = await startHarness();
    a = await h.company('Backup Alpha');
    const shop = await openShop(h, a.ownerToken, { name: 'Andheri' });
    site = shop.slug;
    await addCamera(h, a.ownerToken, site, { camera_id: 'entrance', username: 'admin', password: 'cam-secret-1' });
    agentToken = (await enrol(h, a.ownerToken, site)).token;
    // A stored customer photo, as FOOTFALL_IMAGES=local keeps them.
    fs.mkdirSync(path.join(h.dataDir, 'images', a.id), { recursive: true });
    fs.writeFileSync(path.join(h.dataDir, 'images', a.id, 'face-1.jpg'), Buffer.from('not really a jpeg'));
  });
  afterAll(async () => {
    await h?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('copies a running head office (its latest writes are still in the write-ahead log) and restores it whole', async () => {
    expect(fs.statSync(path.join(h.dataDir, 'footfall.db-wal')).size).toBeGreaterThan(0);
    const target = path.join(fresh('bk'), 'copy');
    const m = await createBackup({ dataDir: h.dataDir, target, keyFromEnv: false, appVersion: appVersion() });
    expect(m.includes_key).toBe(true);
    expect(m.app_version).toBe(appVersion());
    expect(m.files.map((f) => f.path)).toEqual(['encryption.key', 'footfall.db', `images/${a.id}/face-1.jpg`]);
    expect(fs.statSync(target).mode & 0o777).toBe(0o700);
    for (const f of [...m.files.map((x) => x.path), 'backup.json']) expect(fs.statSync(path.join(target, f)).mode & 0o777).toBe(0o600);
    // One self-contained file: no side files of the live database's log.
    expect(fs.readdirSync(target).sort()).toEqual(['backup.json', 'encryption.key', 'footfall.db', 'images']);

    const dataDir = path.join(fresh('restored'), 'data');
    restoreBackup({ source: target, dataDir });
    const h2 = await startHarness({}, { dataDir, keepDataDir: false });
    try {
      // The owner signs in with the same password; the shop, the shop PC's token and the camera password all work
      // (the password is sealed with the key: it opens only if the key came back with the database).
      const owner = await h2.login(a.ownerEmail, a.ownerPassword);
      const list = await h2.request('GET', '/api/sites', { token: owner.access_token });
      expect(list.status).toBe(200);
      expect(JSON.stringify(list.body)).toContain(site);
      const cams = await h2.request('GET', '/api/agent/cameras', { token: agentToken });
      expect(cams.status).toBe(200);
      expect(JSON.stringify(cams.body)).toContain('cam-secret-1');
      expect(fs.readFileSync(path.join(dataDir, 'images', a.id, 'face-1.jpg'), 'utf8')).toBe('not really a jpeg');
    } finally {
      await h2.close();
    }
  });

  it('finishes while another process writes to the database all the time, with a snapshot of one instant', async () => {
    const dataDir = fresh('busy');
    const db = path.join(dataDir, 'footfall.db');
    const stopFile = path.join(dataDir, 'stop');
    // The table exists before the writer starts, and the backup starts once the writer says it has committed its
    // first transaction: on a loaded machine a child node can take seconds to start, and a backup made before its
    // first write would have nothing to count.
    const made = openDatabase(db);
    made.sqlite.exec('create table busy (n integer not null, pad text not null)');
    made.close();
    const writer = `
      const fs = require('node:fs');
      const Database = require(${JSON.stringify(path.join(packageRoot(), 'node_modules/better-sqlite3'))});
      const db = new Database(${JSON.stringify(db)});
      db.pragma('journal_mode = WAL');
      const put = db.prepare('insert into busy (n, pad) values (?, ?)');
      let n = 0;
      const batch = () => db.transaction(() => { for (let i = 0; i < 50; i++) put.run(++n, 'x'.repeat(500)); })();
      batch();
      process.stderr.write('writing\\n');
      // Until the test has its backup (the stop file), then one batch more: the copy must come from between commits.
      const until = Date.now() + 60000;
      while (!fs.existsSync(${JSON.stringify(stopFile)}) && Date.now() < until) batch();
      batch();
      process.stdout.write(String(n));`;
    const child = execFileP(process.execPath, ['-e', writer]);
    await new Promise<void>((resolve, reject) => {
      child.child.stderr!.on('data', (d: Buffer) => { if (d.toString().includes('writing')) resolve(); });
      child.child.on('exit', () => reject(new Error('the writer ended before its first commit')));
    });
    const target = path.join(fresh('bk-busy'), 'copy');
    await createBackup({ dataDir, target, keyFromEnv: true, appVersion: '1' });
    fs.writeFileSync(stopFile, '');
    const written = Number((await child).stdout.trim());
    const copy = new Database(path.join(target, 'footfall.db'), { readonly: true });
    try {
      const { rows, top } = copy.prepare('select count(*) as rows, max(n) as top from busy').get() as { rows: number; top: number };
      // Whole transactions only, numbered without a gap: the database as it was between two of the writer's commits.
      expect(rows).toBeGreaterThan(0);
      expect(rows % 50).toBe(0);
      expect(top).toBe(rows);
      expect(rows).toBeLessThan(written);
    } finally {
      copy.close();
    }
  });

  it('refuses to overwrite: a backup folder that is not empty, a data folder that has a database', async () => {
    const used = fresh('used');
    fs.writeFileSync(path.join(used, 'something'), 'x');
    await expect(createBackup({ dataDir: h.dataDir, target: used, keyFromEnv: false, appVersion: '1' })).rejects.toThrow(/not empty/);
    const target = path.join(fresh('bk2'), 'copy');
    await createBackup({ dataDir: h.dataDir, target, keyFromEnv: false, appVersion: '1' });
    expect(() => restoreBackup({ source: target, dataDir: h.dataDir })).toThrow(BackupError);
    expect(() => restoreBackup({ source: target, dataDir: h.dataDir })).toThrow(/already has a database\. Stop head office, move that folder aside/);
    await expect(createBackup({ dataDir: fresh('nothing'), target: path.join(fresh('bk3'), 'c'), keyFromEnv: false, appVersion: '1' })).rejects.toThrow(/no database/);
  });

  it('refuses a damaged or altered backup before copying anything', async () => {
    const make = async (): Promise<string> => {
      const t = path.join(fresh('bk4'), 'copy');
      await createBackup({ dataDir: h.dataDir, target: t, keyFromEnv: false, appVersion: '1' });
      return t;
    };
    const cases: [string, (t: string) => void, RegExp][] = [
      ['a changed photo', (t) => fs.appendFileSync(path.join(t, 'images', a.id, 'face-1.jpg'), '!'), /damaged: images\/.*face-1\.jpg/],
      ['a missing key file', (t) => fs.rmSync(path.join(t, 'encryption.key')), /incomplete: encryption\.key is missing/],
      ['an added file', (t) => fs.writeFileSync(path.join(t, 'extra.txt'), 'x'), /does not list \(extra\.txt\)/],
      ['no manifest', (t) => fs.rmSync(path.join(t, 'backup.json')), /not a Footfall backup/],
      [
        'a manifest pointing outside',
        (t) => {
          const m = JSON.parse(fs.readFileSync(path.join(t, 'backup.json'), 'utf8'));
          m.files.push({ path: '../../etc/passwd', bytes: 1, sha256: '0'.repeat(64) });
          fs.writeFileSync(path.join(t, 'backup.json'), JSON.stringify(m));
        },
        /outside the backup/,
      ],
    ];
    for (const [, spoil, message] of cases) {
      const t = await make();
      spoil(t);
      const dataDir = path.join(fresh('r'), 'data');
      expect(() => restoreBackup({ source: t, dataDir })).toThrow(message);
      expect(fs.existsSync(dataDir)).toBe(false);
    }
  });

  it('leaves the key out when asked, or when it comes from FOOTFALL_ENCRYPTION_KEY', async () => {
    for (const opts of [{ withoutKey: true, keyFromEnv: false }, { withoutKey: false, keyFromEnv: true }]) {
      const t = path.join(fresh('bk5'), 'copy');
      const m = await createBackup({ dataDir: h.dataDir, target: t, appVersion: '1', ...opts });
      expect(m.includes_key).toBe(false);
      expect(fs.existsSync(path.join(t, 'encryption.key'))).toBe(false);
    }
  });

  it('footfall backup and footfall restore, as an operator runs them', async () => {
    const cli = path.join(packageRoot(), 'dist/cli/main.js');
    const target = path.join(fresh('cli'), 'copy');
    const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'FOOTFALL_ENCRYPTION_KEY')), FOOTFALL_DATA_DIR: h.dataDir };
    const made = await execFileP(process.execPath, [cli, 'backup', target], { env });
    expect(made.stdout).toMatch(/^Backup written to .*copy: 3 files, .* MB, checked\.\nIt holds the key file/);
    const again = await execFileP(process.execPath, [cli, 'backup', target], { env }).catch((e: { code: number; stderr: string }) => e);
    expect(again).toMatchObject({ code: 1, stderr: expect.stringMatching(/exists and is not empty/) });
    const dataDir = path.join(fresh('cli-r'), 'data');
    const restored = await execFileP(process.execPath, [cli, 'restore', target], { env: { ...env, FOOTFALL_DATA_DIR: dataDir } });
    expect(restored.stdout).toMatch(/^Restored the backup of .* into .*data \(3 files, all checked\)\. Start head office\.\n$/);
    const refused = await execFileP(process.execPath, [cli, 'restore', target], { env: { ...env, FOOTFALL_DATA_DIR: dataDir } }).catch((e: { code: number; stderr: string }) => e);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/already has a database/) });
  });
});
