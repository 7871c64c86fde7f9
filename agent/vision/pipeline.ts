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
import type { Box, FaceAttributes, FivePoints, Frame, RgbImage, Visit } from './types.js';

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
  /** Linking broken tracks of one person into one pass (docs/recognition.md, "Passes"). */
  link: LinkConfig;
}

/**
 * A person who turns away, is hidden for a moment or blurs below the gate loses their track; when a face resumes
 * within `windowMs` of the pass's last sighting it continues that pass (one visit) if it is where the pass was last
 * seen (position and time), or else if its face looks like the pass's last face (a short-term embedding, made even
 * of faces under the quality gate: it only links tracks of one camera a few seconds apart, and never creates or
 * matches a customer). windowMs 0 turns linking off (one visit per track).
 */
export interface LinkConfig {
  /** Longest gap between a pass's last sighting and a new track that may continue it. */
  windowMs: number;
  /** Position: centre distance at most this many face sizes (sqrt of box area) from where the pass was last seen. */
  maxDistance: number;
  /** Position: face size ratio within [1/maxSizeRatio, maxSizeRatio]. */
  maxSizeRatio: number;
  /** Face: cosine of the short-term embeddings at or above which a new track elsewhere continues the pass. */
  minCosine: number;
  /** A position link is undone when both faces passed the gate and their cosine is below this (two people). */
  vetoCosine: number;
}

export const DEFAULT_LINK: LinkConfig = { windowMs: 3000, maxDistance: 1.5, maxSizeRatio: 1.6, minCosine: 0.45, vetoCosine: 0.45 };

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
  link: DEFAULT_LINK,
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

export interface PipelineConfigInput extends Partial<Omit<PipelineConfig, 'tracker' | 'link'>> {
  tracker?: Partial<TrackerConfig>;
  link?: Partial<LinkConfig>;
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
  /** Tracks that continued an earlier pass (no visit of their own): by position and time, by the short-term embedding. */
  links_position: number;
  links_face: number;
  /** Position links undone because the two faces were clearly two people. */
  links_vetoed: number;
  /** Short-term embeddings made for linking (not for identity). */
  link_embeddings: number;
  /** Closing sightings of identified passes reported at the cap (not visits: head office extends the stay). */
  closing_sightings: number;
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
  box: Box;
  /** Its short-term embedding, once asked for (linking only). */
  embedding?: Promise<Float32Array | undefined>;
}

/** What a track (or a pass, all its tracks together) keeps for its visit. */
interface Keep {
  best?: FaceKeep;
  candidates: FaceKeep[];
  facesPassed: number;
  frames: number;
}

interface TrackState extends Keep {
  /** The pass this track belongs to (set when the track starts). */
  pass?: Pass;
  /** Folded into its pass (the track ended): its faces are the pass's now. */
  absorbed: boolean;
  /** Passes it may continue, to be decided by the short-term embedding (new track not linked by position). */
  linkCandidates?: Pass[];
  /** Linked by position, to be confirmed by the faces (veto). */
  linkedFrom?: FaceKeep;
  /** Linked by position and not yet confirmed: a visit reported meanwhile leaves it out. */
  unconfirmed?: boolean;
  linkChecked: boolean;
}

/** What a visit is made of: a pass as it was when reported. */
interface PassSnapshot {
  id: string;
  firstAt: number;
  lastAt: number;
  frames: number;
  facesPassed: number;
  links: number;
  segments: Pass['segments'];
}

/** One person's pass in front of one camera: one or more tracks linked together; one visit. */
interface Pass extends Keep {
  id: string;
  tracks: Track<TrackState>[];
  firstAt: number;
  lastAt: number;
  lastBox: Box;
  /** The best face of its most recently seen track (the face a resuming track is compared with). */
  lastFace?: FaceKeep;
  /** A visit went out (at the time cap): later tracks add nothing. */
  reported: boolean;
  /** Over: emitted when it ended, or merged into another pass. */
  ended: boolean;
  /** The visit reported at the cap, once made. */
  capVisit?: Visit;
  /** Link checks under way that may add a track to this pass: it is not ended meanwhile. */
  pending: number;
  /** Where each of its tracks was first seen (diagnostics and the counting benchmark). */
  segments: { first_seen_at: number; last_seen_at: number; box: Box; link?: 'position' | 'face' }[];
}

