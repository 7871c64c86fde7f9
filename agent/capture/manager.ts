/**
 * The cameras the shop PC should be reading, made so: `apply(list)` starts a worker for every enabled camera,
 * restarts only the cameras whose settings changed (revision bump), and stops the ones that were disabled or
 * removed (tombstones). The list is complete every time, as the camera list route gives it.
 */
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import type { BackoffOptions } from './backoff.js';
import type { Rotation } from './ffmpeg.js';
import type { Frame, FrameConsumer } from './frame.js';
import { CameraWorker, type CameraState, type CameraWorkerOptions, type Log } from './worker.js';

/** One camera as capture needs it (the protocol's CameraConfig maps onto this field for field). */
export interface CameraSpec {
  /** uuid: the key. */
  id: string;
  camera_id: string;
  host: string;
  port: number;
  path: string;
  username: string;
  password: string;
  max_width: number;
  enabled: boolean;
  revision: number;
  /** Detect rate for this camera (the camera's `tuning.detect_fps`); default: the manager's `fps`. */
  fps?: number;
  rotate?: Rotation;
}

export interface CaptureManagerOptions {
  /** Gets the pictures of every camera at its detect rate. */
  consumer?: FrameConsumer;
  /** Default detect rate, default 5. */
  fps?: number;
  ffmpegPath?: string;
  log?: Log;
  /** Passed to every worker (timeouts, backoff); mostly for tests. */
  worker?: Pick<CameraWorkerOptions, 'firstFrameTimeoutMs' | 'stallTimeoutMs' | 'stableMs' | 'stopGraceMs' | 'liveFps'> & {
    backoff?: BackoffOptions;
  };
}

export interface ApplyResult {
  started: string[];
  restarted: string[];
  stopped: string[];
}

export interface CameraStatus {
  id: string;
  camera_id: string;
  state: CameraState;
}

interface ManagerEvents {
  /** A running camera's state changed. */
  state: [status: CameraStatus];
}

interface Entry {
  worker: CameraWorker;
  /** The settings the worker was started with: any difference restarts it. */
  fingerprint: string;
}

export class CaptureManager extends EventEmitter<ManagerEvents> {
  private readonly entries = new Map<string, Entry>();
  private readonly opts: CaptureManagerOptions;
  private readonly log: Log;
  private consumer: FrameConsumer | undefined;
  /** apply() and stopAll() run one at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: CaptureManagerOptions = {}) {
    super();
    this.opts = options;
    this.log = options.log ?? pino({ level: 'silent' });
    this.consumer = options.consumer;
  }

  /** Makes the running cameras match `cameras` (the complete list; anything absent is stopped). */
  apply(cameras: readonly CameraSpec[]): Promise<ApplyResult> {
    return this.serial(() => this.reconcile(cameras));
  }

  /** Stops every camera; resolves when no ffmpeg is left. */
  stopAll(): Promise<void> {
    return this.serial(async () => {
      await this.reconcile([]);
    });
  }

  /** Swaps the consumer of every camera (a placement check borrows the pictures for a while). */
  setConsumer(consumer: FrameConsumer | undefined): void {
    this.consumer = consumer;
    for (const { worker } of this.entries.values()) worker.setConsumer(consumer);
  }

  worker(id: string): CameraWorker | undefined {
    return this.entries.get(id)?.worker;
  }

  latest(id: string): Frame | undefined {
    return this.worker(id)?.latest();
  }

  /** Every running camera and its state. */
  statuses(): CameraStatus[] {
    return [...this.entries.values()].map(({ worker }) => ({ id: worker.id, camera_id: worker.cameraId, state: worker.state }));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async reconcile(cameras: readonly CameraSpec[]): Promise<ApplyResult> {
    const result: ApplyResult = { started: [], restarted: [], stopped: [] };
    const wanted = new Map(cameras.filter((c) => c.enabled).map((c) => [c.id, c]));
    const stopping: Promise<void>[] = [];

    for (const [id, entry] of this.entries) {
      const spec = wanted.get(id);
      if (spec && fingerprint(spec, this.opts.fps) === entry.fingerprint) continue;
      this.entries.delete(id);
      entry.worker.removeAllListeners('state');
      stopping.push(entry.worker.stop());
      (spec ? result.restarted : result.stopped).push(id);
    }
    // Old processes go before new ones start, so a camera that allows one stream at a time is not refused.
    await Promise.all(stopping);

    for (const spec of wanted.values()) {
      if (this.entries.has(spec.id)) continue;
      const worker = this.create(spec);
      this.entries.set(spec.id, { worker, fingerprint: fingerprint(spec, this.opts.fps) });
      worker.start();
      if (!result.restarted.includes(spec.id)) result.started.push(spec.id);
    }
    if (result.started.length || result.restarted.length || result.stopped.length) {
      this.log.info(result, 'cameras applied');
    }
    return result;
  }

  private create(spec: CameraSpec): CameraWorker {
    const worker = new CameraWorker({
      ...this.opts.worker,
      id: spec.id,
      cameraId: spec.camera_id,
      source: { host: spec.host, port: spec.port, path: spec.path, username: spec.username, password: spec.password },
      maxWidth: spec.max_width,
      fps: spec.fps ?? this.opts.fps,
      rotate: spec.rotate,
      consumer: this.consumer,
      ffmpegPath: this.opts.ffmpegPath,
      log: this.log,
    });
    worker.on('state', (state) => this.emit('state', { id: spec.id, camera_id: spec.camera_id, state }));
    return worker;
  }
}

/** Everything that changes how the stream is opened or decoded (the revision covers edits at head office). */
function fingerprint(spec: CameraSpec, defaultFps: number | undefined): string {
  return JSON.stringify([
    spec.revision,
    spec.camera_id,
    spec.host,
    spec.port,
    spec.path,
    spec.username,
    spec.password,
    spec.max_width,
    spec.fps ?? defaultFps ?? null,
    spec.rotate ?? 0,
  ]);
}
