/**
 * A real, throwaway PostgreSQL (15 or later) for tests of the PostgreSQL store: `initdb` into a temporary folder,
 * then `postgres` on a free 127.0.0.1 port with its unix socket in that folder, trust authentication for one
 * superuser (`footfall`), fsync off. Stopped (fast shutdown) and removed by close().
 *
 * Found on PATH only, so scripts/bare-path.sh can hide it: `initdb` and `postgres` themselves, or, as Debian installs
 * them (in /usr/lib/postgresql/<version>/bin, off PATH), through postgresql-common's `pg_config --bindir`.
 * PostgreSQL refuses to run as root (a CI container): then initdb and postgres run as the `postgres` system user
 * (Debian's package makes it) or else `nobody`, in a folder handed to that user.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { onPath } from '../../agent/capture/ffmpeg-bin.js'; // PATH only: scripts/bare-path.sh hides tools that way
import { closedPort } from './ports.js';

const MIN_VERSION = 15;


interface Binaries {
  initdb: string;
  postgres: string;
  version: number;
}

let found: Binaries | string | undefined;

/** The server binaries, or why there are none. */
function binaries(): Binaries | string {
  if (found !== undefined) return found;
  const inDir = (dir: string) => ({ initdb: path.join(dir, 'initdb'), postgres: path.join(dir, 'postgres') });
  let bins: { initdb: string; postgres: string } | undefined;
  const initdb = onPath('initdb');
  const postgres = onPath('postgres');
  if (initdb && postgres) bins = { initdb, postgres };
  else {
    const pgConfig = onPath('pg_config');
    if (pgConfig) {
      try {
        const dir = execFileSync(pgConfig, ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
        if (fs.existsSync(inDir(dir).initdb) && fs.existsSync(inDir(dir).postgres)) bins = inDir(dir);
      } catch {
        // a pg_config that does not answer: as if none
      }
    }
  }
  if (!bins) return (found = 'no PostgreSQL server (apt-get install postgresql: initdb and postgres on PATH, or pg_config --bindir naming them)');
  let version = 0;
  try {
    const out = execFileSync(bins.postgres, ['--version'], { encoding: 'utf8' });
    version = Number(/(\d+)(?:\.\d+)?/.exec(out.replace(/^[^)]*\)/, ''))?.[1] ?? 0);
  } catch (err) {
    return (found = `${bins.postgres} --version failed: ${(err as Error).message}`);
  }
  if (version < MIN_VERSION) return (found = `PostgreSQL ${version} is too old: ${MIN_VERSION} or later is needed (apt-get install postgresql)`);
  return (found = { ...bins, version });
}

/** Why the PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresMissing(): string | undefined {
  const b = binaries();
  return typeof b === 'string' ? b : undefined;
}

/** uid and gid of a user in /etc/passwd. */
function account(name: string): { uid: number; gid: number } | undefined {
  for (const line of fs.readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid && gid) return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

export interface TestPostgres {
  port: number;
  version: number;
  /** The superuser's connection URL for a database of this cluster (default: `postgres`). */
  url(database?: string): string;
  /** Creates an empty database and gives its URL. */
  createDatabase(name?: string): Promise<string>;
  /** What the server wrote to its log (stderr) so far. */
  log(): string;
  /** Stops the server (fast shutdown, then SIGKILL) and removes its folder. */
  close(): Promise<void>;
}

const USER = 'footfall';
let databases = 0;

export async function startPostgres(opts: { maxConnections?: number; /** More server settings (`-c name=value`). */ settings?: Record<string, string> } = {}): Promise<TestPostgres> {
  const b = binaries();
  if (typeof b === 'string') throw new Error(b);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-postgres-'));
  const data = path.join(dir, 'data');
  // As root, run as another user: PostgreSQL will not run as root.
  const runAs = process.getuid?.() === 0 ? (account('postgres') ?? account('nobody')) : undefined;
  if (process.getuid?.() === 0 && !runAs) throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
  if (runAs) fs.chownSync(dir, runAs.uid, runAs.gid);
  const as = runAs ? { uid: runAs.uid, gid: runAs.gid } : {};
  const env = { ...process.env, HOME: dir, LC_ALL: 'C', LANG: 'C' };
  try {
    execFileSync(b.initdb, ['-D', data, '-U', USER, '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'], {
      ...as,
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`initdb failed: ${e.stderr?.toString() || e.message}`);
  }
  const port = await closedPort();
  const args = ['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', `max_connections=${opts.maxConnections ?? 40}`];
  for (const [k, v] of Object.entries(opts.settings ?? {})) args.push('-c', `${k}=${v}`);
  let output = '';
  const child: ChildProcess = spawn(b.postgres, args, { ...as, cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // A test process that dies without close() must not leave a server behind.
  const onExit = () => child.kill('SIGQUIT');
  process.once('exit', onExit);
  const url = (database = 'postgres') => `postgres://${USER}@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    process.removeListener('exit', onExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGINT'); // fast shutdown: disconnects clients, rolls back their transactions
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited (${child.exitCode}): ${output}`);
      const c = new pg.Client({ connectionString: url() });
      const ok = await c.connect().then(
        () => true,
        () => false,
      );
      await c.end().catch(() => undefined);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections on ${port} within 30 s: ${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port,
    version: b.version,
    url,
    async createDatabase(name = `footfall_test_${process.pid}_${++databases}`) {
      return await createDatabaseAt(url(), name);
    },
    log: () => output,
    async close() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates an empty database on the cluster of `adminUrl` (a superuser's URL) and gives its URL. */
export async function createDatabaseAt(adminUrl: string, name = `footfall_test_${process.pid}_${++databases}`): Promise<string> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`create database "${name.replace(/"/g, '""')}"`);
  } finally {
    await c.end();
  }
  const u = new URL(adminUrl);
  u.pathname = '/' + name;
  return u.toString();
}
