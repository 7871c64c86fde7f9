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
import type { FoundFace, FrameScan } from './analyzer.js';
import { dot } from './embeddings.js';
import type { VisionEngine } from './engine.js';
import { cropRgb } from './image.js';
import { absorb, fold, mergePasses, newPass, offer, positionLink, recentFace } from './passes.js';
import type { CameraState, FaceKeep, Keep, Pass, TrackState } from './passes.js';
import { DEFAULT_LINK, DEFAULT_PIPELINE, emptyCameraStats, totalStats } from './pipeline-config.js';
import type { CameraStats, PipelineConfig, PipelineConfigInput, PipelineStats } from './pipeline-config.js';
import { GateWindow } from './quality.js';
import { DEFAULT_TRACKER, FaceTracker } from './tracker.js';
import type { Track } from './tracker.js';
import type { Frame, RgbImage, Visit } from './types.js';
import { VisitMaker } from './visit-maker.js';

export { DEFAULT_LINK, DEFAULT_PIPELINE } from './pipeline-config.js';
export type { CameraStats, LinkConfig, PipelineConfig, PipelineConfigInput, PipelineStats } from './pipeline-config.js';
export { averageEmbeddings, consensus } from './embeddings.js';





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
  private readonly visits: VisitMaker;
  /** Count-only (setCountOnly): the embedding model is not called and no face JPEG is encoded. */
  private countOnly = false;
  /** Calls to the embedding model (engine.embedFace) since start: visits' and the short-term ones for links. */
  get embeddingCalls(): number {
    return this.visits.embedCalls + this.linkEmbedCalls;
  }
  private linkEmbedCalls = 0;

  constructor(opts: FramePipelineOptions) {
    super();
    this.engine = opts.engine;
    const c = opts.config ?? {};
    this.config = { ...DEFAULT_PIPELINE, ...c, tracker: { ...DEFAULT_TRACKER, ...c.tracker }, link: { ...DEFAULT_LINK, ...c.link } };
    this.visits = new VisitMaker(this.engine, this.config, (err) => this.fail(err), (ms) => (this.timings.faceImages += ms), () => this.countOnly);
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
        stats: emptyCameraStats(),
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
    for (const t of ended) absorb(this.config, t);
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
    const pick = positionLink(link, lost, track.box);
    if (pick) {
      track.data.pass = pick;
      track.data.linkedFrom = recentFace(pick);
      track.data.unconfirmed = true;
      pick.tracks.push(track);
      pick.segments.push({ first_seen_at: at, last_seen_at: at, box: track.box, link: 'position' });
      seen.add(pick);
      cam.stats.links_position++;
      return;
    }
    const pass = newPass(cam, track, at);
    if (lost.length > 0) track.data.linkCandidates = lost;
    for (const p of lost) p.pending++;
    seen.add(pass);
  }

  /**
   * Count-only on or off (docs/privacy.md), from the next face on. On: visits carry no embedding and no face JPEG,
   * and tracks are joined into one pass by position and time only (a link by position is not vetoed by faces, a
   * track is not joined to a lost pass by its face).
   */
  setCountOnly(on: boolean): void {
    this.countOnly = on;
  }

  /** The short-term embedding of a face (made once; undefined when the model call failed, or in count-only mode). */
  private linkEmbedding(cam: CameraState, face: FaceKeep): Promise<Float32Array | undefined> {
    if (this.countOnly) return Promise.resolve(undefined);
    if (!face.embedding) this.linkEmbedCalls++;
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
          newPass(cam, track, track.firstAt);
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
        const f = recentFace(p);
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
          if (best) mergePasses(this.config, cam, own, best);
        })
        .finally(release),
    );
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
    for (const t of pass.tracks) absorb(this.config, t);
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
    offer(this.config, s.candidates, undefined, face.quality, at, keep);
  }

  /** An identified pass reported at the cap has ended: its closing sighting (VisitMaker.closing). */
  private closePass(cam: CameraState, pass: Pass, capVisit: Visit): void {
    const visit = this.visits.closing(cam, pass, capVisit);
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
      fold(this.config, all, { ...t.data, candidates: [...t.data.candidates] });
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
      this.visits.make(cam, snapshot, endedBy, all.candidates, best).then((visit) => {
        cam.stats.visits++;
        if (visit.embedding) cam.stats.visits_with_identity++;
        if (endedBy === 'cap') pass.capVisit = visit;
        this.emit('visit', visit);
      }),
    );
  }

  /** End every track and pass of a camera (link checks under way find their passes over and do nothing). */
  private endAll(cam: CameraState, endedBy: Visit['track']['ended_by']): void {
    for (const t of cam.tracker.clear()) absorb(this.config, t);
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

  /** The time (ms) of the newest frame of a camera analysed so far; 0 before the first (or for an unknown camera). */
  analysedUpTo(cameraId: string): number {
    return this.cameras.get(cameraId)?.lastFrameAt ?? 0;
  }

  stats(): PipelineStats {
    const cameras: Record<string, CameraStats> = {};
    for (const cam of this.cameras.values()) {
      cameras[cam.id] = { ...cam.stats, fraction_below_gate: cam.gate.fraction(cam.lastFrameAt), tracks_active: cam.tracker.tracks.length };
    }
    return totalStats(cameras);
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
