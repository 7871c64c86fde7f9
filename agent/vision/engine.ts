/**
 * Where the face analysis runs. onnxruntime-node's `session.run` blocks the
 * calling thread for the whole inference (it is a synchronous native call
 * deferred with setImmediate), so the agent runs FaceAnalyzer in a small pool
 * of worker threads and keeps the event loop free for capture, MQTT and HTTP.
 * The CLI and some tests use the same FaceAnalyzer inline.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startThread } from '../thread.js';
import { FaceAnalyzer, resolveAnalyzerConfig } from './analyzer.js';
import type { AnalyzerConfig, AnalyzerConfigInput, AttributeParts, ContextRegions, FrameAnalysis, FrameScan, StageTimes } from './analyzer.js';
import type { FrameRegion } from './image.js';
import { ModelSessions } from './models.js';
import type { ModelTimings } from './models.js';
import type { FaceAttributes, FivePoints, RgbImage } from './types.js';
import { flushSubnormalsHere } from '../models/subnormals.js';

export interface EngineStats {
  /** Cumulative time per model inside `session.run` (ms), over all workers. */
  models: ModelTimings;
  /** Cumulative time per analysis stage (ms), over all workers. */
  stages: StageTimes;
  /** CPU time of the worker threads (ms, summed; Linux only; sampled at scheduler ticks, exact over long runs). */
  cpuMs?: number;
}

export interface VisionEngine {
  /** Model set id from the manifest (the visit's `recognition_model`). */
  readonly modelSet: string;
  readonly config: AnalyzerConfig;
  /** Number of worker threads (0: inline). */
  readonly workers: number;
  /**
   * Faces in an RGB image, largest first, with their aligned crops and context regions (photos, the CLI). A worker
   * engine reads a buffer from `frameBuffer` in place; any other buffer it takes over (detaches, and hands back as
   * `input`) when the buffer is whole, else copies.
   */
  analyze(img: RgbImage): Promise<FrameAnalysis>;
  /**
   * Faces in an RGB image, largest first, without pixels: what the pipeline asks of every frame (buffers as
   * `analyze`). It cuts out the crop regions of the faces it keeps and hands them to embedFace and attributes.
   */
  scan(img: RgbImage): Promise<FrameScan>;
  /**
   * A frame buffer in shared memory that the worker threads read in place: no copy and no transfer per frame, and
   * no 0.7 MB of transferred memory per frame for the garbage collector to account. Fill it, analyze it, and
   * reuse it once that analysis has settled. Undefined on an engine without workers.
   */
  frameBuffer?(size: number): Uint8Array;
  /** The workers let go of a buffer from frameBuffer (call when it will not be analysed again). */
  releaseFrameBuffer?(data: Uint8Array): void;
  /** L2-normalised embedding of an aligned crop. */
  embed(aligned: RgbImage): Promise<Float32Array>;
  /** L2-normalised embedding of a face from its crop region (FaceFound.crop cut out of the frame) and landmarks. */
  embedFace(region: FrameRegion, landmarks: FivePoints): Promise<Float32Array>;
  attributes(context: RgbImage, regions: ContextRegions, parts?: AttributeParts): Promise<FaceAttributes>;
  stats(): Promise<EngineStats>;
  close(): Promise<void>;
}

export interface EngineOptions {
  /** Folder with manifest.json and the models (`footfall models fetch`). */
  modelsDir: string;
  /** Worker threads; 0 runs inline on the calling thread. Default defaultWorkerCount(). */
  workers?: number;
  /** onnxruntime intra-op threads per session (per worker); default 1. */
  intraOpThreads?: number;
  config?: AnalyzerConfigInput;
  /**
   * Benchmark mode: stage and model times are process CPU time (getrusage)
   * instead of wall time; meaningful when the analysis is the only busy thread
   * (the inline engine with nothing else running).
   */
  measureCpu?: boolean;
}

