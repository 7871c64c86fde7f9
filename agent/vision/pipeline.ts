/**
 * FramePipeline: frames in (from the capture worker), visits out. Per camera
 * it analyses frames (in the engine's worker threads), tracks faces, keeps a
 * few of each track's best faces, and when the track ends emits one visit with
 * the averaged embedding, the best face's attributes and image.
 *
 * Back-pressure: at most one frame per camera is being analysed and at most one
 * waits (the newest; an older waiting frame is dropped and counted), so a slow
 * machine loses frames, never memory.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { l2normalize } from './analyzer.js';
import type { ContextRegions, FoundFace, FrameScan } from './analyzer.js';
import { genderFromScore } from './attributes.js';
import type { VisionEngine } from './engine.js';
import { cropRgb } from './image.js';
import type { FrameRegion } from './image.js';
import { encodeJpeg } from './io.js';
import { GateWindow } from './quality.js';
import { DEFAULT_TRACKER, FaceTracker } from './tracker.js';
import type { Track, TrackerConfig } from './tracker.js';
import type { FaceAttributes, FivePoints, Frame, RgbImage, Visit } from './types.js';

export interface PipelineConfig {
  tracker: TrackerConfig;
  /** Faces embedded per track (the best ones that passed the gate). */
  embedPerTrack: number;
  /** Minimum time between two embedded faces of a track, so they are not near-identical frames. */
  embedSpacingMs: number;
  /**
   * Embeddings of one track that disagree with the most central one by more than
   * this (cosine below it) are left out of the average: the tracker followed
   * someone else for a while (people crossing).
   */
  embedConsensus: number;
  /** A track still present after this long is reported then (once), and not again when it ends. */
  capMs: number;
  /** Tracks seen in fewer frames are dropped as noise (no visit). */
  minFrames: number;
  /** Attributes are computed when the best face's quality is at least this (may be below the gate). */
  attributesMinQuality: number;
  /** Attach the best face as a JPEG to each visit. */
  faceImages: boolean;
  /** Window of fraction_below_gate. */
  gateWindowMs: number;
  /** A camera that sends no frame for this long (wall clock) has its tracks ended. */
  idleMs: number;
}

export const DEFAULT_PIPELINE: PipelineConfig = {
  tracker: DEFAULT_TRACKER,
  embedPerTrack: 3,
  embedSpacingMs: 400,
  embedConsensus: 0.3,
  capMs: 30_000,
  minFrames: 2,
  attributesMinQuality: 0.3,
  faceImages: true,
  gateWindowMs: 3_600_000,
  idleMs: 5_000,
};

/** Dot product of two L2-normalised vectors. */
function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * The embeddings that agree with the most central one (the one with the
 * highest summed similarity to the others) at cosine >= minCosine.
 */
export function consensus(embeddings: Float32Array[], minCosine: number): Float32Array[] {
  if (embeddings.length <= 2) return embeddings.length === 2 && dot(embeddings[0]!, embeddings[1]!) < minCosine ? [embeddings[0]!] : embeddings;
  let anchor = 0;
  let bestSum = -Infinity;
  for (let i = 0; i < embeddings.length; i++) {
    let s = 0;
    for (let j = 0; j < embeddings.length; j++) if (j !== i) s += dot(embeddings[i]!, embeddings[j]!);
    if (s > bestSum) {
      bestSum = s;
      anchor = i;
    }
  }
  const a = embeddings[anchor]!;
  return embeddings.filter((e) => e === a || dot(a, e) >= minCosine);
}

/** L2-normalised mean of L2-normalised embeddings. */
export function averageEmbeddings(embeddings: Float32Array[]): Float32Array {
  const sum = new Float32Array(embeddings[0]!.length);
  for (const e of embeddings) for (let i = 0; i < sum.length; i++) sum[i]! += e[i]!;
  return l2normalize(sum);
}

export interface PipelineConfigInput extends Partial<Omit<PipelineConfig, 'tracker'>> {
  tracker?: Partial<TrackerConfig>;
}

