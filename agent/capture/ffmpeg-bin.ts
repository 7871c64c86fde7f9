/**
 * Which ffmpeg to run: FOOTFALL_FFMPEG if set, else the system's (`ffmpeg` on PATH, newer and kept up to date by
 * the distribution), else the static build an optional npm dependency ships inside its tarball
 * (`@ffmpeg-installer/<platform>-<arch>`: linux-x64, linux-arm64, win32-x64; ffmpeg 4.1 with libx264/libx265, RTSP),
 * so a shop PC or a developer's machine without ffmpeg (Windows has no apt) still captures. See docs/decisions.md.
 *
 *   resolveFfmpeg()          // { path: '/usr/bin/ffmpeg', source: 'path' } or { path: '.../node_modules/...', source: 'npm' }
 *   ffmpegCommand('ffmpeg')  // what to spawn for a configured `ffmpeg_path` (the default 'ffmpeg' resolves as above)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type FfmpegSource = 'FOOTFALL_FFMPEG' | 'path' | 'npm' | 'config';

export interface ResolvedFfmpeg {
  /** What to spawn: an absolute path, or 'ffmpeg' when none is found anywhere (spawning it then fails with ENOENT). */
  path: string;
  /** FOOTFALL_FFMPEG, `ffmpeg` on PATH, the npm package, or the agent's configured ffmpeg_path. */
  source: FfmpegSource;
}

const EXE = process.platform === 'win32' ? '.exe' : '';
const NPM_PACKAGES: Record<string, string> = {
  'linux-x64': '@ffmpeg-installer/linux-x64',
  'linux-arm64': '@ffmpeg-installer/linux-arm64',
  'win32-x64': '@ffmpeg-installer/win32-x64',
};

/** The first `name` on PATH (with PATHEXT on Windows), or undefined. */
export function onPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const exts = process.platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').map((e) => e.toLowerCase()) : [''];
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const file = path.join(dir, name + ext);
      try {
        const st = fs.statSync(file);
        if (st.isFile() && (process.platform === 'win32' || (st.mode & 0o111) !== 0)) return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** The ffmpeg binary inside the npm package for this platform, if it is installed. */
export function npmFfmpeg(): string | undefined {
  const pkg = NPM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) return undefined;
  try {
    const dir = path.dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`));
    const file = path.join(dir, 'ffmpeg' + EXE);
    return fs.existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

/** FOOTFALL_FFMPEG, else `ffmpeg` on PATH, else the npm package's. */
export function resolveFfmpeg(env: NodeJS.ProcessEnv = process.env): ResolvedFfmpeg {
  if (env.FOOTFALL_FFMPEG) return { path: env.FOOTFALL_FFMPEG, source: 'FOOTFALL_FFMPEG' };
  const system = onPath('ffmpeg', env);
  if (system) return { path: system, source: 'path' };
  const npm = npmFfmpeg();
  if (npm) return { path: npm, source: 'npm' };
  return { path: 'ffmpeg', source: 'path' };
}

/** What to spawn for a configured ffmpeg_path: the default `ffmpeg` (no folder in it) resolves; anything else is used as given. */
export function ffmpegCommand(configured = 'ffmpeg', env: NodeJS.ProcessEnv = process.env): ResolvedFfmpeg {
  if (configured === 'ffmpeg' || configured === 'ffmpeg.exe') return resolveFfmpeg(env);
  return { path: configured, source: 'config' };
}

/** The ffmpeg tests and fixtures run (resolved once per process). */
let cached: string | undefined;
export function ffmpegBin(): string {
  return (cached ??= resolveFfmpeg().path);
}

const majors = new Map<string, number | undefined>();
/**
 * ffmpeg's major version (4 for the npm build, 5 for Debian 12's), read once per binary from `-version`; undefined
 * when it cannot be told (a git build says `N-47683-...`: its date tells, see below) or does not run.
 */
export function ffmpegMajor(bin: string): number | undefined {
  if (majors.has(bin)) return majors.get(bin);
  let major: number | undefined;
  try {
    const out = execFileSync(bin, ['-hide_banner', '-version'], { encoding: 'utf8', timeout: 10_000, windowsHide: true });
    const m = /^ffmpeg version n?(\d+)\./m.exec(out);
    if (m) major = Number(m[1]);
    // A git snapshot (the npm package's `N-47683-g0e8eb07980`): libavformat's major tells the release line (58 = 4.x, 59 = 5.x, 60 = 6.x, 61 = 7.x).
    else {
      const lavf = /^libavformat\s+(\d+)\./m.exec(out);
      if (lavf) major = Number(lavf[1]) - 54;
    }
  } catch {
    major = undefined;
  }
  majors.set(bin, major);
  return major;
}

/**
 * The RTSP demuxer's socket I/O timeout option: `-timeout` since ffmpeg 5 (µs); before 5 `-timeout` meant "listen for
 * an incoming connection" and the I/O timeout was `-stimeout` (µs).
 */
export function rtspTimeoutOption(bin: string): 'timeout' | 'stimeout' {
  const major = ffmpegMajor(bin);
  return major !== undefined && major < 5 ? 'stimeout' : 'timeout';
}

export interface VideoProbe {
  width: number;
  height: number;
  /** The container's duration, seconds (ffprobe's format=duration). */
  duration: number;
  /** The first video stream's duration, seconds: its frames over its frame rate (ffprobe's stream=duration for a constant-rate file). */
  videoDuration: number;
}

/**
 * Size and durations of a video file, read with ffmpeg itself (the npm package ships no ffprobe): the stream header
 * ffmpeg prints on opening it, then the frame count of a stream copy to nowhere (no decoding).
 */
export async function probeVideoFile(file: string, bin = ffmpegBin()): Promise<VideoProbe> {
  const { execFile } = await import('node:child_process');
  const stderr = await new Promise<string>((resolve, reject) =>
    execFile(bin, ['-hide_banner', '-nostdin', '-i', file, '-map', '0:v:0', '-c', 'copy', '-f', 'null', '-'], { maxBuffer: 16 << 20 }, (err, _out, errText) =>
      err && !/Video:/.test(String(errText)) ? reject(new Error(`${file}: ${String(errText).trim().split('\n').pop() ?? err.message}`)) : resolve(String(errText)),
    ),
  );
  const video = /Stream #\d+:\d+[^\n]*?: Video: [^\n]*?, (\d{2,5})x(\d{2,5})[^\n]*/.exec(stderr);
  if (!video) throw new Error(`${file}: no video stream`);
  const d = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(stderr);
  const duration = d ? Number(d[1]) * 3600 + Number(d[2]) * 60 + Number(d[3]) : 0;
  const fps = Number(/, (\d+(?:\.\d+)?) fps/.exec(video[0])?.[1] ?? 0);
  const frames = [...stderr.matchAll(/frame=\s*(\d+)/g)].pop()?.[1];
  const videoDuration = fps > 0 && frames ? Number(frames) / fps : duration;
  return { width: Number(video[1]), height: Number(video[2]), duration, videoDuration };
}
