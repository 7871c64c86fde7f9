/**
 * The shop PC's configuration file (`/etc/footfall/agent.json` by default): what enrolment returned (head office
 * URL, the PC's token, broker login, shop, timings) plus local settings (data folder, detect rate, queue bound).
 *
 * It holds two secrets (the token and the broker password), so it is written with mode 0600, atomically (a
 * temporary file in the same folder, fsync, rename, fsync of the folder): a power cut leaves either the old file
 * or the new one, never half of one. Errors name the file and the field, never a secret's value.
 */
import { readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { BrokerLogin, Site, Timing, type EnrolResponse } from '../../shared/agent-api.js';
import { writePrivateFile } from './private-file.js';

const windows = process.platform === 'win32';
const programData = process.env.ProgramData ?? 'C:\\ProgramData';

/** `/etc/footfall/agent.json`; on Windows `%ProgramData%\Footfall\agent.json`. */
export const DEFAULT_AGENT_CONFIG_PATH = windows ? path.join(programData, 'Footfall', 'agent.json') : '/etc/footfall/agent.json';
/** `/var/lib/footfall`; on Windows `%ProgramData%\Footfall\data`. */
export const DEFAULT_DATA_DIR = windows ? path.join(programData, 'Footfall', 'data') : '/var/lib/footfall';

/**
 * The one default face-models folder of every command (`footfall agent`, `models fetch`, `models list`, `vision`,
 * `status`, `camera test`): `<data_dir>/models` of the agent's configuration when it can be read, else of the default
 * data folder (`/var/lib/footfall/models`). Only `data_dir` is read here; the agent validates the whole file.
 */
export function defaultModelsDir(configPath = DEFAULT_AGENT_CONFIG_PATH): string {
  let dataDir = DEFAULT_DATA_DIR;
  try {
    const raw = JSON.parse(readFileSync(configPath, 'utf8')) as { data_dir?: unknown };
    if (typeof raw.data_dir === 'string' && raw.data_dir.length > 0) dataDir = raw.data_dir;
  } catch {
    // not enrolled, or not readable by this user: the default data folder
  }
  return path.join(dataDir, 'models');
}

/** The protocol's defaults (docs/agent-protocol.md, timing summary), for a file written without them. */
export const DEFAULT_TIMING: Timing = {
  heartbeat_interval_s: 30,
  camera_sync_s: 60,
  snapshot_interval_s: 60,
  live_renew_s: 3,
  live_demand_ttl_s: 10,
  check_release_s: 300,
};

export const AgentConfig = z.object({
  /** Head office, e.g. `http://head-office:8080`. */
  server_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// address' }),
  /** The shop PC's token (`ffs_...`). Secret. */
  token: z.string().min(1),
  site: Site,
  company: z.object({ slug: z.string(), name: z.string() }),
  /** Broker login; `password` is secret; `host` null means the head-office host. */
  broker: BrokerLogin.extend({ password: z.string() }),
  timing: Timing.default(DEFAULT_TIMING),
  images: z.enum(['off', 'local']).default('off'),
  /** When this PC was enrolled (RFC 3339). */
  enrolled_at: z.iso.datetime({ offset: true }).optional(),

  // Local settings (not from head office).
  /** Where the queue file and other state live. */
  data_dir: z.string().min(1).default(DEFAULT_DATA_DIR),
  /** Detect rate for a camera whose tuning does not say. */
  detect_fps: z.number().int().min(1).max(30).default(5),
  /**
   * Person detection on a camera with a counting line at most this many times a second, whatever its detect_fps
   * (the face detector's rate): about 92 ms of CPU per look, and counts were exact at 3 and 5 on the door video
   * (docs/benchmarks.md, door). 0: as often as detect_fps.
   */
  door_fps: z.number().int().min(0).max(30).default(3),
  /** Messages kept on disk while head office is unreachable; the oldest are dropped (and counted) beyond. */
  queue_max_items: z.number().int().min(100).max(10_000_000).default(100_000),
  /** The ffmpeg binary (a full path on Windows, typically). */
  ffmpeg_path: z.string().min(1).default('ffmpeg'),
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type AgentConfig = z.infer<typeof AgentConfig>;
/** What a caller writes: local settings may be left out (defaults apply). */
export type AgentConfigInput = z.input<typeof AgentConfig>;

/** Local settings an installer may pass at enrolment (`footfall enrol --data-dir ...`). */
export type LocalSettings = Partial<Pick<AgentConfig, 'data_dir' | 'detect_fps' | 'queue_max_items' | 'ffmpeg_path' | 'log_level'>>;

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

/** The configuration made from an enrolment answer. */
export function configFromEnrolment(serverUrl: string, enrol: EnrolResponse, local: LocalSettings = {}, now = new Date()): AgentConfig {
  return parse(
    {
      server_url: serverUrl.replace(/\/+$/, ''),
      token: enrol.token,
      site: enrol.site,
      company: enrol.company,
      broker: enrol.broker,
      timing: enrol.timing,
      images: enrol.images,
      enrolled_at: now.toISOString(),
      ...local,
    },
    'the enrolment answer',
  );
}

export async function agentConfigExists(file = DEFAULT_AGENT_CONFIG_PATH): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

export async function loadAgentConfig(file = DEFAULT_AGENT_CONFIG_PATH): Promise<AgentConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new AgentConfigError(`No agent configuration at ${file}. Enrol this PC first: footfall enrol --server <head office address> --code <installation code>`);
    }
    if (code === 'EACCES' || code === 'EPERM') {
      throw new AgentConfigError(`Cannot read ${file}: permission denied. Run the agent as the footfall user (or root).`);
    }
    throw new AgentConfigError(`Cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new AgentConfigError(`${file} is not valid JSON. Enrol again with --force to write a new one.`);
  }
  return parse(json, file);
}

const LOCAL_KEYS = ['data_dir', 'detect_fps', 'queue_max_items', 'ffmpeg_path', 'log_level'] as const satisfies readonly (keyof LocalSettings)[];

/**
 * The local settings of an existing file (what `footfall enrol --force` keeps: the queue lives in its data folder);
 * an unreadable file or value gives nothing for it.
 */
export async function localSettingsOf(file: string): Promise<LocalSettings> {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
  const local: Record<string, unknown> = {};
  for (const key of LOCAL_KEYS) {
    if (json?.[key] === undefined) continue;
    const value = AgentConfig.shape[key].safeParse(json[key]);
    if (value.success) local[key] = value.data;
  }
  return local as LocalSettings;
}

/** Paths made absolute against the current folder: the agent runs as a service, in another one. */
export function absoluteLocalPaths(local: LocalSettings): LocalSettings {
  const out = { ...local };
  if (out.data_dir) out.data_dir = path.resolve(out.data_dir);
  // A bare program name is looked up on PATH; a path with a folder in it is relative to here.
  if (out.ffmpeg_path && /[\\/]/.test(out.ffmpeg_path)) out.ffmpeg_path = path.resolve(out.ffmpeg_path);
  return out;
}

export interface SaveOptions {
  /** Replace an existing file (`footfall enrol --force`). Without it an existing file is an error. */
  overwrite?: boolean;
}

/**
 * Validates and writes the file: mode 0600, atomically. The folder is created (0750) when missing. Written by root
 * into a folder of another user (`sudo footfall enrol` into /etc/footfall, which belongs to the service's user), the
 * file is given to that user: the service could not read a file of root's with mode 0600.
 */
export async function saveAgentConfig(file: string, config: AgentConfigInput, options: SaveOptions = {}): Promise<AgentConfig> {
  const valid = parse(config, 'the configuration to save');
  if (!options.overwrite && (await agentConfigExists(file))) {
    throw new AgentConfigError(`${file} already exists: this PC is already enrolled. Use --force to replace it.`);
  }
  // Root writing into another user's folder gives the file to that user (writePrivateFile, ownerForNewFile).
  await writePrivateFile(file, JSON.stringify(valid, null, 2) + '\n', { dirMode: 0o750 });
  return valid;
}

/** A warning when others than the owner may read the file (it holds secrets); undefined when fine or on Windows. */
export async function permissionWarning(file = DEFAULT_AGENT_CONFIG_PATH): Promise<string | undefined> {
  if (windows) return undefined;
  const { mode } = await stat(file);
  if ((mode & 0o077) === 0) return undefined;
  return `${file} can be read by other users (mode ${(mode & 0o777).toString(8)}); it holds secrets: chmod 600 ${file}`;
}

/** The broker's host name: the configured one, or head office's when enrolment said null. */
export function brokerHost(config: AgentConfig): string {
  return config.broker.host ?? new URL(config.server_url).hostname;
}

/** The durable queue's file. */
export function queueFile(config: AgentConfig): string {
  return path.join(config.data_dir, 'queue.sqlite');
}

function parse(input: unknown, source: string): AgentConfig {
  const result = AgentConfig.safeParse(input);
  if (result.success) return result.data;
  // Paths and expectations only: zod's messages do not repeat the values, so no secret ends up in the message.
  const problems = result.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`);
  throw new AgentConfigError(`Invalid agent configuration in ${source}:\n  ${problems.join('\n  ')}`);
}