/**
 * One worker per core but one, at least 1 and at most 4: the main thread needs
 * a little CPU for capture and tracking, and each worker holds its own copy of
 * the models (~150 MB resident).
 */
export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

export async function createVisionEngine(opts: EngineOptions): Promise<VisionEngine> {
  // Before any worker exists: the workers inherit the mode (agent/models/subnormals.ts).
  await flushSubnormalsHere();
  const workers = opts.workers ?? defaultWorkerCount();
  if (workers <= 0) return InlineEngine.create(opts);
  return WorkerPoolEngine.create({ ...opts, workers });
}

function emptyStages(): StageTimes {
  return { detectPrep: 0, detect: 0, landmarks: 0, align: 0, quality: 0, embed: 0, attributes: 0 };
}

function addStats(into: EngineStats, s: EngineStats): void {
  for (const [k, v] of Object.entries(s.models)) {
    const t = (into.models[k as keyof ModelTimings] ??= { runs: 0, ms: 0 });
    t.runs += v.runs;
    t.ms += v.ms;
  }
  for (const k of Object.keys(s.stages) as (keyof StageTimes)[]) into.stages[k] += s.stages[k];
  if (s.cpuMs !== undefined) into.cpuMs = (into.cpuMs ?? 0) + s.cpuMs;
}

/**
 * FaceAnalyzer on the calling thread: blocks it during inference (fine for the
 * CLI). Calls run one at a time, in order, as in a worker.
 */
export class InlineEngine implements VisionEngine {
  readonly workers = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private constructor(readonly analyzer: FaceAnalyzer) {}

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const p = this.queue.then(f);
    this.queue = p.catch(() => undefined);
    return p;
  }

  static async create(opts: EngineOptions): Promise<InlineEngine> {
    const models = await ModelSessions.load({ modelsDir: opts.modelsDir, intraOpThreads: opts.intraOpThreads ?? 1 });
    return new InlineEngine(new FaceAnalyzer(models, opts.config, { measureCpu: opts.measureCpu === true }));
  }

  get modelSet(): string {
    return this.analyzer.modelSet;
  }
  get config(): AnalyzerConfig {
    return this.analyzer.config;
  }
  analyze(img: RgbImage): Promise<FrameAnalysis> {
    return this.serial(() => this.analyzer.analyze(img));
  }
  scan(img: RgbImage): Promise<FrameScan> {
    return this.serial(() => this.analyzer.scan(img));
  }
  embed(aligned: RgbImage): Promise<Float32Array> {
    return this.serial(() => this.analyzer.embed(aligned));
  }
  embedFace(region: FrameRegion, landmarks: FivePoints): Promise<Float32Array> {
    return this.serial(() => this.analyzer.embedFace(region, landmarks));
  }
  attributes(context: RgbImage, regions: ContextRegions, parts?: AttributeParts): Promise<FaceAttributes> {
    return this.serial(() => this.analyzer.attributes(context, regions, parts));
  }
  async stats(): Promise<EngineStats> {
    return structuredClone({ models: this.analyzer.models.timings, stages: this.analyzer.stageMs });
  }

  async close(): Promise<void> {
    await this.queue;
    await this.analyzer.models.release();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Worker pool.

/** `pixels`: analyze (faces with aligned crops and context regions) or scan (no pixels). */
export type WorkerRequest =
  | { id: number; op: 'analyze'; img: RgbImage; pixels: boolean }
  | { id: number; op: 'analyze-shared'; frame: number; width: number; height: number; pixels: boolean }
  | { id: number; op: 'embed'; aligned: RgbImage }
  | { id: number; op: 'embed-face'; region: FrameRegion; landmarks: FivePoints }
  | { id: number; op: 'attributes'; context: RgbImage; regions: ContextRegions; parts?: AttributeParts }
  | { id: number; op: 'stats' };

type RequestBody = WorkerRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

/** Messages without a reply: shared frame buffers the worker keeps (by number) until told to forget them. */
export type WorkerNotice = { op: 'frame-buffer'; frame: number; buffer: SharedArrayBuffer } | { op: 'forget-frame'; frame: number };

export type WorkerReply =
  | { type: 'ready'; modelSet: string }
  | { type: 'init-error'; message: string }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; message: string };

