/**
 * One camera: one ffmpeg process reading its stream, pictures to a frame consumer, the latest picture kept for
 * snapshots and checks, reconnection with backoff, and a state a person can read.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { Backoff, type BackoffOptions } from './backoff.js';
import { LineTail, connectPictureSocket, decodeArgs, hasCredentials, spawnFfmpeg, stopFfmpeg, writeStreamScript, type FfmpegProcess, type Rotation } from './ffmpeg.js';
import type { Frame, FrameConsumer } from './frame.js';
import { PictureBuffers, PpmReader, type RawImage } from './ppm.js';
import { REASONS, explainFfmpeg, type Explanation, type ReasonCode } from './reasons.js';
import { describeSource, redact, rtspUrl, type CameraSource } from './source.js';

export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface CameraState {
  /** Pictures are arriving. */
  connected: boolean;
  /** The protocol's reason word: `ok` when connected, `connecting` before the first attempt ends. */
  code: ReasonCode;
  /** Why not connected, in words a person understands ("wrong password"); absent when connected. */
  reason?: string;
  /** Since when this state (connected, code and reason) holds. */
  since: Date;
}

export interface CameraWorkerOptions {
  /** The camera's uuid: workers are keyed on it. */
  id: string;
  /** The camera's `camera_id`, stamped on every frame. */
  cameraId: string;
  source: CameraSource;
  /** Decode at most this wide. */
  maxWidth: number;
  /** Detect rate: pictures a second for the consumer. Default 5. */
  fps?: number;
  rotate?: Rotation;
  consumer?: FrameConsumer;
  ffmpegPath?: string;
  log?: Log;
  backoff?: BackoffOptions;
  /** No picture this long after starting ffmpeg: "camera did not answer in time". Default 15 s. */
  firstFrameTimeoutMs?: number;
  /** No picture this long while connected: "camera stopped sending pictures", reconnect. Default 10 s. */
  stallTimeoutMs?: number;
  /** Connected at least this long: the next failure starts the backoff from the beginning. Default 30 s. */
  stableMs?: number;
  /** SIGTERM, then SIGKILL after this long. Default 2 s. */
  stopGraceMs?: number;
  /** Decode rate while someone watches live. Default 13. */
  liveFps?: number;
  /**
   * How pictures come from ffmpeg: over a Unix socket that this worker reads into one reused buffer (the default
   * where there are Unix sockets), or over ffmpeg's stdout (Windows), where node allocates a new buffer for every
   * read of at most 64 KB; at 0.7 MB per picture those allocations kept V8's garbage collector busy.
   */
  transport?: 'socket' | 'pipe';
}

interface WorkerEvents {
  state: [state: CameraState];
}

/** One ffmpeg process and what it has done so far. */
interface Run {
  child: FfmpegProcess;
  fps: number;
  startedAt: number;
  firstFrameAt?: number;
  lastFrameAt?: number;
  stderr: LineTail;
  spawnError?: NodeJS.ErrnoException;
  /** Set when the worker killed it (watchdog, bad output): the reason to report. */
  killedFor?: Explanation;
  /** Set when the worker stops it only to start it again at another rate. */
  restart?: boolean;
  /** The Unix socket ffmpeg writes pictures to (transport 'socket'), and the connection to it once made. */
  socketPath?: string;
  socket?: net.Socket;
  /** The script handing ffmpeg a URL with a password (writeStreamScript), deleted when the run ends. */
  script?: string;
  exited?: boolean;
}

const silent = pino({ level: 'silent' });

export class CameraWorker extends EventEmitter<WorkerEvents> {
  readonly id: string;
  readonly cameraId: string;
  private readonly opts: CameraWorkerOptions;
  private readonly log: Log;
  private readonly backoff: Backoff;
  private readonly fps: number;
  private readonly liveFps: number;
  private consumer: FrameConsumer | undefined;
  private readonly live = new Set<FrameConsumer>();
  private running = false;
  private run: Run | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private current: CameraState = { ...REASONS.connecting, connected: false, since: new Date() };
  private last: Frame | undefined;
  /**
   * The two picture buffers ffmpeg's output is read into, in turn: the one being filled is never the one behind
   * `last`. A frame that outlives its delivery call (latest(), live view) gets a copy first (`stable`).
   */
  private readonly buffers = new PictureBuffers();
  /** Socket transport: the one read buffer. */
  private readBuffer: Buffer | undefined;
  /** A private directory (0700) for the runs' sockets and stream scripts. */
  private privateDir: string | undefined;
  /** Frames whose data is already a copy of their own. */
  private readonly stable = new WeakSet<Frame>();
  private nextConsumerAt = 0;
  private counters = { frames: 0, runs: 0 };

  constructor(options: CameraWorkerOptions) {
    super();
    this.opts = options;
    this.id = options.id;
    this.cameraId = options.cameraId;
    this.log = options.log ?? silent;
    this.backoff = new Backoff(options.backoff);
    this.fps = options.fps && options.fps > 0 ? options.fps : 5;
    this.liveFps = options.liveFps ?? 13;
    this.consumer = options.consumer;
  }