export interface CameraStats {
  frames_received: number;
  frames_processed: number;
  /** Frames skipped because analysis was behind. */
  frames_dropped: number;
  /** Faces analysed (one per face per processed frame). */
  faces: number;
  /** Share of faces below the quality gate in the rolling window; null when none was seen. */
  fraction_below_gate: number | null;
  tracks_active: number;
  visits: number;
  visits_with_identity: number;
  /** Tracks dropped as noise (fewer than minFrames). */
  tracks_discarded: number;
  embeddings: number;
}

export interface PipelineStats extends Omit<CameraStats, 'fraction_below_gate'> {
  /** Worst camera's fraction_below_gate (what the shop shows); null when no camera saw a face in the window. */
  fraction_below_gate: number | null;
  worst_camera_id?: string;
  cameras: Record<string, CameraStats>;
}

/** A face a track keeps: its crop region cut out of the frame, from which the embedding, attributes and JPEG are made. */
interface FaceKeep {
  at: number;
  quality: number;
  passed: boolean;
  region: FrameRegion;
  regions: ContextRegions;
  landmarks: FivePoints;
}

interface TrackState {
  best?: FaceKeep;
  candidates: FaceKeep[];
  facesPassed: number;
  reported: boolean;
}

interface CameraState {
  id: string;
  tracker: FaceTracker<TrackState>;
  gate: GateWindow;
  busy: boolean;
  pending?: { img: RgbImage; at: number };
  /** Frame buffers back from analysis, reused for the next frames (no 0.7 MB allocation per frame). */
  pool: Uint8Array[];
  lastFrameAt: number;
  lastArrival: number;
  stats: Omit<CameraStats, 'fraction_below_gate' | 'tracks_active'>;
}

export interface FramePipelineEvents {
  visit: [Visit];
  error: [Error];
}

export interface FramePipelineOptions {
  engine: VisionEngine;
  config?: PipelineConfigInput;
}

export class FramePipeline extends EventEmitter<FramePipelineEvents> {
  readonly engine: VisionEngine;
  readonly config: PipelineConfig;
  private readonly cameras = new Map<string, CameraState>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Time spent on this thread per stage (ms): copying frames in, tracking, encoding face JPEGs. */
  readonly timings = { intake: 0, tracking: 0, faceImages: 0 };

  constructor(opts: FramePipelineOptions) {
    super();
    this.engine = opts.engine;
    const c = opts.config ?? {};
    this.config = { ...DEFAULT_PIPELINE, ...c, tracker: { ...DEFAULT_TRACKER, ...c.tracker } };
    this.timer = setInterval(() => this.sweepIdle(), 1000);
    this.timer.unref();
  }

  /** The frame consumer: hand it every decoded frame. Never throws; never blocks on inference. */
  readonly consume = (frame: Frame): void => {
    if (this.closed) return;
    const t0 = performance.now();
    try {
      this.intake(frame);
    } finally {
      this.timings.intake += performance.now() - t0;
    }
  };

  private intake(frame: Frame): void {
    const cam = this.camera(frame.cameraId);
    cam.stats.frames_received++;
    cam.lastArrival = Date.now();
    const size = frame.width * frame.height * 3;
    if (frame.data.length < size) {
      this.fail(new Error(`camera ${frame.cameraId}: frame has ${frame.data.length} bytes, ${frame.width}x${frame.height} RGB24 needs ${size}`));
      return;
    }
    // Our own copy, so the caller may reuse its buffer: in the engine's shared memory when it has some (the worker
    // reads it in place), else in a buffer of our own (whole ArrayBuffer) that the engine may transfer to a worker.
    let data = cam.pool.pop();
    if (data && data.length !== size) {
      this.engine.releaseFrameBuffer?.(data);
      data = undefined;
    }
    data ??= this.engine.frameBuffer?.(size) ?? new Uint8Array(size);
    data.set(frame.data.subarray(0, size));
    const img: RgbImage = { width: frame.width, height: frame.height, data };
    const at = frame.at.getTime();
    if (cam.busy) {
      if (cam.pending) {
        cam.stats.frames_dropped++;
        this.recycle(cam, cam.pending.img.data);
      }
      cam.pending = { img, at };
      return;
    }
    this.track(this.run(cam, img, at));
  }

