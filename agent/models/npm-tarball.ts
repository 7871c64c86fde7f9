/**
 * Fetch a package tarball from the npm registry by exact spec, verify it
 * against a pinned SRI integrity string, and extract selected entries.
 *
 * The download is done by the `npm` client itself (`npm pack <spec>`), so the
 * machine's npm configuration (registry, proxy, CA certificates, auth, npm's
 * own content cache) applies exactly as it does for `npm install`. Nothing
 * from the package is executed (`--ignore-scripts`) and nothing is installed.
 *
 * Every file this module writes appears atomically: it is written under a
 * temporary name in the same directory tree and renamed into place, so a
 * concurrent reader (or a second process fetching the same thing) never sees
 * a half-written file.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import * as tar from 'tar';

export type Log = (message: string) => void;

/** Name and version parsed from an exact `name@version` spec. */
export interface PackageSpec {
  name: string;
  version: string;
}

/** An error from fetching, verifying or extracting a registry tarball. */
export class NpmTarballError extends Error {
  /** npm's error code (ECONNREFUSED, ENOTFOUND, ETARGET, ...) or one of ours (EINTEGRITY, ENOENTRY, ESHA256, ENONPM). */
  readonly code: string;
  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NpmTarballError';
    this.code = code;
  }
}

export interface FetchTarballOptions {
  /** Exact spec, `name@x.y.z` or `@scope/name@x.y.z`. Ranges and tags are refused. */
  spec: string;
  /** Pinned SRI string, `sha512-<base64>`. */
  integrity: string;
  /** Directory where verified tarballs are kept and reused. */
  cacheDir: string;
  log?: Log;
  /**
   * Completes the "could not download" message after "Check this machine's
   * network access to the npm registry, or ...": e.g. where to copy files
   * fetched on another machine. A clause without a final full stop.
   */
  offlineHint?: string;
  /** Extra environment for the npm child process (e.g. `npm_config_offline`). */
  env?: NodeJS.ProcessEnv;
  /** npm executable; default `npm` from PATH. */
  npmCommand?: string;
  /** Kill npm after this long; default 10 minutes. */
  timeoutMs?: number;
}

export interface FetchedTarball {
  /** Absolute path of the verified .tgz in the cache dir. */
  path: string;
  /** True when an already-cached, valid tarball was reused (npm was not run). */
  fromCache: boolean;
  integrity: string;
  bytes: number;
}

/** One file to take out of a tarball. */
export interface TarballEntry {
  /** Path inside the package, without the tarball's top folder (`package/`): e.g. `model/fr_detect.onnx`. */
  from: string;
  /** File name to create in the destination dir, e.g. `fr_detect.onnx`. Must be a plain file name. */
  to: string;
  /** Expected sha256 (hex). When given and the content differs, nothing is written and an error is thrown. */
  sha256?: string;
}

export interface ExtractedEntry {
  from: string;
  to: string;
  /** Absolute path of the file in the destination dir. */
  path: string;
  sha256: string;
  bytes: number;
}

