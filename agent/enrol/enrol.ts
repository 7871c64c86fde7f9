/**
 * `footfall enrol`: exchanges an installation code for this shop PC's token and broker login
 * (POST /api/agent/enrol) and writes the agent configuration (mode 0600, atomically; agent/config).
 *
 * Everything that can be checked before the code is spent is checked first (the code's shape, an existing
 * configuration, whether the configuration folder is writable), because a code works only once.
 */
import { constants } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EnrolResponse, normaliseEnrolmentCode } from '../../shared/agent-api.js';
import {
  AgentConfigError,
  DEFAULT_AGENT_CONFIG_PATH,
  absoluteLocalPaths,
  agentConfigExists,
  brokerHost,
  configFromEnrolment,
  localSettingsOf,
  saveAgentConfig,
  type AgentConfig,
  type LocalSettings,
} from '../config/config.js';
import { AgentHttpError, describeNetworkError, parseAnswer } from '../runtime/http.js';
import { agentVersion } from '../runtime/version.js';

export interface EnrolOptions {
  /** Head office's address, e.g. `http://head-office:8080` (`head-office:8080` is read as http). */
  server: string;
  /** The installation code as typed: dashes, spaces and letter case do not matter. */
  code: string;
  /** Where to write the configuration; default /etc/footfall/agent.json. */
  configPath?: string;
  /** Replace an existing configuration (re-installing this PC). */
  force?: boolean;
  /** This PC's name as head office shows it; default os.hostname(). */
  hostname?: string;
  /** Local settings to store with it (data folder, ffmpeg path...); with `force`, those of the replaced file are kept unless given. */
  local?: LocalSettings;
  /** How long to wait for head office; default 15 s. */
  timeoutMs?: number;
}

export interface EnrolResult {
  config: AgentConfig;
  configPath: string;
  /** The shop this PC now belongs to. */
  shopName: string;
  companyName: string;
  /** Where the agent will connect for MQTT (`host:port`). */
  broker: string;
}

export type EnrolProblem = 'bad_server' | 'bad_code' | 'exists' | 'cannot_write' | 'unreachable' | 'invalid_code' | 'refused';

/** A failure to show as is: one or two sentences saying what to do. */
export class EnrolError extends Error {
  override name = 'EnrolError';
  constructor(
    readonly problem: EnrolProblem,
    message: string,
  ) {
    super(message);
  }
}

/** `head-office:8080` -> `http://head-office:8080`; refuses anything but http(s) without a path. */
export function serverUrl(input: string): string {
  const text = input.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new EnrolError('bad_server', `"${input}" is not an address. Give head office's address, e.g. --server http://head-office:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new EnrolError('bad_server', `--server must be an http:// or https:// address, not ${url.protocol}//`);
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new EnrolError('bad_server', `--server takes only the address of head office, e.g. http://head-office:8080`);
  }
  return url.origin + url.pathname.replace(/\/+$/, '');
}

export async function enrolShopPc(options: EnrolOptions): Promise<EnrolResult> {
  const server = serverUrl(options.server);
  const code = normaliseEnrolmentCode(options.code);
  if (!/^[A-Z0-9]{24}$/.test(code)) {
    throw new EnrolError(
      'bad_code',
      'That is not an enrolment code: a code is four groups of six letters and digits, e.g. 7KQ2ZD-M4XH9A-0PLW3C-TT8RNE. Copy it again from head office (Shops, then Enrolment code).',
    );
  }
  const configPath = path.resolve(options.configPath ?? DEFAULT_AGENT_CONFIG_PATH);
  const exists = await agentConfigExists(configPath);
  if (!options.force && exists) {
    throw new EnrolError('exists', `This PC is already enrolled: ${configPath} exists. To enrol it again (for example for another shop), add --force.`);
  }
  await checkWritable(configPath);
  // Enrolling again keeps the installer's local settings (the queue of undelivered visits is in that data folder).
  const local = absoluteLocalPaths({ ...(exists ? await localSettingsOf(configPath) : {}), ...options.local });

  const url = `${server}/api/agent/enrol`;
  const timeoutMs = options.timeoutMs ?? 15_000;
  let status: number;
  let text: string;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ code, hostname: (options.hostname ?? os.hostname()).slice(0, 255), agent_version: agentVersion() }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    const { message } = describeNetworkError(err, url, timeoutMs);
    throw new EnrolError('unreachable', `Cannot reach head office at ${server}: ${message}.`);
  }

  let answer: EnrolResponse;
  try {
    answer = parseAnswer(status, text, EnrolResponse, 'the enrolment');
  } catch (err) {
    throw explainRefusal(err, server);
  }

  let config: AgentConfig;
  try {
    config = await saveAgentConfig(configPath, configFromEnrolment(server, answer, local), { overwrite: true });
  } catch (err) {
    // The code is spent now: say so, so that nobody retries it.
    const why = err instanceof AgentConfigError ? err.message : `Cannot write ${configPath}: ${(err as Error).message}`;
    throw new EnrolError('cannot_write', `${why}\nHead office accepted the code, so it is used up: ask for a new one after fixing this.`);
  }
  return {
    config,
    configPath,
    shopName: answer.site.name,
    companyName: answer.company.name,
    broker: `${brokerHost(config)}:${config.broker.port}`,
  };
}

function explainRefusal(err: unknown, server: string): Error {
  if (!(err instanceof AgentHttpError)) return err as Error;
  switch (err.code) {
    case 'invalid_code':
      return new EnrolError(
        'invalid_code',
        'Head office does not accept this code: it is wrong, expired or already used (each code works once). Ask a manager for a new one (Shops, then Enrolment code).',
      );
    case 'invalid_request':
      return new EnrolError('refused', `Head office refused the enrolment: ${err.message}`);
    case 'no_encryption_key':
      return new EnrolError('refused', 'Head office cannot enrol shop PCs right now (it cannot read its encryption key). Ask the head-office administrator, then try again with the same code.');
    case 'not_found':
    case 'method_not_allowed':
    case 'http_error':
    case 'bad_answer':
      return new EnrolError('refused', `${server} does not look like a Footfall head office (it has no enrolment route). Check the address and port.`);
    default:
      return new EnrolError('refused', `Head office could not enrol this PC (HTTP ${err.status}${err.message ? `: ${err.message}` : ''}). Try again in a minute with the same code.`);
  }
}

/** Creates the folder and a scratch file next to the configuration: permission problems show before the code is spent. */
async function checkWritable(file: string): Promise<void> {
  const dir = path.dirname(file);
  const probe = path.join(dir, `.${path.basename(file)}.${process.pid}.probe`);
  try {
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const handle = await open(probe, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
    await handle.close();
    await rm(probe, { force: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const hint =
      code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
        ? `permission denied. Run it as root (sudo footfall enrol ...) or choose another file with --config.`
        : (err as Error).message;
    throw new EnrolError('cannot_write', `Cannot write the configuration ${file}: ${hint}`);
  }
}
