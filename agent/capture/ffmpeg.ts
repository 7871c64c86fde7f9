/**
 * The ffmpeg child process: its arguments, spawning it, stopping it without leaving it behind.
 *
 * A thin wrapper over child_process.spawn (see docs/decisions.md: not fluent-ffmpeg, not node-rtsp-stream).
 * ffmpeg reads the camera over RTSP/TCP, keeps `fps` pictures a second, scales them to at most `maxWidth` wide and
 * writes them as PPM (raw RGB24 with a size header, see ppm.ts) to a Unix socket it listens on (CameraWorker; see
 * connectPictureSocket) or to stdout (Windows, grabs). Its stderr (warnings and errors only) is what explains a
 * failure.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ffmpegCommand, ffmpegMajor, rtspTimeoutOption } from './ffmpeg-bin.js';

export type Rotation = 0 | 90 | 180 | 270;

export interface DecodeOptions {
  /** Pictures a second to keep (the detect rate). */
  fps: number;
  /** Scale down to at most this many pixels wide (never up), keeping the aspect ratio. */
  maxWidth: number;
  /** Clockwise rotation, for a camera mounted on its side; applied before scaling. */
  rotate?: Rotation;
  /** ffmpeg's own socket timeout; a backstop behind the worker's watchdogs. Default 30 s. */
  ioTimeoutMs?: number;
  /** RTP over the RTSP connection (`tcp`, what the agent uses) or over UDP (`footfall camera test --transport udp`). */
  transport?: 'tcp' | 'udp';
  /** Stop after this many pictures (a one-shot grab). */
  frames?: number;
  /**
   * Write the pictures to a Unix socket at this path, which ffmpeg listens on (the reader connects), instead of
   * stdout. See CameraWorker: read from a socket, node can fill one reused buffer instead of allocating per read.
   */
  socketPath?: string;
  /** The ffmpeg that will run these arguments (as configured; see ffmpegCommand): ffmpeg 4 spells the I/O timeout differently. */
  ffmpegPath?: string;
}

const ROTATE_FILTER: Record<Rotation, string[]> = {
  0: [],
  90: ['transpose=clock'],
  180: ['hflip', 'vflip'],
  270: ['transpose=cclock'],
};

export function videoFilter(opts: Pick<DecodeOptions, 'fps' | 'maxWidth' | 'rotate'>): string {
  const fps = Number.isFinite(opts.fps) && opts.fps > 0 ? opts.fps : 5;
  const width = Math.max(16, Math.floor(opts.maxWidth));
  return [`fps=${fps}`, ...ROTATE_FILTER[opts.rotate ?? 0], `scale='min(iw,${width})':-2`].join(',');
}

/**
 * What ffmpeg opens: a stream URL on its command line, or an ffconcat script naming it (writeStreamScript), for a URL
 * that carries a password.
 */
export type StreamInput = string | { script: string };

export function decodeArgs(input: StreamInput, opts: DecodeOptions): string[] {
  const source =
    typeof input === 'string'
      ? ['-rtsp_transport', opts.transport ?? 'tcp', `-${timeoutOption(opts)}`, String(ioTimeoutUs(opts)), '-i', input]
      : ['-f', 'concat', '-safe', '0', '-protocol_whitelist', 'file,rtsp,rtp,tcp,udp', '-i', input.script];
  return ['-hide_banner', '-nostdin', '-nostats', '-loglevel', 'warning', ...source, ...pictureArgs(opts)];
}

/** `timeout`, or `stimeout` for an ffmpeg older than 5 (where `timeout` means "listen"): see rtspTimeoutOption. */
function timeoutOption(opts: Pick<DecodeOptions, 'ffmpegPath'>): string {
  return rtspTimeoutOption(ffmpegCommand(opts.ffmpegPath).path);
}

function ioTimeoutUs(opts: Pick<DecodeOptions, 'ioTimeoutMs'>): number {
  return Math.round((opts.ioTimeoutMs ?? 30_000) * 1000);
}

/** Does this URL carry a user name or password (`scheme://user:password@host`)? */
export function hasCredentials(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/@]*@/i.test(url);
}

/**
 * A camera's password must not be on ffmpeg's command line: every local user of the shop PC can read that (`ps`,
 * /proc/PID/cmdline; the process list on Windows). ffmpeg 5.1 (Debian 12) has no RTSP credential option and cannot
 * read an option's value from a file, but its concat demuxer opens the URLs a script names, with per-input options.
 * So a URL with a password goes into an ffconcat script, mode 0600, in `dir` (a private folder of the agent's),
 * with the options the command line would have given; decodeArgs({ script }) opens it. The caller deletes it when
 * ffmpeg is done. ffmpeg 4 (the npm package's build) has no `option` lines in ffconcat: there the transport rides
 * on the URL as the RTSP demuxer's own `?tcp` / `?udp` (it strips it before asking the camera), and the socket
 * timeout is left to the worker's watchdogs.
 */