  private camera(id: string): CameraState {
    let cam = this.cameras.get(id);
    if (!cam) {
      cam = {
        id,
        tracker: new FaceTracker<TrackState>(this.config.tracker, () => ({ candidates: [], facesPassed: 0, reported: false }), randomUUID),
        gate: new GateWindow(this.config.gateWindowMs),
        busy: false,
        pool: [],
        lastFrameAt: 0,
        lastArrival: Date.now(),
        stats: {
          frames_received: 0,
          frames_processed: 0,
          frames_dropped: 0,
          faces: 0,
          visits: 0,
          visits_with_identity: 0,
          tracks_discarded: 0,
          embeddings: 0,
        },
      };
      this.cameras.set(id, cam);
    }
    return cam;
  }

  /** Keep a frame buffer whose analysis is over for the camera's next frames (or let the engine forget it). */
  private recycle(cam: CameraState, data: Uint8Array): void {
    const live = this.cameras.get(cam.id) === cam && !this.closed;
    if (live && cam.pool.length < 2 && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength) cam.pool.push(data);
    else this.engine.releaseFrameBuffer?.(data);
  }

  private track(p: Promise<unknown>): void {
    const q = p.then(
      () => undefined,
      (err: unknown) => this.fail(err),
    );
    this.inFlight.add(q);
    void q.finally(() => this.inFlight.delete(q));
  }

  /** Report an error on 'error' when someone listens (an unheard 'error' event would throw). */
  private fail(err: unknown): void {
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
    else console.error(`vision pipeline: ${e.message}`);
  }

  private async run(cam: CameraState, img: RgbImage, at: number): Promise<void> {
    cam.busy = true;
    try {
      let next: { img: RgbImage; at: number } | undefined = { img, at };
      while (next) {
        const shared = next.img.data.buffer instanceof SharedArrayBuffer;
        try {
          const scan = await this.engine.scan(next.img);
          const t0 = performance.now();
          // A transferred buffer comes back as `input`; a shared (or copied) one never left. The faces a track
          // keeps are cut out of it before it is reused.
          const pixels = scan.input ?? next.img.data;
          this.onFrame(cam, next.at, scan, { width: next.img.width, height: next.img.height, data: pixels });
          if (scan.input || shared) this.recycle(cam, pixels);
          this.timings.tracking += performance.now() - t0;
        } catch (err) {
          if (shared) this.recycle(cam, next.img.data);
          this.fail(err);
        }
        next = cam.pending;
        cam.pending = undefined;
      }
    } finally {
      cam.busy = false;
    }
  }

  /** Tracking and bookkeeping for one analysed frame. */
  private onFrame(cam: CameraState, at: number, { faces }: FrameScan, frame: RgbImage): void {
    cam.stats.frames_processed++;
    cam.lastFrameAt = Math.max(cam.lastFrameAt, at);
    const { assigned, ended } = cam.tracker.update(
      at,
      faces.map((f) => f.box),
    );
    for (let i = 0; i < faces.length; i++) {
      const face = faces[i]!;
      const track = assigned[i]!;
      cam.stats.faces++;
      cam.gate.add(at, !face.passesGate);
      this.keep(track, face, at, frame);
    }
    for (const t of ended) this.finish(cam, t, 'lost');
    for (const t of cam.tracker.tracks) {
      if (!t.data.reported && at - t.firstAt >= this.config.capMs) this.finish(cam, t, 'cap');
    }
  }

