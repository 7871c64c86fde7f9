/**
 * `footfall status`: what an installer standing at the shop PC wants to know at a glance. Enrolled or not, the shop,
 * head office (answers /healthz?) and its broker port, the visit queue, the face models, ffmpeg and the service.
 *
 * Read-only, and it never disturbs a running agent: the queue file is not opened (the agent keeps it locked and a
 * second opener would be refused, or make a starting agent fail); a private copy of it is read instead. Secrets
 * (the token, the broker password) are never printed.
 *
 * Exit status 0 when the PC is enrolled and head office answers, 1 otherwise (docs/agent.md).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { copyFile, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { AgentConfigError, DEFAULT_AGENT_CONFIG_PATH, brokerHost, defaultModelsDir, loadAgentConfig, queueFile, type AgentConfig } from '../agent/config/config.js';
import { ffmpegCommand, type FfmpegSource } from '../agent/capture/ffmpeg-bin.js';

/** How long head office and the broker get to answer. */
export const STATUS_TIMEOUT_MS = 3000;

export interface StatusReport {
  config: string;
  enrolled: boolean;
  /** Why not (no file, unreadable, invalid) and what to do. */
  enrol_hint?: string;
  shop?: { name: string; slug: string };
  company?: { name: string; slug: string };
  enrolled_at?: string;
  head_office?: { url: string; answers: boolean; detail: string };
  broker?: { host: string; port: number; reachable: boolean; detail: string };
  queue?: QueueStatus;
  models?: { dir: string; present: boolean; verified: boolean; set?: string; detail: string };
  /** The person detector's model (door counting), from bodies.json in the same folder. Additive. */
  body_models?: StatusReport['models'];
  ffmpeg?: { path: string; source: string; found: boolean; version?: string; detail?: string };
  service?: { checked: boolean; state?: string; detail?: string };
}

export interface QueueStatus {
  file: string;
  exists: boolean;
  /** Bytes of the file and its write-ahead log. */
  bytes?: number;
  queued?: number;
  dropped?: number;
  /** A running agent holds the file (Linux: a lock on it in /proc/locks). */
  in_use?: boolean;
  detail?: string;
}

function errText(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e.cause?.code ?? e.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host name not found';
  if (code === 'EHOSTUNREACH') return 'no route to host';
  if (code === 'ENETUNREACH') return 'network unreachable';
  if (e.name === 'TimeoutError' || code === 'ETIMEDOUT') return `no answer within ${STATUS_TIMEOUT_MS / 1000} s`;
  return e.cause?.message ?? e.message;
}

export async function checkHeadOffice(serverUrl: string, timeoutMs = STATUS_TIMEOUT_MS): Promise<{ answers: boolean; detail: string }> {
  try {
    const res = await fetch(new URL('/healthz', serverUrl), { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json().catch(() => undefined)) as { status?: string; database?: string; broker?: string } | undefined;
    if (res.ok && body?.status === 'ok') return { answers: true, detail: 'answers (/healthz ok)' };
    if (body?.status) return { answers: false, detail: `answers but is not well (HTTP ${res.status}: database ${body.database ?? '?'}, broker ${body.broker ?? '?'})` };
    return { answers: false, detail: `HTTP ${res.status} from /healthz: not a Footfall head office?` };
  } catch (err) {
    return { answers: false, detail: errText(err) };
  }
}

export function checkTcp(host: string, port: number, timeoutMs = STATUS_TIMEOUT_MS): Promise<{ reachable: boolean; detail: string }> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (result: { reachable: boolean; detail: string }) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done({ reachable: false, detail: `no answer within ${timeoutMs / 1000} s` }));
    socket.once('connect', () => done({ reachable: true, detail: 'accepts connections' }));
    socket.once('error', (err) => done({ reachable: false, detail: errText(err) }));
  });
}