const EXACT_SPEC = /^((?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*)@(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$/;
const TEMP_PREFIXES = ['.download-', '.staging-', '.tmp-'];
const STALE_TEMP_MS = 60 * 60 * 1000;

/** Parse `name@1.2.3`; throws for anything that is not an exact version. */
export function parseExactSpec(spec: string): PackageSpec {
  const m = EXACT_SPEC.exec(spec);
  if (!m?.[1] || !m[2]) {
    throw new NpmTarballError(
      `"${spec}" is not an exact npm package spec: expected name@x.y.z (no ranges or tags), so the download can be pinned.`,
      'EBADSPEC',
    );
  }
  return { name: m[1], version: m[2] };
}

/** The file name `npm pack` gives a package's tarball: `@scope/name@1.0.0` -> `scope-name-1.0.0.tgz`. */
export function tarballFileName(spec: string): string {
  const { name, version } = parseExactSpec(spec);
  return `${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
}

/** SRI sha512 string (`sha512-<base64>`) of a file's content. */
export function sriSha512OfFile(path: string): Promise<string> {
  return hashFile(path, 'sha512', 'base64').then((h) => `sha512-${h.digest}`);
}

/** Hex sha256 and size of a file's content. */
export async function sha256OfFile(path: string): Promise<{ sha256: string; bytes: number }> {
  const h = await hashFile(path, 'sha256', 'hex');
  return { sha256: h.digest, bytes: h.bytes };
}

async function hashFile(
  path: string,
  algorithm: 'sha256' | 'sha512',
  encoding: 'hex' | 'base64',
): Promise<{ digest: string; bytes: number }> {
  const hash = createHash(algorithm);
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    const buf = chunk as Buffer;
    bytes += buf.length;
    hash.update(buf);
  }
  return { digest: hash.digest(encoding), bytes };
}

function assertSha512Sri(integrity: string, spec: string): void {
  if (!/^sha512-[A-Za-z0-9+/]{86}==$/.test(integrity)) {
    throw new NpmTarballError(
      `The pinned integrity for ${spec} must be a single sha512 SRI string ("sha512-<88 base64 chars>"), got "${integrity}".`,
      'EBADINTEGRITY',
    );
  }
}

async function fileExists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** Remove leftovers (`.download-*`, `.staging-*`, `.tmp-*`) of processes that died, older than an hour. */
export async function removeStaleTemps(dir: string, olderThanMs = STALE_TEMP_MS): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const now = Date.now();
  for (const name of names) {
    if (!TEMP_PREFIXES.some((p) => name.startsWith(p))) continue;
    const path = join(dir, name);
    try {
      const st = await stat(path);
      if (now - st.mtimeMs > olderThanMs) await rm(path, { recursive: true, force: true });
    } catch {
      // Someone else removed it: fine.
    }
  }
}

/** A unique temp name next to `path`, for write-then-rename. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.tmp-${basename(path)}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

interface NpmPackResult {
  filename?: string;
  integrity?: string;
}

interface NpmErrorJson {
  error?: { code?: string; summary?: string; detail?: string };
}

function runNpm(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | string | null; stdout: string; stderr: string; spawnError?: NodeJS.ErrnoException }> {
  const isWindows = process.platform === 'win32';
  // Through cmd.exe the arguments are joined into one command line: quote paths with spaces.
  const argv = isWindows ? args.map((a) => (/[\s&|<>^"]/.test(a) ? `"${a.replace(/"/g, '""')}"` : a)) : args;
  return new Promise((resolvePromise) => {
    execFile(
      command,
      argv,
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
        windowsHide: true,
        // npm is a .cmd shim on Windows, which Node only runs through a shell.
        // Every argument here is a fixed flag or a validated exact spec.
        shell: isWindows,
      },
      (error, stdout, stderr) => {
        if (!error) {
          resolvePromise({ code: 0, stdout, stderr });
          return;
        }
        const err = error as NodeJS.ErrnoException & { code?: number | string };
        const spawnError = typeof err.code === 'string' && err.code === 'ENOENT' && !stdout ? err : undefined;
        resolvePromise({ code: err.code ?? null, stdout, stderr, ...(spawnError ? { spawnError } : {}) });
      },
    );
  });
}

/** npm's own reason for a failure, from its `--json` error object or its `npm error` lines. */
function npmReason(stdout: string, stderr: string): { code: string; reason: string } {
  try {
    const parsed = JSON.parse(stdout) as NpmErrorJson;
    if (parsed.error?.summary) {
      const code = parsed.error.code ?? 'ENPM';
      const summary = parsed.error.summary.replace(/\s+/g, ' ').trim();
      return { code, reason: summary.includes(code) ? summary : `${code} ${summary}` };
    }
  } catch {
    // not JSON: fall through to stderr
  }
  const lines = stderr
    .split('\n')
    .filter((l) => l.startsWith('npm error') || l.startsWith('npm ERR!'))
    .map((l) => l.replace(/^npm (error|ERR!)\s*/, '').trim())
    .filter((l) => l && !l.startsWith('A complete log') && !l.startsWith('at '));
  const code = /^code (\S+)/.exec(lines[0] ?? '')?.[1] ?? 'ENPM';
  const reason = lines.filter((l) => !/^(code|errno|syscall) /.test(l)).slice(0, 3).join(' ');
  return { code, reason: reason || stderr.trim().split('\n').slice(-1)[0] || 'npm exited with an error' };
}

/**
 * Make sure `cacheDir` holds the tarball of `spec` with the pinned integrity,
 * downloading it with `npm pack` when it is missing or invalid. Returns its path.
 */