interface CameraState {
  id: string;
  tracker: FaceTracker<TrackState>;
  /** Passes not yet ended, oldest first. */
  passes: Pass[];
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
    this.config = { ...DEFAULT_PIPELINE, ...c, tracker: { ...DEFAULT_TRACKER, ...c.tracker }, link: { ...DEFAULT_LINK, ...c.link } };
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
        tracker: new FaceTracker<TrackState>(this.config.tracker, () => ({ candidates: [], facesPassed: 0, frames: 0, absorbed: false, linkChecked: false }), randomUUID),
        passes: [],
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
          links_position: 0,
          links_face: 0,
          links_vetoed: 0,
          link_embeddings: 0,
          closing_sightings: 0,
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
    for (const t of ended) this.absorb(t);
    const seen = new Set<Pass>();
    for (const t of assigned) if (t.data.pass) seen.add(t.data.pass);
    for (let i = 0; i < faces.length; i++) {
      const face = faces[i]!;
      const track = assigned[i]!;
      cam.stats.faces++;
      cam.gate.add(at, !face.passesGate);
      if (!track.data.pass) this.startPass(cam, track, at, seen);
      const pass = track.data.pass!;
      pass.lastAt = Math.max(pass.lastAt, at);
      pass.lastBox = face.box;
      const seg = pass.segments.find((g) => g.first_seen_at === track.firstAt);
      if (seg) seg.last_seen_at = at;
      this.keep(track, face, at, frame);
      if (!track.data.linkChecked && track.frames >= this.config.minFrames) this.checkLink(cam, track);
    }
    this.endPasses(cam, at);
  }

  /**
   * A new track: it continues a pass lost a moment ago where it is now (position and time), or starts a pass of its
   * own that the short-term embedding may later join to one of the passes lost meanwhile.
   */
  private startPass(cam: CameraState, track: Track<TrackState>, at: number, seen: Set<Pass>): void {
    const link = this.config.link;
    const lost = link.windowMs > 0 ? cam.passes.filter((p) => !p.ended && !seen.has(p) && p.lastAt < at && at - p.lastAt <= link.windowMs) : [];
    const size = (b: Box) => Math.sqrt(Math.max(1, (b.x2 - b.x1) * (b.y2 - b.y1)));
    const near = lost
      .map((p) => {
        const ratio = size(track.box) / size(p.lastBox);
        const d = Math.hypot((track.box.x1 + track.box.x2 - p.lastBox.x1 - p.lastBox.x2) / 2, (track.box.y1 + track.box.y2 - p.lastBox.y1 - p.lastBox.y2) / 2) / size(p.lastBox);
        return { p, d, ok: d <= link.maxDistance && ratio <= link.maxSizeRatio && ratio >= 1 / link.maxSizeRatio };
      })
      .filter((x) => x.ok)
      .sort((a, b) => a.d - b.d);
    // Unambiguous: the nearest is the only one in reach, or clearly nearer than the next.
    const pick = near.length === 1 || (near.length > 1 && near[0]!.d < 0.5 * near[1]!.d) ? near[0]!.p : undefined;
    if (pick) {
      track.data.pass = pick;
      track.data.linkedFrom = this.recentFace(pick);
      track.data.unconfirmed = true;
      pick.tracks.push(track);
      pick.segments.push({ first_seen_at: at, last_seen_at: at, box: track.box, link: 'position' });
      seen.add(pick);
      cam.stats.links_position++;
      return;
    }
    const pass = this.newPass(cam, track, at);
    if (lost.length > 0) track.data.linkCandidates = lost;
    for (const p of lost) p.pending++;
    seen.add(pass);
  }

  private newPass(cam: CameraState, track: Track<TrackState>, at: number): Pass {
    const pass: Pass = {
      id: track.id,
      tracks: [track],
      firstAt: at,
      lastAt: at,
      lastBox: track.box,
      reported: false,
      ended: false,
      pending: 0,
      candidates: [],
      facesPassed: 0,
      frames: 0,
      segments: [{ first_seen_at: at, last_seen_at: at, box: track.box }],
    };
    track.data.pass = pass;
    cam.passes.push(pass);
    return pass;
  }

  /** The best face of the pass's most recently seen track. */
  private recentFace(pass: Pass): FaceKeep | undefined {
    let recent: Track<TrackState> | undefined;
    for (const t of pass.tracks) if (!t.data.absorbed && t.data.best && (!recent || t.lastAt > recent.lastAt)) recent = t;
    return recent && (!pass.lastFace || recent.lastAt >= pass.lastFace.at) ? recent.data.best : pass.lastFace;
  }

  /** The short-term embedding of a face (made once; undefined when the model call failed). */
  private linkEmbedding(cam: CameraState, face: FaceKeep): Promise<Float32Array | undefined> {
    face.embedding ??= this.engine.embedFace(face.region, face.landmarks).then(
      (e) => {
        cam.stats.link_embeddings++;
        return e;
      },
      (err: unknown) => {
        this.fail(err);
        return undefined;
      },
    );
    return face.embedding;
  }

  /**
   * Once a new track has a few frames: a track linked by position is unlinked if both faces passed the gate and
   * clearly are two people; a track not linked joins the lost pass its face looks most like, if alike enough.
   */
  private checkLink(cam: CameraState, track: Track<TrackState>): void {
    const s = track.data;
    s.linkChecked = true;
    const face = s.best;
    const link = this.config.link;
    if (s.linkedFrom) {
      const from = s.linkedFrom;
      if (!face || !from.passed || !face.passed) {
        s.unconfirmed = false;
        return;
      }
      const pass = s.pass!;
      pass.pending++;
      this.track(
        Promise.all([this.linkEmbedding(cam, from), this.linkEmbedding(cam, face)]).then(([a, b]) => {
          pass.pending--;
          s.unconfirmed = false;
          if (!a || !b || dot(a, b) >= link.vetoCosine || s.absorbed || s.pass !== pass) return;
          pass.tracks.splice(pass.tracks.indexOf(track), 1);
          pass.segments = pass.segments.filter((g) => g.first_seen_at !== track.firstAt);
          cam.stats.links_position--;
          cam.stats.links_vetoed++;
          this.newPass(cam, track, track.firstAt);
        }),
      );
      return;
    }
    const candidates = s.linkCandidates;
    s.linkCandidates = undefined;
    if (!candidates) return;
    const release = () => {
      for (const p of candidates) p.pending--;
    };
    if (!face) return release();
    this.track(
      Promise.all([this.linkEmbedding(cam, face), ...candidates.map((p) => {
        const f = this.recentFace(p);
        return f ? this.linkEmbedding(cam, f) : Promise.resolve(undefined);
      })])
        .then(([e, ...others]) => {
          const own = s.pass!;
          if (!e || own.ended || own.reported) return;
          let best: Pass | undefined;
          let bestCos = link.minCosine;
          candidates.forEach((p, i) => {
            const o = others[i];
            if (!o || p.ended || p === own) return;
            const c = dot(e, o);
            if (c >= bestCos) {
              bestCos = c;
              best = p;
            }
          });
          if (best) this.merge(cam, own, best);
        })
        .finally(release),
    );
  }

  /** Pass `from` (a new track, maybe with tracks linked to it since) continues pass `into`. */
  private merge(cam: CameraState, from: Pass, into: Pass): void {
    for (const t of from.tracks) {
      t.data.pass = into;
      into.tracks.push(t);
    }
    into.segments.push(...from.segments.map((g, i) => (i === 0 ? { ...g, link: 'face' as const } : g)));
    into.firstAt = Math.min(into.firstAt, from.firstAt);
    if (from.lastAt >= into.lastAt) {
      into.lastAt = from.lastAt;
      into.lastBox = from.lastBox;
      into.lastFace = from.lastFace ?? into.lastFace;
    }
    if (!into.reported) this.fold(into, from);
    from.tracks = [];
    from.ended = true;
    cam.passes.splice(cam.passes.indexOf(from), 1);
    cam.stats.links_face++;
  }

  /** Add what `from` kept to `into`: the best face, the best gated faces (spaced in time), counts. */
  private fold(into: Keep, from: Keep): void {
    into.frames += from.frames;
    into.facesPassed += from.facesPassed;
    if (from.best && (!into.best || from.best.quality > into.best.quality)) into.best = from.best;
    for (const k of from.candidates) this.offer(into.candidates, k);
    from.candidates = [];
    from.best = undefined;
  }

  /** A track ended: its faces become its pass's. */
  private absorb(track: Track<TrackState>): void {
    const s = track.data;
    if (s.absorbed) return;
    s.absorbed = true;
    // Ended before its faces could be compared (too short): its position link stands.
    s.unconfirmed = false;
    const pass = s.pass;
    if (!pass) return;
    if (s.best && (!pass.lastFace || track.lastAt >= pass.lastAt - 1)) pass.lastFace = s.best;
    if (pass.reported) {
      s.candidates = [];
      s.best = undefined;
      return;
    }
    this.fold(pass, s);
  }

  /** Passes lost for longer than the link window are over (one visit each); passes in view past the cap are reported. */
  private endPasses(cam: CameraState, at: number): void {
    const live = new Set<Pass>();
    for (const t of cam.tracker.tracks) if (t.data.pass) live.add(t.data.pass);
    for (const p of [...cam.passes]) {
      if (!live.has(p) && p.pending === 0 && at - p.lastAt > this.config.link.windowMs) this.endPass(cam, p, 'lost');
      else if (!p.reported && at - p.firstAt >= this.config.capMs) this.report(cam, p, 'cap');
    }
  }

  private endPass(cam: CameraState, pass: Pass, endedBy: Visit['track']['ended_by']): void {
    if (pass.ended) return;
    for (const t of pass.tracks) this.absorb(t);
    if (!pass.reported) this.report(cam, pass, endedBy);
    else if (pass.capVisit?.embedding) this.closePass(cam, pass, pass.capVisit);
    pass.ended = true;
    pass.tracks = [];
    const i = cam.passes.indexOf(pass);
    if (i >= 0) cam.passes.splice(i, 1);
  }

  /**
   * Remember what a track needs from this face: the best face overall, and the best few that passed the gate. Only
   * the faces kept are cut out of the frame (their crop region); the others cost nothing more.
   */
  private keep(track: Track<TrackState>, face: FoundFace, at: number, frame: RgbImage): void {
    const s = track.data;
    s.frames++;
    // Kept even when the pass was reported already: the faces tell whether the track is that pass's person (checkLink).
    if (face.passesGate) s.facesPassed++;
    let kept: FaceKeep | undefined;
    const keep = (): FaceKeep =>
      (kept ??= { at, quality: face.quality, passed: face.passesGate, region: cropRgb(frame, face.crop), regions: face.regions, landmarks: face.landmarks, box: face.box });
    if (!s.best || face.quality > s.best.quality) s.best = keep();
    if (!face.passesGate) return;
    this.offer(s.candidates, undefined, face.quality, at, keep);
  }

  /** Offer a gated face to a list of the best few, spaced in time. */
  private offer(c: FaceKeep[], k: FaceKeep | undefined, quality = k?.quality ?? 0, at = k?.at ?? 0, make: () => FaceKeep = () => k!): void {
    const near = c.find((x) => Math.abs(x.at - at) < this.config.embedSpacingMs);
    if (near) {
      if (quality > near.quality) c[c.indexOf(near)] = make();
    } else if (c.length < this.config.embedPerTrack) {
      c.push(make());
    } else {
      let worst = 0;
      for (let i = 1; i < c.length; i++) if (c[i]!.quality < c[worst]!.quality) worst = i;
      if (quality > c[worst]!.quality) c[worst] = make();
    }
  }

  /**
   * An identified pass reported at the cap has ended: one more sighting of the same person (the cap visit's
   * embedding, so head office matches the same customer) spanning the whole pass, so that head office extends the
   * stay to the person's last sighting (its dwell). Head office makes no arrival of it: a sighting within the stay
   * extends it (docs/visits-and-customers.md). Unidentified passes send none (it would count as another person).
   */
  private closePass(cam: CameraState, pass: Pass, capVisit: Visit): void {
    const visit: Visit = {
      visit_id: randomUUID(),
      occurred_at: new Date(pass.firstAt).toISOString(),
      camera_id: cam.id,
      quality: capVisit.quality,
      passed_gate: capVisit.passed_gate,
      track: {
        id: pass.id,
        first_seen_at: new Date(pass.firstAt).toISOString(),
        last_seen_at: new Date(pass.lastAt).toISOString(),
        frames: pass.tracks.reduce((n, t) => n + t.frames, 0),
        faces_passed: pass.tracks.reduce((n, t) => n + t.data.facesPassed, 0),
        faces_embedded: 0,
        ended_by: 'lost',
      },
      pass: { tracks: pass.tracks.length, segments: pass.segments.map((g) => ({ first_seen_at: new Date(g.first_seen_at).toISOString(), last_seen_at: new Date(g.last_seen_at).toISOString(), box: g.box, ...(g.link ? { link: g.link } : {}) })), closes: capVisit.visit_id },
    };
    if (capVisit.embedding && capVisit.recognition_model) {
      visit.embedding = capVisit.embedding;
      visit.recognition_model = capVisit.recognition_model;
    }
    cam.stats.closing_sightings++;
    this.emit('visit', visit);
  }

  /** Emit the pass's visit now (it ended, reached the time cap, or the pipeline is flushed); once per pass. */
  private report(cam: CameraState, pass: Pass, endedBy: Visit['track']['ended_by']): void {
    if (pass.reported) return;
    pass.reported = true;
    // What its live tracks kept so far counts too.
    const all: Keep = { candidates: [...pass.candidates], best: pass.best, facesPassed: pass.facesPassed, frames: pass.frames };
    const left = new Set<number>();
    for (const t of pass.tracks) {
      if (t.data.unconfirmed) left.add(t.firstAt);
      if (t.data.absorbed || t.data.unconfirmed) continue;
      this.fold(all, { ...t.data, candidates: [...t.data.candidates] });
      t.data.candidates = [];
      t.data.best = undefined;
    }
    pass.candidates = [];
    pass.best = undefined;
    if (all.frames < this.config.minFrames || !all.best) {
      cam.stats.tracks_discarded++;
      return;
    }
    const best = all.best;
    const snapshot = { id: pass.id, firstAt: pass.firstAt, lastAt: pass.lastAt, frames: all.frames, facesPassed: all.facesPassed, links: pass.tracks.length - left.size, segments: pass.segments.filter((g) => !left.has(g.first_seen_at)).map((g) => ({ ...g })) };
    this.track(
      this.makeVisit(cam, snapshot, endedBy, all.candidates, best).then((visit) => {
        cam.stats.visits++;
        if (visit.embedding) cam.stats.visits_with_identity++;
        if (endedBy === 'cap') pass.capVisit = visit;
        this.emit('visit', visit);
      }),
    );
  }

  private async makeVisit(
    cam: CameraState,
    track: PassSnapshot,
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
        faces_passed: track.facesPassed,
        faces_embedded: embedded,
        ended_by: endedBy,
      },
      pass: {
        tracks: track.links,
        segments: track.segments.map((g) => ({ first_seen_at: new Date(g.first_seen_at).toISOString(), last_seen_at: new Date(g.last_seen_at).toISOString(), box: g.box, ...(g.link ? { link: g.link } : {}) })),
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
    const gender = genderScore === undefined ? undefined : genderFromScore(genderScore);
    if (gender) attributes.gender = gender;
    if (age !== undefined) attributes.age = Math.round(Math.min(130, Math.max(0, age)) * 10) / 10;
    if (expr?.emotion) attributes.emotion = expr.emotion;
    return attributes;
  }

  /** End every track and pass of a camera (link checks under way find their passes over and do nothing). */
  private endAll(cam: CameraState, endedBy: Visit['track']['ended_by']): void {
    for (const t of cam.tracker.clear()) this.absorb(t);
    for (const p of [...cam.passes]) this.endPass(cam, p, endedBy);
  }

  /** End the tracks of cameras that stopped sending frames. */
  private sweepIdle(): void {
    const now = Date.now();
    for (const cam of this.cameras.values()) {
      if (cam.busy || now - cam.lastArrival < this.config.idleMs) continue;
      this.endAll(cam, 'lost');
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
    for (const cam of this.cameras.values()) this.endAll(cam, 'flush');
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Forget a camera (removed from the shop): its live tracks are emitted as visits first. */
  removeCamera(cameraId: string): void {
    const cam = this.cameras.get(cameraId);
    if (!cam) return;
    this.endAll(cam, 'flush');
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
      links_position: 0,
      links_face: 0,
      links_vetoed: 0,
      link_embeddings: 0,
      closing_sightings: 0,
      cameras,
    };
    for (const cam of this.cameras.values()) {
      const fraction = cam.gate.fraction(cam.lastFrameAt);
      const c: CameraStats = { ...cam.stats, fraction_below_gate: fraction, tracks_active: cam.tracker.tracks.length };
      cameras[cam.id] = c;
      for (const k of ['frames_received', 'frames_processed', 'frames_dropped', 'faces', 'tracks_active', 'visits', 'visits_with_identity', 'tracks_discarded', 'embeddings', 'links_position', 'links_face', 'links_vetoed', 'link_embeddings', 'closing_sightings'] as const) {
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
