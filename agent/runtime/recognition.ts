/**
 * The pluggable frame consumer. When face models are installed (`<models dir>/manifest.json`, agent/models), frames
 * go to the vision FramePipeline (agent/vision) and its visits come out of `on('visit')`; otherwise a null consumer
 * counts frames, and the heartbeat says honestly that recognition is not running and why.
 *
 * `probe()` serves placement checks: it looks at one camera's frames for a while with the same engine and says how
 * many faces it saw, how many were too poor to use and mostly why (too small, blurred, turned away, hard to see).
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Frame } from '../capture/frame.js';
import { loadManifest } from '../models/fetch.js';
import type { VisionEngine } from '../vision/engine.js';
import type { FramePipeline } from '../vision/pipeline.js';
import type { Visit } from '../vision/types.js';
import { MotionGate } from './motion.js';

export type Cause = 'size' | 'sharpness' | 'pose' | 'detector';

export interface ProbeResult {
  /** Frames the probe received / analysed. */
  frames: number;
  analysed: number;
  /** Faces seen (one per face per analysed frame). */
  faces: number;
  /** Of those, below the quality gate. */
  below: number;
  /** Below-gate faces by their weakest part. */
  causes: Record<Cause, number>;
}

export interface PlacementProbe {
  consume(frame: Frame): void;
  /** Stops taking frames, waits for the analysis in progress, and returns what was seen. */
  finish(): Promise<ProbeResult>;
}

export interface GateSummary {
  fraction_below_gate: number | null;
  worst_camera_id?: string;
}

interface RecognitionEvents {
  visit: [visit: Visit];
}

export abstract class Recognition extends EventEmitter<RecognitionEvents> {
  /** The model set in use (a visit's and the heartbeat's `recognition_model`); '' when none is loaded. */
  abstract readonly model: string;
  abstract readonly running: boolean;
  /** Why recognition is not running, for the heartbeat (at most 300 characters). */
  abstract readonly problem: string | undefined;
  protected readonly frameCounts = new Map<string, number>();

  /** The frame consumer for the CaptureManager. */
  readonly consume = (frame: Frame): void => {
    this.frameCounts.set(frame.cameraId, (this.frameCounts.get(frame.cameraId) ?? 0) + 1);
    this.take(frame);
  };

  /**
   * Count-only (the company's recognition `off`, docs/privacy.md): no face embedding is computed at all (neither a
   * visit's nor the short-term one that joins a person's tracks) and no face JPEG is encoded; visits are still made.
   */
  setCountOnly(on: boolean): void {
    void on;
  }

  /** Face embeddings computed since start (the embedding model's calls), for stats and tests. */
  embeddings(): number {
    return 0;
  }

  /** Frames received per camera_id since start. */
  frames(): Record<string, number> {
    return Object.fromEntries(this.frameCounts);
  }

  protected abstract take(frame: Frame): void;
  /** Share of faces below the gate over the last hour, worst camera. */
  abstract gate(): GateSummary;
  /** A placement probe; undefined when no recognition is available. */
  abstract probe(): PlacementProbe | undefined;
  /** A removed camera: end its tracks (their visits are emitted) and forget it. */
  abstract forget(cameraId: string): void;
  /** Emits the visits of tracks still open and releases the models. */
  abstract close(): Promise<void>;
}

/** No recognition: frames are counted, nothing else. */
export class NullRecognition extends Recognition {
  readonly model = '';
  readonly running = false;

  constructor(readonly problem: string) {
    super();
  }

  protected take(): void {}
  gate(): GateSummary {
    return { fraction_below_gate: null };
  }
  probe(): undefined {
    return undefined;
  }
  forget(cameraId: string): void {
    this.frameCounts.delete(cameraId);
  }
  async close(): Promise<void> {}
}

export class VisionRecognition extends Recognition {
  readonly running = true;
  readonly problem = undefined;
  readonly pipeline: FramePipeline;

  /** Motion gating before detection (motion.ts); undefined when switched off. */
  readonly motion: MotionGate | undefined;

  constructor(
    readonly engine: VisionEngine,
    log: Logger,
    options: { faceImages: boolean; Pipeline: typeof FramePipeline; motionGate?: boolean },
  ) {
    super();
    this.motion = options.motionGate === false ? undefined : new MotionGate();
    this.pipeline = new options.Pipeline({ engine, config: { faceImages: options.faceImages } });
    this.pipeline.on('visit', (visit) => this.emit('visit', visit));
    this.pipeline.on('error', (err) => log.warn({ err: err.message }, 'recognition problem'));
  }

  get model(): string {
    return this.engine.modelSet;
  }

  override setCountOnly(on: boolean): void {
    this.pipeline.setCountOnly(on);
  }

  override embeddings(): number {
    return this.pipeline.embeddingCalls;
  }