export interface WorkerInit {
  modelsDir: string;
  intraOpThreads: number;
  config: AnalyzerConfig;
  measureCpu: boolean;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Shared frame buffers (by number) this worker holds. */
  frames: Set<number>;
}

/** Does `data` own its whole ArrayBuffer (so it can be transferred without taking anything else with it)? */
function ownsBuffer(data: Uint8Array): boolean {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer;
}

export class WorkerPoolEngine implements VisionEngine {
  private nextId = 1;
  private closed = false;
  private readonly slots: Slot[] = [];
  /** Buffers made by frameBuffer, and their numbers. */
  private readonly sharedFrames = new WeakMap<SharedArrayBuffer, number>();
  private nextFrame = 1;

  private constructor(
    private readonly init: WorkerInit,
    readonly modelSet: string,
  ) {}

  get config(): AnalyzerConfig {
    return this.init.config;
  }
  get workers(): number {
    return this.slots.length;
  }

  static async create(opts: EngineOptions & { workers: number }): Promise<WorkerPoolEngine> {
    const init: WorkerInit = {
      modelsDir: opts.modelsDir,
      intraOpThreads: opts.intraOpThreads ?? 1,
      config: resolveAnalyzerConfig(opts.config),
      measureCpu: opts.measureCpu === true,
    };
    const started = await Promise.allSettled(Array.from({ length: opts.workers }, () => WorkerPoolEngine.start(init)));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const ok = started.filter((s): s is PromiseFulfilledResult<{ worker: Worker; modelSet: string }> => s.status === 'fulfilled');
    if (failed) {
      await Promise.all(ok.map((s) => s.value.worker.terminate()));
      throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
    }
    const engine = new WorkerPoolEngine(init, ok[0]!.value.modelSet);
    for (const s of ok) engine.adopt(s.value.worker);
    return engine;
  }