  /**
   * Remember what a track needs from this face: the best face overall, and the best few that passed the gate. Only
   * the faces kept are cut out of the frame (their crop region); the others cost nothing more.
   */
  private keep(track: Track<TrackState>, face: FoundFace, at: number, frame: RgbImage): void {
    const s = track.data;
    if (s.reported) return;
    if (face.passesGate) s.facesPassed++;
    let kept: FaceKeep | undefined;
    const keep = (): FaceKeep =>
      (kept ??= { at, quality: face.quality, passed: face.passesGate, region: cropRgb(frame, face.crop), regions: face.regions, landmarks: face.landmarks });
    if (!s.best || face.quality > s.best.quality) s.best = keep();
    if (!face.passesGate) return;
    const c = s.candidates;
    const near = c.find((k) => Math.abs(k.at - at) < this.config.embedSpacingMs);
    if (near) {
      if (face.quality > near.quality) c[c.indexOf(near)] = keep();
    } else if (c.length < this.config.embedPerTrack) {
      c.push(keep());
    } else {
      let worst = 0;
      for (let i = 1; i < c.length; i++) if (c[i]!.quality < c[worst]!.quality) worst = i;
      if (face.quality > c[worst]!.quality) c[worst] = keep();
    }
  }

  private finish(cam: CameraState, track: Track<TrackState>, endedBy: Visit['track']['ended_by']): void {
    const s = track.data;
    if (s.reported) return;
    s.reported = true;
    if (track.frames < this.config.minFrames || !s.best) {
      cam.stats.tracks_discarded++;
      return;
    }
    const candidates = s.candidates;
    const best = s.best;
    // Free what the (possibly continuing) track no longer needs.
    s.candidates = [];
    s.best = undefined;
    this.track(
      this.makeVisit(cam, track, endedBy, candidates, best).then((visit) => {
        cam.stats.visits++;
        if (visit.embedding) cam.stats.visits_with_identity++;
        this.emit('visit', visit);
      }),
    );
  }

  private async makeVisit(
    cam: CameraState,
    track: Track<TrackState>,
    endedBy: Visit['track']['ended_by'],
    candidates: FaceKeep[],
    best: FaceKeep,
  ): Promise<Visit> {
    const cfg = this.config;
    // A visit is footfall first: if a model call fails (a worker crashed), the visit goes out without that part.
    let embedding: Float32Array | undefined;
    let embedded = 0;
    if (candidates.length > 0) {
      try {
        const embeddings = await Promise.all(candidates.map((k) => this.engine.embedFace(k.region, k.landmarks)));
        cam.stats.embeddings += embeddings.length;
        embedded = embeddings.length;
        embedding = averageEmbeddings(consensus(embeddings, cfg.embedConsensus));
      } catch (err) {
        this.fail(err);
      }
    }
    let attributes: FaceAttributes | undefined;
    if (best.quality >= cfg.attributesMinQuality) {
      try {
        attributes = await this.visitAttributes(candidates.length > 0 ? candidates : [best], best);
      } catch (err) {
        this.fail(err);
      }
    }
    let faceJpeg: Buffer | undefined;
    if (cfg.faceImages) {
      const t0 = performance.now();
      try {
        faceJpeg = await encodeJpeg(best.region, best.regions.image);
      } catch (err) {
        this.fail(err);
      }
      this.timings.faceImages += performance.now() - t0;
    }
    const visit: Visit = {
      visit_id: randomUUID(),
      occurred_at: new Date(track.firstAt).toISOString(),
      camera_id: cam.id,
      quality: best.quality,
      passed_gate: best.passed,
      track: {
        id: track.id,
        first_seen_at: new Date(track.firstAt).toISOString(),
        last_seen_at: new Date(track.lastAt).toISOString(),
        frames: track.frames,
        faces_passed: track.data.facesPassed,
        faces_embedded: embedded,
        ended_by: endedBy,
      },
    };
    if (embedding) {
      visit.embedding = embedding;
      visit.recognition_model = this.engine.modelSet;
    }
    if (attributes) visit.attributes = attributes;
    if (faceJpeg) visit.face_jpeg = faceJpeg;
    return visit;
  }