  get state(): CameraState {
    return this.current;
  }

  /** The newest picture, for snapshots and connection checks; undefined until one arrived. */
  latest(): Frame | undefined {
    return this.last && this.stabilise(this.last);
  }

  /** The ffmpeg process id while one runs (diagnostics, tests). */
  get pid(): number | undefined {
    return this.run?.child.pid;
  }

  get stats(): { frames: number; runs: number; fps: number | undefined } {
    return { ...this.counters, fps: this.run?.fps };
  }

  setConsumer(consumer: FrameConsumer | undefined): void {
    this.consumer = consumer;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const tick = Math.max(50, Math.min(1000, this.stallTimeoutMs / 4, this.firstFrameTimeoutMs / 4));
    this.watchdog = setInterval(() => this.checkProgress(), tick);
    this.watchdog.unref();
    this.spawn();
  }

  /** Stops the stream: ffmpeg gets SIGTERM, then SIGKILL; resolves once the process is gone. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.retryTimer);
    clearInterval(this.watchdog);
    this.retryTimer = this.watchdog = undefined;
    const run = this.run;
    if (run) await stopFfmpeg(run.child, this.opts.stopGraceMs ?? 2000);
    if (this.privateDir) rmSync(this.privateDir, { recursive: true, force: true });
    this.privateDir = undefined;
  }

  /**
   * Live view: `listener` gets every picture, at `liveFps` (13 by default) while at least one listener is
   * registered; the consumer still gets the detect rate. Returns the function that ends the subscription. Changing
   * the rate restarts ffmpeg (about a second without pictures), so live costs nothing while nobody watches.
   */
  watchLive(listener: FrameConsumer): () => void {
    this.live.add(listener);
    if (this.live.size === 1) this.adjustRate();
    return () => {
      if (this.live.delete(listener) && this.live.size === 0) this.adjustRate();
    };
  }

  private get firstFrameTimeoutMs(): number {
    return this.opts.firstFrameTimeoutMs ?? 15_000;
  }

  private get stallTimeoutMs(): number {
    return this.opts.stallTimeoutMs ?? 10_000;
  }

  private wantedFps(): number {
    return this.live.size > 0 ? Math.max(this.fps, this.liveFps) : this.fps;
  }

  private adjustRate(): void {
    const run = this.run;
    // No process (waiting to retry) or one being killed: the next start picks the wanted rate.
    if (!this.running || !run || run.restart || run.killedFor || run.fps === this.wantedFps()) return;
    run.restart = true;
    void stopFfmpeg(run.child, this.opts.stopGraceMs ?? 2000);
  }

  private spawn(): void {
    const { source } = this.opts;
    const fps = this.wantedFps();
    // ffmpeg's socket timeout stays behind the watchdogs, so that a silent camera is reported by them.
    const ioTimeoutMs = Math.max(this.firstFrameTimeoutMs, this.stallTimeoutMs) + 5000;
    const runNumber = this.counters.runs + 1;
    const socketPath = this.transport() === 'socket' ? join(this.dir(), `${runNumber}.sock`) : undefined;
    const url = rtspUrl(source);
    const input = hasCredentials(url) ? writeStreamScript(url, this.dir(), String(runNumber), { ioTimeoutMs, ffmpegPath: this.opts.ffmpegPath }) : url;
    const args = decodeArgs(input, { fps, maxWidth: this.opts.maxWidth, rotate: this.opts.rotate, ioTimeoutMs, ffmpegPath: this.opts.ffmpegPath, ...(socketPath ? { socketPath } : {}) });
    const clean = (line: string) => redact(line, [source.password]);
    const child = spawnFfmpeg(args, this.opts.ffmpegPath);
    const run: Run = {
      child,
      fps,
      startedAt: Date.now(),
      stderr: new LineTail(30, clean, (line) => this.log.debug({ camera: this.cameraId, ffmpeg: line }, 'ffmpeg')),
      ...(socketPath ? { socketPath } : {}),
      ...(typeof input === 'string' ? {} : { script: input.script }),
    };
    this.run = run;
    this.counters.runs++;
    this.log.debug({ camera: this.cameraId, url: describeSource(source), fps, pid: child.pid }, 'camera stream opening');

    const reader = new PpmReader(
      (image) => this.onImage(run, image),
      (width, height) => this.buffers.next(width * height * 3, this.last?.data),
    );
    const feed = (chunk: Buffer): void => {
      if (run.killedFor) return;
      try {
        reader.push(chunk);
      } catch (err) {
        this.kill(run, { code: 'decode_error', reason: `unreadable pictures from ffmpeg (${(err as Error).message})` });
      }
    };
    if (socketPath) this.connect(run, socketPath, feed);
    else child.stdout.on('data', feed);
    child.stderr.on('data', (chunk: Buffer) => run.stderr.push(chunk));
    child.once('error', (err: NodeJS.ErrnoException) => {
      run.spawnError = err;
    });
    child.once('close', (code, signal) => this.onExit(run, code, signal));
  }