  private static start(init: WorkerInit): Promise<{ worker: Worker; modelSet: string }> {
    const worker = startThread(new URL('./worker.js', import.meta.url), init);
    return new Promise((resolve, reject) => {
      const onMessage = (msg: WorkerReply): void => {
        if (msg.type === 'ready') {
          cleanup();
          resolve({ worker, modelSet: msg.modelSet });
        } else if (msg.type === 'init-error') {
          cleanup();
          void worker.terminate();
          reject(new Error(msg.message));
        }
      };
      const onError = (err: Error): void => {
        cleanup();
        reject(err);
      };
      const onExit = (code: number): void => {
        cleanup();
        reject(new Error(`vision worker exited with code ${code} while starting`));
      };
      const cleanup = (): void => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  private adopt(worker: Worker): void {
    const slot: Slot = { worker, pending: new Map(), frames: new Set() };
    this.slots.push(slot);
    worker.on('message', (msg: WorkerReply) => {
      if (msg.type !== 'result') return;
      const p = slot.pending.get(msg.id);
      if (!p) return;
      slot.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.value);
      else p.reject(new Error(msg.message));
    });
    const fail = (err: Error): void => {
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
      const i = this.slots.indexOf(slot);
      if (i < 0) return; // already handled ('error' is followed by 'exit')
      this.slots.splice(i, 1);
      void worker.terminate();
      // Replace a crashed worker so one bad frame does not stop recognition for good.
      this.replace();
    };
    worker.on('error', (err) => fail(err));
    worker.on('exit', (code) => fail(new Error(`vision worker exited with code ${code}`)));
  }

  /** Start a worker in place of one that died; retried every 5 s while it fails (models being repaired...). */
  private replace(): void {
    if (this.closed) return;
    WorkerPoolEngine.start(this.init).then(
      (s) => (this.closed ? void s.worker.terminate() : this.adopt(s.worker)),
      () => {
        if (!this.closed) setTimeout(() => this.replace(), 5000).unref();
      },
    );
  }

  /** The worker with the fewest requests outstanding. */
  private pick(): Slot | undefined {
    return this.slots.reduce<Slot | undefined>((best, s) => (!best || s.pending.size < best.pending.size ? s : best), undefined);
  }

  private call<T>(req: RequestBody, transfer: ArrayBuffer[] = [], slot?: Slot): Promise<T> {
    if (this.closed) return Promise.reject(new Error('The vision engine is closed.'));
    const target = slot ?? this.pick();
    if (!target) return Promise.reject(new Error('No vision worker is running (a worker crashed and is being restarted).'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      target.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      target.worker.postMessage({ ...req, id } as WorkerRequest, transfer);
    });
  }

  analyze(img: RgbImage): Promise<FrameAnalysis> {
    return this.frameRequest(img, true);
  }
  scan(img: RgbImage): Promise<FrameScan> {
    return this.frameRequest(img, false);
  }
  private frameRequest<T>(img: RgbImage, pixels: boolean): Promise<T> {
    const buffer = img.data.buffer instanceof SharedArrayBuffer ? img.data.buffer : undefined;
    const frame = buffer && this.sharedFrames.get(buffer);
    if (buffer && frame !== undefined && img.data.byteOffset === 0 && !this.closed) {
      const target = this.pick();
      if (target && !target.frames.has(frame)) {
        // Sent once per worker; requests on a port are served in order, so it is there for the analysis below.
        target.frames.add(frame);
        target.worker.postMessage({ op: 'frame-buffer', frame, buffer } satisfies WorkerNotice);
      }
      return this.call({ op: 'analyze-shared', frame, width: img.width, height: img.height, pixels }, [], target);
    }
    return this.call({ op: 'analyze', img, pixels }, ownsBuffer(img.data) ? [img.data.buffer as ArrayBuffer] : []);
  }
  frameBuffer(size: number): Uint8Array {
    const buffer = new SharedArrayBuffer(size);
    this.sharedFrames.set(buffer, this.nextFrame++);
    return new Uint8Array(buffer);
  }
  releaseFrameBuffer(data: Uint8Array): void {
    const buffer = data.buffer instanceof SharedArrayBuffer ? data.buffer : undefined;
    const frame = buffer && this.sharedFrames.get(buffer);
    if (!buffer || frame === undefined) return;
    this.sharedFrames.delete(buffer);
    for (const s of this.slots) {
      if (s.frames.delete(frame)) s.worker.postMessage({ op: 'forget-frame', frame } satisfies WorkerNotice);
    }
  }
  embed(aligned: RgbImage): Promise<Float32Array> {
    return this.call({ op: 'embed', aligned });
  }
  embedFace(region: FrameRegion, landmarks: FivePoints): Promise<Float32Array> {
    return this.call({ op: 'embed-face', region, landmarks });
  }
  attributes(context: RgbImage, regions: ContextRegions, parts?: AttributeParts): Promise<FaceAttributes> {
    return this.call({ op: 'attributes', context, regions, ...(parts ? { parts } : {}) });
  }
  async stats(): Promise<EngineStats> {
    const all = await Promise.all(this.slots.map((s) => this.call<EngineStats>({ op: 'stats' }, [], s)));
    const total: EngineStats = { models: {}, stages: emptyStages() };
    for (const s of all) addStats(total, s);
    return total;
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const slots = this.slots.splice(0);
    for (const s of slots) {
      for (const p of s.pending.values()) p.reject(new Error('The vision engine was closed.'));
      s.pending.clear();
      s.worker.removeAllListeners('exit');
      s.worker.removeAllListeners('error');
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}