/** Is any process holding a lock on this file? Linux only (/proc/locks); undefined elsewhere. */
export function fileLocked(file: string): boolean | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const st = statSync(file);
    const major = Math.floor(Number(st.dev) / 256) & 0xfff;
    const minor = (Number(st.dev) & 0xff) | ((Number(st.dev) >> 12) & 0xfff00);
    const dev = `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${st.ino}`;
    return readFileSync('/proc/locks', 'utf8')
      .split('\n')
      .some((line) => line.split(/\s+/).some((field) => field.toLowerCase() === dev));
  } catch {
    return undefined;
  }
}

/**
 * The queue's counts, read from a private copy of the file and its write-ahead log (the log first: SQLite ignores
 * the log's frames it cannot validate). The agent's own file is only read, never opened with SQLite, so no lock is
 * taken on it.
 */
export async function readQueue(config: AgentConfig): Promise<QueueStatus> {
  const file = queueFile(config);
  let bytes = 0;
  try {
    bytes = (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { file, exists: false, detail: 'no queue file yet (the agent has not run)' };
    return { file, exists: true, detail: `cannot read it: ${errText(err)}` };
  }
  const wal = `${file}-wal`;
  try {
    bytes += (await stat(wal)).size;
  } catch {
    // no write-ahead log: the agent closed the file cleanly
  }
  const inUse = fileLocked(file);
  const base = { file, exists: true, bytes, ...(inUse !== undefined ? { in_use: inUse } : {}) };
  const dir = mkdtempSync(path.join(tmpdir(), 'footfall-status-'));
  try {
    const copy = path.join(dir, 'queue.sqlite');
    if (existsSync(wal)) await copyFile(wal, `${copy}-wal`);
    await copyFile(file, copy);
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(copy, { readonly: true, fileMustExist: true, timeout: 0 });
    try {
      const queued = (db.prepare('SELECT COUNT(*) AS n FROM items').get() as { n: number }).n;
      const row = (db.prepare('SELECT value FROM counters WHERE name = ?').get(`dropped:${config.site.id}`) ??
        db.prepare("SELECT value FROM counters WHERE name = 'dropped'").get()) as { value: number } | undefined;
      return { ...base, queued, dropped: row?.value ?? 0 };
    } finally {
      db.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied (run as the footfall user or root)' : (err as Error).message;
    return { ...base, detail: `counts not readable: ${why}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type ModelsCheck = NonNullable<StatusReport['models']>;

/** Every file a manifest lists, hashed: the first that is missing or differs makes the folder NOT VERIFIED. */
async function verifyFiles(dir: string, set: string, files: readonly { file: string; sha256: string; bytes: number }[], manifestName: string, verified: string): Promise<ModelsCheck> {
  const { sha256OfFile } = await import('../agent/models/npm-tarball.js');
  for (const f of files) {
    try {
      const { sha256, bytes } = await sha256OfFile(path.join(dir, f.file));
      if (sha256 !== f.sha256 || bytes !== f.bytes) return { dir, present: true, verified: false, set, detail: `${f.file} does not match ${manifestName}: footfall models fetch --dir ${dir}` };
    } catch (err) {
      return { dir, present: true, verified: false, set, detail: `${f.file}: ${errText(err)}: footfall models fetch --dir ${dir}` };
    }
  }
  return { dir, present: true, verified: true, set, detail: verified };
}

export async function checkModels(dir: string): Promise<ModelsCheck> {
  const { loadManifest } = await import('../agent/models/fetch.js');
  let manifest;
  try {
    manifest = await loadManifest(dir);
  } catch {
    return { dir, present: false, verified: false, detail: `install them: footfall models fetch --dir ${dir}` };
  }
  return verifyFiles(dir, manifest.set, manifest.models, 'the manifest', `${manifest.set}, ${manifest.models.length} files, all match the manifest`);
}

/** The person detector's models (bodies.json): present, and every file matching its sha256. */
export async function checkBodyModels(dir: string): Promise<ModelsCheck> {
  const { loadBodyManifest } = await import('../agent/models/fetch-bodies.js');
  let manifest;
  try {
    manifest = await loadBodyManifest(dir);
  } catch {
    return { dir, present: false, verified: false, detail: `needed only by cameras with a counting line: footfall models fetch --dir ${dir}` };
  }
  const files = manifest.models.flatMap((m) => [m.graph, m.weights]);
  return verifyFiles(dir, manifest.set, files, 'bodies.json', `${manifest.default} (default) of ${manifest.set}, ${files.length} files, all match bodies.json`);
}

function run(cmd: string, args: string[]): Promise<{ code: number | string; stdout: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: STATUS_TIMEOUT_MS }, (err, stdout) => {
      const code = err ? ((err as NodeJS.ErrnoException).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' || typeof code === 'string' ? code : 1, stdout: String(stdout) });
    });
  });
}

/** Where the ffmpeg in use came from, in words (`footfall status`). */
const FFMPEG_SOURCE: Record<FfmpegSource, string> = {
  FOOTFALL_FFMPEG: 'FOOTFALL_FFMPEG',
  path: 'the system',
  npm: 'the npm package',
  config: 'ffmpeg_path',
};

/**
 * The ffmpeg the agent runs (`configured`: its ffmpeg_path; the default `ffmpeg` is FOOTFALL_FFMPEG, else the one on
 * PATH, else the npm package's) and its version. A git snapshot (the npm build's `N-47683-g0e8eb07980-static`) is
 * shown with its release line, read from libavformat's version: `4.x (N-47683-...)`.
 */
export async function checkFfmpeg(configured: string): Promise<NonNullable<StatusReport['ffmpeg']>> {
  const { path: ffmpegPath, source } = ffmpegCommand(configured);
  const from = FFMPEG_SOURCE[source];
  const r = await run(ffmpegPath, ['-hide_banner', '-version']);
  if (r.code === 'ENOENT') return { path: ffmpegPath, source: from, found: false, detail: 'not found: apt-get install ffmpeg (or npm ci, whose optional @ffmpeg-installer package ships one), or set ffmpeg_path' };
  const m = r.stdout.match(/ffmpeg version (\S+)/);
  if (r.code !== 0 || !m) return { path: ffmpegPath, source: from, found: false, detail: `does not run as ffmpeg (${r.code})` };
  let version = m[1]!;
  if (!/^n?\d/.test(version)) {
    const lavf = /^libavformat\s+(\d+)\./m.exec(r.stdout);
    if (lavf) version = `${Number(lavf[1]) - 54}.x (${version})`;
  }
  return { path: ffmpegPath, source: from, found: true, version };
}

/** `systemctl is-active footfall-agent`, when systemd runs this machine (sd_booted: /run/systemd/system). */
export async function checkService(): Promise<NonNullable<StatusReport['service']>> {
  if (process.platform !== 'linux' || !existsSync('/run/systemd/system')) return { checked: false, detail: 'no systemd here' };
  const r = await run('systemctl', ['is-active', 'footfall-agent']);
  if (r.code === 'ENOENT') return { checked: false, detail: 'no systemctl here' };
  return { checked: true, state: r.stdout.trim() || 'unknown' };
}

export async function agentStatus(options: { config: string; models?: string }): Promise<StatusReport> {
  const report: StatusReport = { config: options.config, enrolled: false };
  let config: AgentConfig | undefined;
  try {
    config = await loadAgentConfig(options.config);
  } catch (err) {
    report.enrol_hint = err instanceof AgentConfigError ? err.message : (err as Error).message;
  }
  const ffmpegPath = config?.ffmpeg_path ?? 'ffmpeg';
  const service = checkService();
  const ffmpeg = checkFfmpeg(ffmpegPath);
  if (config) {
    report.enrolled = true;
    report.shop = { name: config.site.name, slug: config.site.slug };
    report.company = { name: config.company.name, slug: config.company.slug };
    if (config.enrolled_at) report.enrolled_at = config.enrolled_at;
    const host = brokerHost(config);
    const [headOffice, broker, queue, models, bodyModels] = await Promise.all([
      checkHeadOffice(config.server_url),
      checkTcp(host, config.broker.port),
      readQueue(config),
      checkModels(options.models ?? defaultModelsDir(options.config)),
      checkBodyModels(options.models ?? defaultModelsDir(options.config)),
    ]);
    report.head_office = { url: config.server_url, ...headOffice };
    report.broker = { host, port: config.broker.port, ...broker };
    report.queue = queue;
    report.models = models;
    report.body_models = bodyModels;
  } else {
    report.models = await checkModels(options.models ?? defaultModelsDir(options.config));
    report.body_models = await checkBodyModels(options.models ?? defaultModelsDir(options.config));
  }
  report.ffmpeg = await ffmpeg;
  report.service = await service;
  return report;
}

const yesNo = (ok: boolean, yes: string, no: string): string => (ok ? yes : no);

function mb(bytes: number): string {
  return bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function describeStatus(r: StatusReport): string[] {
  const out: string[] = [];
  if (!r.enrolled) {
    out.push(`Enrolled: no (${r.config}).`);
    if (r.enrol_hint) out.push(`  ${r.enrol_hint.split('\n').join('\n  ')}`);
  } else {
    out.push(`Enrolled: yes, shop "${r.shop!.name}" (${r.company!.name})${r.enrolled_at ? `, since ${r.enrolled_at}` : ''}.`);
  }
  if (r.head_office) out.push(`Head office: ${r.head_office.url}: ${r.head_office.answers ? 'answers' : `NOT ANSWERING (${r.head_office.detail})`}.`);
  if (r.broker) out.push(`Broker: ${r.broker.host}:${r.broker.port}: ${yesNo(r.broker.reachable, 'accepts connections', `NOT REACHABLE (${r.broker.detail})`)}.`);
  if (r.queue) {
    const q = r.queue;
    if (!q.exists || q.queued === undefined) out.push(`Queue: ${q.file}: ${q.detail}${q.in_use ? ' (in use by a running agent)' : ''}.`);
    else
      out.push(
        `Queue: ${q.queued} visit${q.queued === 1 ? '' : 's'} waiting, ${q.dropped} dropped (${mb(q.bytes ?? 0)}, ${q.file}` +
          `${q.in_use === undefined ? '' : q.in_use ? ', in use by a running agent' : ', no agent running on it'}).`,
      );
  }
  if (r.models) out.push(`Face models: ${r.models.present && r.models.verified ? 'installed and verified' : r.models.present ? 'NOT VERIFIED' : 'not installed'} in ${r.models.dir} (${r.models.detail}).`);
  if (r.body_models) out.push(`Person model (door counting): ${r.body_models.present && r.body_models.verified ? 'installed and verified' : r.body_models.present ? 'NOT VERIFIED' : 'not installed'} in ${r.body_models.dir} (${r.body_models.detail}).`);
  if (r.ffmpeg) out.push(`ffmpeg: ${r.ffmpeg.found ? `${r.ffmpeg.version} from ${r.ffmpeg.source} (${r.ffmpeg.path})` : `${r.ffmpeg.path}: ${r.ffmpeg.detail}`}.`);
  if (r.service) out.push(`Service footfall-agent: ${r.service.checked ? r.service.state : `not checked (${r.service.detail})`}.`);
  return out;
}

export function statusCommand(): Command {
  return new Command('status')
    .description('This shop PC at a glance: enrolment, head office and broker, the visit queue, face models, ffmpeg, the service')
    .option('--config <file>', 'the agent configuration written by footfall enrol', DEFAULT_AGENT_CONFIG_PATH)
    .option('--models <dir>', 'face models folder (default <data_dir>/models, as footfall agent)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExit status 0 when this PC is enrolled and head office answers, 1 otherwise. Read-only: a running agent is not disturbed.')
    .action(async (opts: { config: string; models?: string; json?: boolean }) => {
      const report = await agentStatus({ config: opts.config, ...(opts.models ? { models: opts.models } : {}) });
      console.log(opts.json ? JSON.stringify(report, null, 2) : describeStatus(report).join('\n'));
      process.exitCode = report.enrolled && report.head_office?.answers ? 0 : 1;
    });
}