  private onImage(run: Run, image: RawImage): void {
    if (run !== this.run) return;
    const now = Date.now();
    const frame: Frame = { cameraId: this.cameraId, width: image.width, height: image.height, data: image.data, at: new Date(now) };
    run.lastFrameAt = now;
    this.counters.frames++;
    this.last = frame;
    if (run.firstFrameAt === undefined) {
      run.firstFrameAt = now;
      this.setState({ connected: true, code: 'ok' });
    }
    // Live view keeps the newest frame until it uploads it: it gets a stable copy (only while someone watches).
    if (this.live.size > 0) this.stabilise(frame);
    for (const listener of this.live) this.deliver(listener, frame);
    if (this.consumer && this.dueForConsumer(run, now)) this.deliver(this.consumer, frame);
  }

  /** Gives `frame` its own copy of its pixels (once), so that it stays valid after the ring moves on. */
  private stabilise(frame: Frame): Frame {
    if (!this.stable.has(frame)) {
      frame.data = Buffer.from(frame.data);
      this.stable.add(frame);
    }
    return frame;
  }

  /** While ffmpeg runs faster than the detect rate (live view), pass the consumer `fps` pictures a second. */
  private dueForConsumer(run: Run, now: number): boolean {
    if (run.fps <= this.fps) return true;
    if (now < this.nextConsumerAt) return false;
    const interval = 1000 / this.fps;
    this.nextConsumerAt = this.nextConsumerAt + interval < now - interval ? now + interval : this.nextConsumerAt + interval;
    return true;
  }

  private deliver(listener: FrameConsumer, frame: Frame): void {
    try {
      listener(frame);
    } catch (err) {
      this.log.error({ err, camera: this.cameraId }, 'frame consumer failed');
    }
  }

  private checkProgress(): void {
    const run = this.run;
    if (!run || run.killedFor || run.restart) return;
    const now = Date.now();
    if (run.firstFrameAt === undefined) {
      if (now - run.startedAt > this.firstFrameTimeoutMs) this.kill(run, REASONS.noAnswer);
    } else if (now - (run.lastFrameAt ?? run.firstFrameAt) > this.stallTimeoutMs) {
      this.kill(run, REASONS.stalled);
    }
  }

  private kill(run: Run, why: Explanation): void {
    run.killedFor = why;
    void stopFfmpeg(run.child, this.opts.stopGraceMs ?? 2000);
  }

  private transport(): 'socket' | 'pipe' {
    return this.opts.transport ?? (process.platform === 'win32' ? 'pipe' : 'socket');
  }

  /** The private directory, made on first use (short: a Unix socket path must stay under ~100 bytes). */
  private dir(): string {
    return (this.privateDir ??= mkdtempSync(join(tmpdir(), 'footfall-cam-')));
  }

  /** Pictures over the socket: into one read buffer, reused for every read; PpmReader copies at once. */
  private connect(run: Run, path: string, feed: (chunk: Buffer) => void): void {
    connectPictureSocket(path, {
      buffer: (this.readBuffer ??= Buffer.allocUnsafe(256 * 1024)),
      alive: () => !run.exited && run === this.run,
      onChunk: feed,
      onConnect: (socket) => (run.socket = socket),
    });
  }

  private onExit(run: Run, code: number | null, signal: NodeJS.Signals | null): void {
    run.exited = true;
    run.socket?.destroy();
    if (run.socketPath) rmSync(run.socketPath, { force: true });
    if (run.script) rmSync(run.script, { force: true });
    run.stderr.end();
    if (run !== this.run) return;
    this.run = undefined;
    if (!this.running) return;
    if (run.restart) {
      this.spawn();
      return;
    }
    const connectedFor = run.firstFrameAt === undefined ? 0 : Date.now() - run.firstFrameAt;
    if (connectedFor >= (this.opts.stableMs ?? 30_000)) this.backoff.reset();
    const why = this.explain(run);
    this.setState({ connected: false, ...why });
    const delay = this.backoff.next();
    this.log.debug({ camera: this.cameraId, code, signal, delay, stderr: run.stderr.lines.slice(-5) }, 'camera stream ended');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.running) this.spawn();
    }, delay);
    this.retryTimer.unref();
  }

  private explain(run: Run): Explanation {
    if (run.spawnError) {
      return run.spawnError.code === 'ENOENT' ? REASONS.noFfmpeg : { code: 'failed', reason: `ffmpeg would not start (${run.spawnError.code ?? run.spawnError.message})` };
    }
    const fromLog = explainFfmpeg(run.stderr.lines, run.firstFrameAt !== undefined);
    // A watchdog kill names the symptom; undecodable video in the log is the better explanation.
    if (run.killedFor && fromLog.code !== 'decode_error') return run.killedFor;
    return fromLog;
  }

  private setState(next: Omit<CameraState, 'since'>): void {
    const prev = this.current;
    if (prev.connected === next.connected && prev.code === next.code && prev.reason === next.reason) return;
    this.current = { ...next, since: new Date() };
    if (next.connected) this.log.info({ camera: this.cameraId }, 'camera connected');
    else this.log.warn({ camera: this.cameraId, url: describeSource(this.opts.source), reason: next.reason }, 'camera not connected');
    this.emit('state', this.current);
  }
}