  protected take(frame: Frame): void {
    const id = frame.cameraId;
    // The gate is told what the detector has analysed: frames after a change go until it has answered (motion.ts).
    if (this.motion && !this.motion.pass(frame, this.following(id), undefined, this.pipeline.analysedUpTo(id))) return;
    this.pipeline.consume(frame);
  }

  /** Whether the pipeline has a track open on this camera (then every frame goes, moving or not). */
  private following(cameraId: string): boolean {
    return (this.pipeline.stats().cameras[cameraId]?.tracks_active ?? 0) > 0;
  }

  gate(): GateSummary {
    const stats = this.pipeline.stats();
    return stats.worst_camera_id === undefined
      ? { fraction_below_gate: stats.fraction_below_gate }
      : { fraction_below_gate: stats.fraction_below_gate, worst_camera_id: stats.worst_camera_id };
  }

  probe(): PlacementProbe {
    return new EngineProbe(this.engine);
  }

  forget(cameraId: string): void {
    this.frameCounts.delete(cameraId);
    this.motion?.forget(cameraId);
    this.pipeline.removeCamera(cameraId);
  }

  async close(): Promise<void> {
    await this.pipeline.close();
    await this.engine.close();
  }
}

/** Analyses one frame at a time (the newest waits, older ones are skipped) and tallies the faces. */
class EngineProbe implements PlacementProbe {
  private busy: Promise<void> | undefined;
  private pending: Uint8Array | undefined;
  private pendingSize = { width: 0, height: 0 };
  private done = false;
  private readonly result: ProbeResult = { frames: 0, analysed: 0, faces: 0, below: 0, causes: { size: 0, sharpness: 0, pose: 0, detector: 0 } };

  constructor(private readonly engine: VisionEngine) {}

  consume(frame: Frame): void {
    if (this.done) return;
    this.result.frames++;
    const size = frame.width * frame.height * 3;
    if (frame.data.length < size) return;
    // Our own copy: the engine takes its buffer over.
    this.pending = new Uint8Array(frame.data.subarray(0, size));
    this.pendingSize = { width: frame.width, height: frame.height };
    if (!this.busy) this.busy = this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending) {
        const data = this.pending;
        this.pending = undefined;
        try {
          const { faces } = await this.engine.analyze({ ...this.pendingSize, data });
          this.result.analysed++;
          for (const face of faces) {
            this.result.faces++;
            if (face.passesGate) continue;
            this.result.below++;
            const p = face.qualityParts;
            const parts: [Cause, number][] = [
              ['size', p.size],
              ['sharpness', p.sharpness],
              ['pose', p.pose],
              ['detector', p.detector],
            ];
            parts.sort((a, b) => a[1] - b[1]);
            this.result.causes[parts[0]![0]]++;
          }
        } catch {
          // a frame the engine could not analyse: skipped
        }
      }
    } finally {
      this.busy = undefined;
    }
  }

  async finish(): Promise<ProbeResult> {
    this.done = true;
    this.pending = undefined;
    await this.busy;
    return structuredClone(this.result);
  }
}

export interface LoadRecognitionOptions {
  /** Folder with manifest.json and the models; false: recognition switched off. */
  modelsDir: string | false;
  log: Logger;
  /** Engine worker threads; default the engine's (cores - 1, 1 to 4). */
  workers?: number;
  /** Attach face crops to visits (only when head office stores face images). */
  faceImages: boolean;
}

/** The vision pipeline when the models load, else a NullRecognition that says why. */
export async function loadRecognition(options: LoadRecognitionOptions): Promise<Recognition> {
  const { log } = options;
  if (options.modelsDir === false) return new NullRecognition('recognition is switched off on this shop PC');
  const dir = options.modelsDir;
  try {
    await loadManifest(dir);
  } catch (err) {
    const problem = `face models not installed: run footfall models fetch --dir ${dir}`;
    log.warn({ problem, detail: (err as Error).message }, 'recognition not running: counting frames only');
    return new NullRecognition(problem.slice(0, 300));
  }
  try {
    const started = Date.now();
    // Loaded only now: onnxruntime and the vision code cost ~25 MB that a PC without models does not need.
    const [{ createVisionEngine }, { FramePipeline: Pipeline }] = await Promise.all([import('../vision/engine.js'), import('../vision/pipeline.js')]);
    const engine = await createVisionEngine({ modelsDir: dir, ...(options.workers !== undefined ? { workers: options.workers } : {}) });
    log.info({ model: engine.modelSet, workers: engine.workers, ms: Date.now() - started }, 'recognition running');
    return new VisionRecognition(engine, log, { faceImages: options.faceImages, Pipeline });
  } catch (err) {
    const problem = `face models would not load: ${(err as Error).message}`.slice(0, 300);
    log.error({ problem }, 'recognition not running: counting frames only');
    return new NullRecognition(problem);
  }
}