export function writeStreamScript(url: string, dir: string, name: string, opts: Pick<DecodeOptions, 'ioTimeoutMs' | 'transport' | 'ffmpegPath'> = {}): { script: string } {
  // The script is line-based and the URL sits in single quotes: control characters are percent-encoded (a URL has
  // none), a quote closes and reopens the quoting.
  const old = (ffmpegMajor(ffmpegCommand(opts.ffmpegPath).path) ?? 5) < 5;
  const target = old ? `${url}${url.includes('?') ? '&' : '?'}${opts.transport ?? 'tcp'}` : url;
  let safe = '';
  for (const c of target) {
    const code = c.charCodeAt(0);
    safe += code <= 0x20 || code === 0x7f ? `%${code.toString(16).padStart(2, '0').toUpperCase()}` : c === "'" ? "'\\''" : c;
  }
  const script = path.join(dir, `${name}.ffconcat`);
  const options = old ? '' : `option rtsp_transport ${opts.transport ?? 'tcp'}\noption timeout ${ioTimeoutUs(opts)}\n`;
  fs.writeFileSync(script, `ffconcat version 1.0\nfile '${safe}'\n${options}`, { mode: 0o600 });
  return { script };
}

/** The output half of decodeArgs: the picture filter and PPM frames on stdout or a socket (the benchmark uses it on a file). */
export function pictureArgs(opts: Pick<DecodeOptions, 'fps' | 'maxWidth' | 'rotate' | 'frames' | 'socketPath'>): string[] {
  return [
    '-an',
    '-sn',
    '-dn',
    '-vf',
    videoFilter(opts),
    ...(opts.frames ? ['-frames:v', String(opts.frames)] : []),
    '-pix_fmt',
    'rgb24',
    '-c:v',
    'ppm',
    '-f',
    'image2pipe',
    ...(opts.socketPath ? ['-listen', '1', `unix:${opts.socketPath}`] : ['pipe:1']),
  ];
}

export type FfmpegProcess = ChildProcessByStdio<null, Readable, Readable>;

/**
 * Connects to the Unix socket an ffmpeg started with `socketPath` listens on. ffmpeg listens only once it has opened
 * its input (a camera: after connecting and probing), so until then the attempt fails (no such file, or refused)
 * and is repeated every 50 ms while `alive()`. Reads land in `buffer`, reused every time: `onChunk` gets a view of
 * the bytes read, valid only during the call (copy what you keep); returning false pauses the socket (resume() it).
 */
export function connectPictureSocket(
  path: string,
  opts: { buffer: Buffer; alive: () => boolean; onChunk: (chunk: Buffer) => boolean | void; onConnect: (socket: net.Socket) => void },
): void {
  let connected = false;
  const attempt = (): void => {
    if (!opts.alive()) return;
    const socket = net.connect({
      path,
      onread: { buffer: opts.buffer, callback: (n: number, buf: Uint8Array) => opts.onChunk(Buffer.from(buf.buffer, buf.byteOffset, n)) !== false },
    });
    socket.once('connect', () => {
      connected = true;
      if (opts.alive()) opts.onConnect(socket);
      else socket.destroy();
    });
    socket.on('error', () => {
      socket.destroy();
      if (!connected) setTimeout(attempt, 50).unref();
    });
  };
  attempt();
}

/** Spawns ffmpeg: `ffmpegPath` as configured, the default `ffmpeg` resolved by ffmpegCommand (PATH, else the npm package's). */
export function spawnFfmpeg(args: string[], ffmpegPath = 'ffmpeg'): FfmpegProcess {
  return spawn(ffmpegCommand(ffmpegPath).path, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
}

/** Resolves when the process has exited and its pipes are closed (at once if it already has, or never started). */
export function exited(child: FfmpegProcess): Promise<void> {
  if (child.pid === undefined) return Promise.resolve(); // spawn failed (ffmpeg missing): nothing runs
  if ((child.exitCode !== null || child.signalCode !== null) && child.stdout.closed && child.stderr.closed) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
}

/**
 * Stops ffmpeg: SIGTERM (it closes the stream and exits), then SIGKILL if it is still there after `graceMs`.
 * Resolves once it is gone and reaped, so no process outlives the worker.
 */
export async function stopFfmpeg(child: FfmpegProcess, graceMs = 2000): Promise<void> {
  const done = exited(child);
  if (child.exitCode !== null || child.signalCode !== null) return done;
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      resolve();
    }, graceMs);
  });
  await Promise.race([done, killed]);
  clearTimeout(timer);
  await done;
}

/** Keeps the last `max` lines of a stream (ffmpeg's stderr), each passed through `clean` (redaction). */
export class LineTail {
  readonly lines: string[] = [];
  private partial = '';

  constructor(
    private readonly max = 30,
    private readonly clean: (line: string) => string = (l) => l,
    private readonly onLine?: (line: string) => void,
  ) {}

  push(chunk: Buffer | string): void {
    const parts = (this.partial + chunk.toString()).split(/\r?\n|\r/);
    this.partial = parts.pop() ?? '';
    if (this.partial.length > 4096) this.partial = this.partial.slice(-4096);
    for (const part of parts) this.add(part);
  }

  /** The stream ended: keep whatever was left without a newline. */
  end(): void {
    if (this.partial) this.add(this.partial);
    this.partial = '';
  }

  private add(raw: string): void {
    if (!raw.trim()) return;
    const line = this.clean(raw.length > 1000 ? raw.slice(0, 1000) : raw);
    this.lines.push(line);
    if (this.lines.length > this.max) this.lines.shift();
    this.onLine?.(line);
  }
}
