/**
 * Head office as its own OS process, as a user runs it: `node dist/cli/main.js server` (a checkout's `footfall
 * server`) with its FOOTFALL_* settings in the environment and its JSON log appended to a file. It is ready when
 * GET /healthz answers 200 (its database and its broker both up). `kill('SIGKILL')` ends it as a crash does (no
 * shutdown: its broker sessions and database connections are dropped by the kernel); `start()` runs it again with the
 * same settings: the same HTTP port and the same FOOTFALL_MQTT_CLIENT_ID, so the broker resumes its ingest session.
 *
 * Several processes of one head office (docs/scale-out.md) share the settings `sharedSettings` makes and differ in
 * two: FOOTFALL_MQTT_CLIENT_ID (each process's broker sessions; its persistent ingest session is `<id>-ingest`, and two
 * processes under one id would take over each other's session) and FOOTFALL_HTTP_PORT (here: one host).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { exited } from '../../bench/proc.js';
import { packageRoot } from '../../server/paths.js';
import { threadsFromDist } from './built-threads.js';
import { closedPort } from './ports.js';

export interface SharedHeadOffice {
  /** The one PostgreSQL database of every process (the embedded SQLite file is one process's alone). */
  databaseUrl: string;
  /** The external Mosquitto 2 (dynamic-security plugin) and head office's own login on it, the same for every process. */
  broker: { url: string; username: string; password: string };
  /**
   * One data folder for every process (on several hosts: one shared file system). Customer photos, camera snapshots
   * and the embedded identity provider's signing keys (idp-keys.json) are files there that any process may have to
   * read; the key file too, unless FOOTFALL_ENCRYPTION_KEY is set.
   */
  dataDir: string;
  /** The server key (base64 of 32 bytes): secrets sealed by one process are opened by the others. */
  encryptionKey: string;
  admin: { email: string; password: string };
  /** Bearer token of GET /metrics (each process's own counters). */
  metricsToken: string;
  /** Any other setting, the same for every process. */
  extra?: Record<string, string>;
}

/** The environment every process of one head office has in common. */
export function sharedSettings(s: SharedHeadOffice): Record<string, string> {
  return {
    FOOTFALL_DATABASE_URL: s.databaseUrl,
    FOOTFALL_MQTT_URL: s.broker.url,
    FOOTFALL_MQTT_USERNAME: s.broker.username,
    FOOTFALL_MQTT_PASSWORD: s.broker.password,
    FOOTFALL_DATA_DIR: s.dataDir,
    FOOTFALL_ENCRYPTION_KEY: s.encryptionKey,
    FOOTFALL_ADMIN_EMAIL: s.admin.email,
    FOOTFALL_ADMIN_PASSWORD: s.admin.password,
    FOOTFALL_METRICS_TOKEN: s.metricsToken,
    FOOTFALL_HTTP_HOST: '127.0.0.1',
    ...s.extra,
  };
}

export interface HeadOfficeProcess {
  readonly name: string;
  /** http://127.0.0.1:<its port>, the same across restarts. */
  readonly url: string;
  /** The whole environment it runs with (besides the inherited one). */
  readonly settings: Readonly<Record<string, string>>;
  readonly logFile: string;
  /** The running process's id (undefined when it is not running). */
  readonly pid: number | undefined;
  readonly running: boolean;
  /** Starts it (again) with the same settings; resolves once /healthz answers 200. */
  start(): Promise<void>;
  /** Sends the signal and resolves when the process has ended. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM (head office's own shutdown), SIGKILL after 15 s; resolves when it has ended. */
  stop(): Promise<void>;
  /** Its GET /metrics text. */
  metrics(): Promise<string>;
  /** The end of its log, for a failure's message. */
  logTail(lines?: number): string;
}

const READY_MS = 60_000;

/** GET /healthz answers 200 (a refused connection or a 503 is not yet). */
async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * A head office process named `name` (its log: `<logDir>/<name>.log`) with the shared settings and its own client
 * id; its HTTP port is picked now (free at that moment) and kept for every start. Not started yet.
 */
export async function headOfficeProcess(name: string, shared: Record<string, string>, opts: { clientId: string; logDir: string }): Promise<HeadOfficeProcess> {
  const root = packageRoot();
  const cli = path.join(root, 'dist/cli/main.js');
  const port = await closedPort();
  const url = `http://127.0.0.1:${port}`;
  const settings: Record<string, string> = { ...shared, FOOTFALL_MQTT_CLIENT_ID: opts.clientId, FOOTFALL_HTTP_PORT: String(port) };
  const logFile = path.join(opts.logDir, `${name}.log`);
  fs.mkdirSync(opts.logDir, { recursive: true });
  let child: ChildProcess | undefined;
  let exit: Promise<void> = Promise.resolve();
  let starts = 0;
  const alive = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  // A test process that ends without stopping it must not leave it running.
  const onExit = () => void (alive() && child!.kill('SIGKILL'));
  // Log lines can be long (a failed query's parameters): each is cut to its first 400 characters.
  const logTail = (lines = 30) =>
    fs.existsSync(logFile)
      ? fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).map((l) => (l.length > 400 ? `${l.slice(0, 400)}…` : l)).join('\n')
      : '(no log)';

  return {
    name,
    url,
    settings,
    logFile,
    get pid() {
      return alive() ? child!.pid : undefined;
    },
    get running() {
      return alive();
    },
    async start() {
      if (alive()) throw new Error(`${name} is already running`);
      if (!fs.existsSync(cli) || !threadsFromDist(root)) throw new Error(`${cli} is missing or older than the sources: run \`npm run build:emit\` first`);
      fs.appendFileSync(logFile, `--- ${name}: start ${++starts} at ${new Date().toISOString()} ---\n`);
      const out = fs.openSync(logFile, 'a');
      // Its own settings over the inherited environment (under vitest that includes the suite's cheap password hashing).
      child = spawn(process.execPath, [cli, 'server'], { cwd: root, env: { ...process.env, ...settings }, stdio: ['ignore', out, out] });
      fs.closeSync(out);
      exit = exited(child);
      process.removeListener('exit', onExit);
      process.once('exit', onExit);
      const started = child;
      const deadline = performance.now() + READY_MS;
      for (;;) {
        if (started.exitCode !== null || started.signalCode !== null) throw new Error(`${name} ended (${started.exitCode ?? started.signalCode}) before it was ready:\n${logTail()}`);
        if (await healthy(url)) return;
        if (performance.now() > deadline) throw new Error(`${name}: /healthz did not answer 200 within ${READY_MS / 1000} s:\n${logTail()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (alive()) child!.kill(signal);
      await exit;
      process.removeListener('exit', onExit);
    },
    async stop() {
      if (alive()) {
        child!.kill('SIGTERM');
        const timer = setTimeout(() => alive() && child!.kill('SIGKILL'), 15_000);
        await exit;
        clearTimeout(timer);
      }
      process.removeListener('exit', onExit);
    },
    async metrics() {
      const res = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${settings.FOOTFALL_METRICS_TOKEN ?? ''}` } });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${name}: GET /metrics answered ${res.status}: ${text}`);
      return text;
    },
    logTail,
  };
}

/** A sample of a Prometheus text exposition: `name{labels} value` (labels exactly as written, e.g. `{outcome="stored"}`); 0 when absent. */
export function metric(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}