  /**
   * Age and gender are cheap and noisy from one frame: averaged over `faces` (the embedded ones, or the best face
   * alone). Expression (~30 ms) runs once, on the best face.
   */
  private async visitAttributes(faces: FaceKeep[], best: FaceKeep): Promise<FaceAttributes> {
    const [expr, ...ag] = await Promise.all([
      this.engine.attributes(best.region, best.regions, { ageGender: false }),
      ...faces.map((f) => this.engine.attributes(f.region, f.regions, { expression: false })),
    ]);
    const mean = (xs: (number | undefined)[]): number | undefined => {
      const v = xs.filter((x): x is number => x !== undefined);
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : undefined;
    };
    const genderScore = mean(ag.map((a) => a.raw?.genderScore));
    const age = mean(ag.map((a) => a.raw?.age));
    const attributes: FaceAttributes = {};
    if (genderScore !== undefined) attributes.gender = genderFromScore(genderScore);
    if (age !== undefined) attributes.age = Math.round(Math.min(130, Math.max(0, age)) * 10) / 10;
    if (expr?.emotion) attributes.emotion = expr.emotion;
    return attributes;
  }

  /** End the tracks of cameras that stopped sending frames. */
  private sweepIdle(): void {
    const now = Date.now();
    for (const cam of this.cameras.values()) {
      if (cam.busy || now - cam.lastArrival < this.config.idleMs) continue;
      for (const t of cam.tracker.clear()) this.finish(cam, t, 'lost');
    }
  }

  /** Wait until every frame received so far is analysed (tracks stay open). */
  async drain(): Promise<void> {
    while ([...this.cameras.values()].some((c) => c.busy)) await Promise.allSettled([...this.inFlight]);
  }

  /** Wait until every frame received so far is analysed and every visit already under way is emitted (tracks stay open). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * End every live track (emitting their visits) once the frames already
   * received are analysed, and wait for all visits to be emitted.
   */
  async flush(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    for (const cam of this.cameras.values()) for (const t of cam.tracker.clear()) this.finish(cam, t, 'flush');
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Forget a camera (removed from the shop): its live tracks are emitted as visits first. */
  removeCamera(cameraId: string): void {
    const cam = this.cameras.get(cameraId);
    if (!cam) return;
    for (const t of cam.tracker.clear()) this.finish(cam, t, 'flush');
    this.cameras.delete(cameraId);
    this.dropBuffers(cam);
  }

  /** Let go of a camera's idle frame buffers (the one being analysed follows when its analysis settles). */
  private dropBuffers(cam: CameraState): void {
    for (const data of cam.pool.splice(0)) this.engine.releaseFrameBuffer?.(data);
    if (cam.pending) this.engine.releaseFrameBuffer?.(cam.pending.img.data);
    cam.pending = undefined;
  }

  stats(): PipelineStats {
    const cameras: Record<string, CameraStats> = {};
    const total: PipelineStats = {
      frames_received: 0,
      frames_processed: 0,
      frames_dropped: 0,
      faces: 0,
      fraction_below_gate: null,
      tracks_active: 0,
      visits: 0,
      visits_with_identity: 0,
      tracks_discarded: 0,
      embeddings: 0,
      cameras,
    };
    for (const cam of this.cameras.values()) {
      const fraction = cam.gate.fraction(cam.lastFrameAt);
      const c: CameraStats = { ...cam.stats, fraction_below_gate: fraction, tracks_active: cam.tracker.tracks.length };
      cameras[cam.id] = c;
      for (const k of ['frames_received', 'frames_processed', 'frames_dropped', 'faces', 'tracks_active', 'visits', 'visits_with_identity', 'tracks_discarded', 'embeddings'] as const) {
        total[k] += c[k];
      }
      if (fraction !== null && (total.fraction_below_gate === null || fraction > total.fraction_below_gate)) {
        total.fraction_below_gate = fraction;
        total.worst_camera_id = cam.id;
      }
    }
    return total;
  }

  /** Emit what is pending (flush) and stop. The engine is the caller's to close. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    clearInterval(this.timer);
    for (const cam of this.cameras.values()) this.dropBuffers(cam);
  }
}