export async function fetchNpmTarball(options: FetchTarballOptions): Promise<FetchedTarball> {
  const { spec, integrity } = options;
  const log = options.log ?? (() => {});
  parseExactSpec(spec);
  assertSha512Sri(integrity, spec);
  const cacheDir = resolve(options.cacheDir);
  const target = join(cacheDir, tarballFileName(spec));

  if (await fileExists(target)) {
    const actual = await sriSha512OfFile(target);
    if (actual === integrity) {
      const { size } = await stat(target);
      log(`Using cached ${spec} tarball ${target}`);
      return { path: target, fromCache: true, integrity, bytes: size };
    }
    log(`Cached ${spec} tarball ${target} does not match the pinned integrity: downloading it again`);
    await rm(target, { force: true });
  }

  await mkdir(cacheDir, { recursive: true });
  await removeStaleTemps(cacheDir);
  const workDir = await mkdtemp(join(cacheDir, '.download-'));
  try {
    log(`Downloading ${spec} from the npm registry...`);
    const env: NodeJS.ProcessEnv = { ...process.env };
    // Fail in seconds rather than minutes when the registry is unreachable,
    // unless the user configured npm's retry timing explicitly.
    env.npm_config_fetch_retry_mintimeout ??= '2000';
    env.npm_config_fetch_retry_maxtimeout ??= '10000';
    Object.assign(env, options.env);
    const npm = options.npmCommand ?? 'npm';
    const result = await runNpm(
      npm,
      ['pack', spec, '--json', '--ignore-scripts', '--pack-destination', workDir],
      { cwd: workDir, env, timeoutMs: options.timeoutMs ?? 10 * 60 * 1000 },
    );
    const advice = `Check this machine's network access to the npm registry (npm's registry and proxy settings apply)${
      options.offlineHint ? `, or ${options.offlineHint}` : ''
    }.`;
    if (result.spawnError) {
      throw new NpmTarballError(
        `Could not download ${spec} from the npm registry: the npm client ("${npm}") was not found on PATH. Install npm (it comes with Node.js)${
          options.offlineHint ? `, or ${options.offlineHint}` : ''
        }.`,
        'ENONPM',
        { cause: result.spawnError },
      );
    }
    if (result.code !== 0) {
      const { code, reason } = npmReason(result.stdout, result.stderr);
      throw new NpmTarballError(
        `Could not download ${spec} from the npm registry: ${reason.replace(/[.\s]+$/, '')}. ${advice}`,
        code,
      );
    }

    let reported: NpmPackResult | undefined;
    try {
      const parsed = JSON.parse(result.stdout) as NpmPackResult[];
      reported = Array.isArray(parsed) ? parsed[0] : undefined;
    } catch {
      reported = undefined;
    }
    if (reported?.integrity && reported.integrity !== integrity) {
      throw new NpmTarballError(
        `Integrity mismatch for ${spec}: the pinned integrity is ${integrity} but the registry reports ${reported.integrity}. ` +
          `The published package is not the one this build was pinned to; refusing to use it.`,
        'EINTEGRITY',
      );
    }
    const packed = join(workDir, reported?.filename ? basename(reported.filename) : basename(target));
    if (!(await fileExists(packed))) {
      throw new NpmTarballError(`npm pack ${spec} reported success but produced no tarball in ${workDir}.`, 'ENPM');
    }
    const actual = await sriSha512OfFile(packed);
    if (actual !== integrity) {
      throw new NpmTarballError(
        `Integrity mismatch for ${spec}: the pinned integrity is ${integrity} but the downloaded tarball hashes to ${actual}. Refusing to use it.`,
        'EINTEGRITY',
      );
    }
    await rename(packed, target);
    const { size } = await stat(target);
    log(`Downloaded ${spec} (${(size / 1e6).toFixed(1)} MB), integrity verified`);
    return { path: target, fromCache: false, integrity, bytes: size };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/**
 * Extract `entries` from an npm tarball into `destDir`, each file appearing
 * atomically. Entries with a `sha256` are verified before they are moved into
 * place; on a mismatch the extracted copy is deleted and an error thrown.
 */
export async function extractTarballEntries(
  tarball: string,
  entries: readonly TarballEntry[],
  destDir: string,
  log?: Log,
): Promise<ExtractedEntry[]> {
  const dest = resolve(destDir);
  for (const e of entries) {
    if (e.to !== basename(e.to) || e.to.startsWith('.') || !e.to) {
      throw new NpmTarballError(`Invalid destination file name "${e.to}" for ${e.from}.`, 'EBADENTRY');
    }
  }
  const wanted = new Map(entries.map((e) => [e.from.replace(/^\/+/, ''), e]));
  await mkdir(dest, { recursive: true });
  await removeStaleTemps(dest);
  const staging = await mkdtemp(join(dest, '.staging-'));
  try {
    const found = new Set<string>();
    await tar.x({
      file: tarball,
      cwd: staging,
      strip: 1,
      noMtime: true,
      filter: (path, entry) => {
        // npm tarballs have one top folder (usually `package/`); match below it.
        const rel = path.replace(/^[^/]*\//, '');
        const ok = wanted.has(rel) && 'type' in entry && entry.type === 'File';
        if (ok) found.add(rel);
        return ok;
      },
    });
    const missing = [...wanted.keys()].filter((k) => !found.has(k));
    if (missing.length > 0) {
      throw new NpmTarballError(`${basename(tarball)} does not contain ${missing.join(', ')}.`, 'ENOENTRY');
    }

    const staged: ExtractedEntry[] = [];
    for (const [from, e] of wanted) {
      const stagedPath = join(staging, from);
      const { sha256, bytes } = await sha256OfFile(stagedPath);
      if (e.sha256 && sha256 !== e.sha256) {
        await rm(stagedPath, { force: true });
        throw new NpmTarballError(
          `${from} from ${basename(tarball)} has sha256 ${sha256}, expected ${e.sha256}. The file was deleted and not installed.`,
          'ESHA256',
        );
      }
      staged.push({ from, to: e.to, path: join(dest, e.to), sha256, bytes });
    }
    // Only move files into place once every entry has been verified.
    for (const s of staged) {
      await rename(join(staging, s.from), s.path);
      log?.(`Installed ${s.to} (${s.bytes} bytes, sha256 ${s.sha256.slice(0, 12)}...)`);
    }
    return staged;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
