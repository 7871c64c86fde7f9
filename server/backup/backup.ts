/**
 * Backup and restore of head office's data folder (docs/operations.md): the database as one consistent copy made
 * with SQLite's online backup (head office may keep running and writing), the key file, and the stored customer
 * photos; a manifest with each file's SHA-256. Camera snapshots are left out: shop PCs send new ones every minute.
 *
 * Restore goes only into a data folder without a database (a new one, or the old one moved aside), so a copied
 * database can never meet the old one's write-ahead log, and a running head office (whose folder has a database)
 * is never written under.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';

export const DATABASE = 'footfall.db';
export const KEY_FILE = 'encryption.key';
export const IMAGES = 'images';
const MANIFEST = 'backup.json';

const Manifest = z.object({
  format: z.literal(1),
  created_at: z.string(),
  app_version: z.string(),
  /** The last database migration the copy has. */
  schema: z.string(),
  /** Whether the key file is in the backup (false: the key came from FOOTFALL_ENCRYPTION_KEY, or --without-key). */
  includes_key: z.boolean(),
  files: z.array(z.object({ path: z.string(), bytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
});
export type BackupManifest = z.infer<typeof Manifest>;

/** A backup or restore that cannot go ahead; the message says why and what to do. */
export class BackupError extends Error {}

export interface BackupOptions {
  dataDir: string;
  /** Where to write; must not exist yet, or be empty. */
  target: string;
  /** The key is in FOOTFALL_ENCRYPTION_KEY (nothing to copy). */
  keyFromEnv: boolean;
  /** Leave the key file out (keep it apart from off-site copies). */
  withoutKey?: boolean;
  appVersion: string;
}

export async function createBackup(opts: BackupOptions): Promise<BackupManifest> {
  const source = path.join(opts.dataDir, DATABASE);
  if (!fs.existsSync(source)) throw new BackupError(`There is no database at ${source}: is FOOTFALL_DATA_DIR the head office's data folder?`);
  emptyFolder(opts.target, 'The backup folder');
  fs.mkdirSync(opts.target, { recursive: true, mode: 0o700 });
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    // All pages in one step, inside one read transaction: a snapshot of one instant. In steps, every write head office
    // made in between would restart the copy, and a busy head office could keep it from ever finishing. In WAL mode
    // a reader blocks no writer.
    await db.backup(path.join(opts.target, DATABASE), { progress: () => 0x7fffffff });
  } finally {
    db.close();
  }
  // The copy keeps the original's WAL mode; as one self-contained file it reads and copies without side files
  // (head office turns WAL on again when it opens it).
  const copy = new Database(path.join(opts.target, DATABASE));
  try {
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
  const schema = checkDatabase(path.join(opts.target, DATABASE));
  const keyFile = path.join(opts.dataDir, KEY_FILE);
  const includesKey = !opts.keyFromEnv && !opts.withoutKey && fs.existsSync(keyFile);
  if (includesKey) fs.copyFileSync(keyFile, path.join(opts.target, KEY_FILE));
  const images = path.join(opts.dataDir, IMAGES);
  if (fs.existsSync(images)) fs.cpSync(images, path.join(opts.target, IMAGES), { recursive: true });
  const files = filesUnder(opts.target);
  for (const rel of files) fs.chmodSync(path.join(opts.target, rel), 0o600);
  const manifest: BackupManifest = {
    format: 1,
    created_at: new Date().toISOString(),
    app_version: opts.appVersion,
    schema,
    includes_key: includesKey,
    files: files.map((rel) => fileEntry(opts.target, rel)),
  };
  fs.writeFileSync(path.join(opts.target, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  return manifest;
}

export interface RestoreOptions {
  /** The backup folder. */
  source: string;
  /** The data folder to fill: must have no database. */
  dataDir: string;
}

/** Checks the backup whole (manifest, every file's size and SHA-256, the database's integrity), then copies it in. */
export function restoreBackup(opts: RestoreOptions): BackupManifest {
  const manifest = readManifest(opts.source);
  if (fs.existsSync(path.join(opts.dataDir, DATABASE))) {
    throw new BackupError(
      `${opts.dataDir} already has a database. Stop head office, move that folder aside (it is your way back), then restore into an empty folder.`,
    );
  }
  for (const f of manifest.files) {
    const file = path.join(opts.source, f.path);
    if (!fs.existsSync(file)) throw new BackupError(`The backup is incomplete: ${f.path} is missing.`);
    const got = fileEntry(opts.source, f.path);
    if (got.bytes !== f.bytes || got.sha256 !== f.sha256) throw new BackupError(`The backup is damaged: ${f.path} is not the file that was backed up (size or SHA-256 differs).`);
  }
  const listed = new Set([MANIFEST, ...manifest.files.map((f) => f.path)]);
  const unlisted = filesUnder(opts.source).filter((rel) => !listed.has(rel));
  if (unlisted.length > 0) throw new BackupError(`The backup folder holds files its manifest does not list (${unlisted.slice(0, 3).join(', ')}): it is not as it was made.`);
  checkDatabase(path.join(opts.source, DATABASE));
  if (manifest.includes_key && fs.existsSync(path.join(opts.dataDir, KEY_FILE))) {
    throw new BackupError(`${opts.dataDir} already has a key file; restore into an empty folder.`);
  }
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  for (const f of manifest.files) {
    const to = path.join(opts.dataDir, f.path);
    fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
    fs.copyFileSync(path.join(opts.source, f.path), to, fs.constants.COPYFILE_EXCL);
    fs.chmodSync(to, 0o600);
  }
  return manifest;
}

function readManifest(dir: string): BackupManifest {
  const file = path.join(dir, MANIFEST);
  if (!fs.existsSync(file)) throw new BackupError(`${dir} is not a Footfall backup (no ${MANIFEST}).`);
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    throw new BackupError(`${file} is not valid JSON: the backup is damaged.`);
  }
  const parsed = Manifest.safeParse(raw);
  if (!parsed.success) throw new BackupError(`${file} is not a manifest this version reads (${parsed.error.issues[0]?.path.join('.') ?? ''}: ${parsed.error.issues[0]?.message ?? ''}).`);
  for (const f of parsed.data.files) {
    if (path.isAbsolute(f.path) || f.path.split(/[\\/]/).includes('..')) throw new BackupError(`${file} names a file outside the backup (${f.path}).`);
  }
  if (!parsed.data.files.some((f) => f.path === DATABASE)) throw new BackupError(`${file} lists no database.`);
  return parsed.data;
}

/** Integrity of a database copy, and its last migration. */
function checkDatabase(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const ok = db.pragma('quick_check', { simple: true });
    if (ok !== 'ok') throw new BackupError(`The database copy ${file} fails SQLite's check: ${String(ok)}.`);
    const last = db.prepare('select hash, created_at from __drizzle_migrations order by created_at desc limit 1').get() as { hash: string; created_at: number } | undefined;
    if (!last) throw new BackupError(`${file} is not a head-office database (no migrations).`);
    return `${last.created_at}:${last.hash.slice(0, 12)}`;
  } finally {
    db.close();
  }
}

function emptyFolder(dir: string, what: string): void {
  if (fs.existsSync(dir) && (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0)) {
    throw new BackupError(`${what} ${dir} exists and is not empty: give a new folder.`);
  }
}

/** Files below `dir`, as paths relative to it with forward slashes, sorted. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: false }) as string[])
    .filter((rel) => fs.statSync(path.join(dir, rel)).isFile())
    .map((rel) => rel.split(path.sep).join('/'))
    .sort();
}

/** Size and SHA-256 of a file, read in 1 MiB pieces (a database can be larger than node will read in one go). */
function fileEntry(dir: string, rel: string): { path: string; bytes: number; sha256: string } {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(1 << 20);
  const fd = fs.openSync(path.join(dir, rel), 'r');
  let bytes = 0;
  try {
    for (let n; (n = fs.readSync(fd, chunk, 0, chunk.length, null)) > 0; bytes += n) hash.update(chunk.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return { path: rel, bytes, sha256: hash.digest('hex') };
}
