/**
 * Body counting at the doors (docs/body-counting.md, "Shop PC"): for every camera whose tuning has a counting line,
 * its frames (at the camera's detect_fps, as capture delivers them) go through motion gating (motion.ts: an empty
 * doorway costs a sparse comparison per frame), the person detector, the camera's BodyTracker and LineCounter; each
 * crossing goes to `onCrossing` (the CrossingSink, then the disk queue). Independent of face recognition: it runs
 * the same with recognition off or the face models missing.
 *
 * The detector is loaded on the first frame of a camera with a line (a shop PC without lines never loads it) and
 * runs one picture at a time for all cameras; while it is busy, each camera keeps only its newest frame (older
 * ones are skipped and counted: the tracker bridges the gap with its velocity and memory). A detector that will not
 * load is reported once and retried after `retryMs`.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CountingLine } from '../../shared/agent-api.js';
import { bandRegion, cropPicture, fromRegion, type Region } from '../bodies/crop.js';
import { LineCounter, type LineCounterOptions } from '../bodies/line.js';
import { BodyTracker, type BodyTrackerConfig } from '../bodies/tracker.js';
import type { BodyBox, BodyDetector, Crossing } from '../bodies/types.js';
import type { Frame } from '../capture/frame.js';
import type { RawImage } from '../capture/ppm.js';
import { MotionGate, type MotionGateOptions } from './motion.js';

/** Detections failing in a row before the detector is closed and loaded again. */
const MAX_FAILURES = 5;

export interface DoorCountingOptions {
  /** A camera's counting line by camera_id (looked up on every frame); null or undefined: not counted. */
  lineOf: (cameraId: string) => CountingLine | null | undefined;
  /** Loads the person detector (on the first frame of a camera with a line). */
  loadDetector: () => Promise<BodyDetector>;
  onCrossing: (cameraId: string, crossing: Crossing) => void;
  log: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
  /** Motion gating settings; false: every frame is looked at. */
  motion?: MotionGateOptions | false;
  tracker?: Partial<BodyTrackerConfig>;
  line?: Omit<LineCounterOptions, 'aspect'>;
  /** Wait before trying again to load a detector that failed; default 60 s. */
  retryMs?: number;
  /** Look at most this many frames a second per camera (the rest are `paced`); 0 or absent: every frame capture delivers. */
  maxFps?: number;
  /**
   * The detector and the motion gate look at the line's band only (agent/bodies/crop.ts): the line's bounding box
   * widened by `margin` (share of the picture's height) each way; default { margin: DEFAULT_BAND_MARGIN }. false:
   * the whole picture.
   */
  band?: { margin: number } | false;
  /**
   * Whether every frame passes the motion gate while the camera has a live track (true), or only frames with motion
   * in the band (false: someone standing still in view costs a look every `recheckMs`); default DEFAULT_FOLLOW.
   */
  follow?: boolean;
  /**
   * How tall (pixels) people need to be in the detector's input: a look is scaled so the tallest person seen lately
   * is about this tall (never more input pixels than the detector's default); default DEFAULT_PERSON_PX; false: the
   * detector's default pixels on every look.
   */
  personPx?: number | false;
  /**
   * `personPx` while two or more live tracks are within one body height of the line (a group at the door: people
   * beside and behind one another need more pixels to be told apart); default DEFAULT_CROWD_PX; false: personPx.
   */
  crowdPx?: number | false;
  /**
   * Looks a second per camera while a live track is within one body height of the line (a fast walker crosses and
   * leaves in a few looks); default DEFAULT_NEAR_FPS; 0 or absent with maxFps 0: every frame.
   */
  nearFps?: number;
  /**
   * While motion gating holds frames (nothing moved in the band), the tracks' memory clock stops (tracker.still):
   * someone standing on the line, looked at only every `recheckMs`, keeps their track and side; default
   * DEFAULT_STILL_TRACKS.
   */
  stillTracks?: boolean;
  /**
   * Each look is at the part of the band where something moved and where the live tracks are expected (widened to
   * whole people), not the whole band: fewer input pixels, or small people enlarged; default DEFAULT_ROI.
   */
  roi?: boolean;
  /** Called after every look with what was looked at and found (picture pixels and 0..1 boxes): for benchmarks. */
  onLook?: (cameraId: string, at: Date, region: Region, boxes: readonly BodyBox[]) => void;
}

/** The line's hysteresis band is at most this share of a track's height (LineCounterOptions.perHeight; measured: docs/decisions.md). */
export const DEFAULT_LINE_PER_HEIGHT = 0.2;
/** A track first seen in the hysteresis band this share of it off the line takes that side (LineCounterOptions.bornSide; measured: docs/decisions.md). */
export const DEFAULT_LINE_BORN_SIDE = 0.25;
/** A track lost this share of the hysteresis band past the line, walking away, is counted (LineCounterOptions.lostPast; measured: docs/decisions.md). */
export const DEFAULT_LINE_LOST_PAST = 0.25;
/** A track first seen beside another within this many of its heights past the line, walking on, is counted (LineCounterOptions.emerged; measured: docs/decisions.md). */
export const DEFAULT_LINE_EMERGED = 0.5;

/** Default of `roi` (measured: docs/decisions.md). */
export const DEFAULT_ROI = true;
/** A look region covering more than this share of the band looks at the whole band. */
const ROI_MOST = 0.7;

/** Default of `stillTracks` (measured: docs/decisions.md). */
export const DEFAULT_STILL_TRACKS = true;

/** Default of `personPx` (measured on the real set, the derived hard cases and the drawn door video: docs/decisions.md, third pass; 80 since the cost pass of issue 25). */
export const DEFAULT_PERSON_PX: number | false = 80;
/** Default of `crowdPx`: off (with `personPx` 80 it gained no crossing and cost 30-80 % more detector input: docs/decisions.md, fifth pass). */
export const DEFAULT_CROWD_PX: number | false = false;
/** Default of `nearFps` (measured: docs/decisions.md). */
export const DEFAULT_NEAR_FPS = 0;

/** Default of `follow` (measured: docs/decisions.md). */
export const DEFAULT_FOLLOW = false;

/** Default band around a door line, share of the picture's height each way (measured: docs/decisions.md). */
export const DEFAULT_BAND_MARGIN = 0.2;
/** The band's margin is at least this share of the tallest person lately (doors.ts, widen). */
export const BAND_PER_HEIGHT = 0.75;
/** The band's margin: at least `least`, and BAND_PER_HEIGHT of the tallest person lately, in steps of 0.05. */
export function bandMargin(least: number, personHeight: number): number {
  return Math.min(1, Math.max(least, Math.ceil((BAND_PER_HEIGHT * personHeight) / 0.05 - 1e-9) * 0.05));
}

/** The tallest person a camera starts with (share of the picture's height), before it has seen anyone. */
const START_PERSON_HEIGHT = 0.5;

export interface DoorCameraStats {
  /** Frames received / left out to keep to maxFps / held back by motion gating / skipped while the detector was busy / looked at. */
  frames: number;
  paced: number;
  held: number;
  skipped: number;
  analysed: number;
  /** Bodies found (summed over analysed frames), live tracks now, crossings counted. */
  bodies: number;
  tracks: number;
  in: number;
  out: number;
}

interface DoorCamera {
  key: string;
  /** What the detector and the motion gate look at: the line's band, or the whole picture. */
  region: Region;
  line: CountingLine;
  /** Tallest person lately (share of the picture's height, decaying), which widens the band (bandMargin). */
  personHeight: number;
  /** Tallest person seen lately (share of the picture's height, decaying); undefined before anyone was seen. */
  seenHeight: number | undefined;
  /** When its last frame went on to motion gating (frame time, ms). */
  lastTaken: number;
  tracker: BodyTracker;
  counter: LineCounter;
  stats: DoorCameraStats;
}

interface Pending {
  /** The camera's region of the frame (a copy), the region, and the frame's time and size. */
  picture: RawImage;
  region: Region;
  at: Date;
  width: number;
  height: number;
  camera: DoorCamera;
  /** The most the picture needs enlarging for the detector (personPx). */
  maxScale: number | undefined;
}

export class DoorCounting {
  private readonly opts: DoorCountingOptions;
  private readonly cameras = new Map<string, DoorCamera>();
  private readonly gate: MotionGate | undefined;
  private readonly pending = new Map<string, Pending>();
  private detector: BodyDetector | undefined;
  private loading: Promise<void> | undefined;
  private failedAt: number | undefined;
  private draining: Promise<void> | undefined;
  private closed = false;
  /** Detections failed in a row. */
  private failures = 0;
  /** Time spent in the detector, ms, and its calls (the benchmark's bare cost beside the process's). */
  readonly detectorTime = { calls: 0, ms: 0 };

  constructor(options: DoorCountingOptions) {
    this.opts = options;
    this.gate = options.motion === false ? undefined : new MotionGate(options.motion ?? {});
  }

  /** The detector's name once loaded. */
  get detectorName(): string | undefined {
    return this.detector?.name;
  }

  /** Why the detector is not running, if it failed to load. */
  problem: string | undefined;

  stats(): Record<string, DoorCameraStats> {
    return Object.fromEntries([...this.cameras].map(([id, c]) => [id, { ...c.stats, tracks: c.tracker.tracks().length }]));
  }

  /** The frame consumer: synchronous and cheap; the detection runs later on a copy. */
  readonly consume = (frame: Frame): void => {
    if (this.closed) return;
    const line = this.opts.lineOf(frame.cameraId);
    if (!line) {
      if (this.cameras.has(frame.cameraId)) this.forget(frame.cameraId);
      return;
    }
    const camera = this.camera(frame, line);
    camera.stats.frames++;
    if (!this.detector) {
      this.load();
      return;
    }
    const near = this.nearLine(camera);
    const maxFps = near ? Math.max(this.opts.maxFps ?? 0, this.opts.nearFps ?? DEFAULT_NEAR_FPS) : (this.opts.maxFps ?? 0);
    const at = frame.at.getTime();
    // 10 % slack: capture's frame times jitter, and a frame a little early must not halve the rate.
    if (maxFps > 0 && at - camera.lastTaken < 900 / maxFps) {
      camera.stats.paced++;
      return;
    }
    const taken = camera.lastTaken;
    camera.lastTaken = at;
    const following = near || ((this.opts.follow ?? DEFAULT_FOLLOW) && camera.tracker.tracks().length > 0);
    if (this.gate && !this.gate.pass(frame, following, camera.region)) {
      camera.stats.held++;
      // Nothing moved in the band since the last look: whoever stands there is still there (tracker.still).
      if (this.opts.stillTracks ?? DEFAULT_STILL_TRACKS) camera.tracker.still(taken, at);
      return;
    }
    const size = frame.width * frame.height * 3;
    if (frame.data.length < size) return;
    if (this.pending.has(frame.cameraId)) camera.stats.skipped++;
    const region = this.lookRegion(camera, frame);
    // Our own copy of the region: capture fills the frame's buffer again with a later picture.
    const picture = cropPicture(frame, region);
    const basePx = this.opts.personPx ?? DEFAULT_PERSON_PX;
    const crowdPx = this.opts.crowdPx ?? DEFAULT_CROWD_PX;
    const personPx = basePx && crowdPx && this.crowded(camera) ? Math.max(basePx, crowdPx) : basePx;
    const maxScale = personPx && camera.seenHeight ? personPx / (camera.seenHeight * frame.height) : undefined;
    this.pending.set(frame.cameraId, { picture, region, at: frame.at, width: frame.width, height: frame.height, camera, maxScale });
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  };

  /** A camera has a line: load the detector now rather than on its first frame (the first people are not missed). */
  prepare(): void {
    if (!this.detector) this.load();
  }

  /** No camera has a line any more: nothing is counted, so nothing is reported as failing to count. */
  noLines(): void {
    this.problem = undefined;
  }

  /** Resolves when the detector is loaded (or failed to) and every frame handed over has been looked at. */
  async idle(): Promise<void> {
    while (this.loading || this.draining) await (this.loading ?? this.draining);
  }

  /** A camera removed or its line cleared: its tracks end, nothing is counted for them. */
  forget(cameraId: string): void {
    this.cameras.delete(cameraId);
    this.pending.delete(cameraId);
    this.gate?.forget(cameraId);
  }

  /** Stops taking frames, lets the detection under way finish (its crossings are reported) and closes the detector. */
  async close(): Promise<void> {
    this.closed = true;
    this.pending.clear();
    await this.draining;
    await this.loading;
    await this.detector?.close().catch((err: unknown) => this.opts.log.warn({ err }, 'person detector not closed cleanly'));
    this.detector = undefined;
  }

  private camera(frame: Frame, line: CountingLine): DoorCamera {
    const key = `${JSON.stringify(line)}|${frame.width}x${frame.height}`;
    let camera = this.cameras.get(frame.cameraId);
    if (camera?.key === key) return camera;
    // New, or its line or picture size changed: the tracks start again (a track cannot cross a line it never saw).
    const aspect = frame.width / frame.height;
    const band = this.opts.band ?? { margin: DEFAULT_BAND_MARGIN };
    camera = {
      key,
      region: band ? bandRegion(line, frame.width, frame.height, bandMargin(band.margin, START_PERSON_HEIGHT)) : { x: 0, y: 0, w: frame.width, h: frame.height },
      line,
      personHeight: START_PERSON_HEIGHT,
      seenHeight: undefined,
      tracker: new BodyTracker(this.opts.tracker ?? {}, aspect),
      counter: new LineCounter(line, { perHeight: DEFAULT_LINE_PER_HEIGHT, bornSide: DEFAULT_LINE_BORN_SIDE, lostPast: DEFAULT_LINE_LOST_PAST, emerged: DEFAULT_LINE_EMERGED, ...this.opts.line, aspect }),
      lastTaken: Number.NEGATIVE_INFINITY,
      stats: camera?.stats ?? { frames: 0, paced: 0, held: 0, skipped: 0, analysed: 0, bodies: 0, tracks: 0, in: 0, out: 0 },
    };
    this.cameras.set(frame.cameraId, camera);
    this.pending.delete(frame.cameraId);
    return camera;
  }

  /**
   * The band follows the people's size: it must hold a whole person on either side of the line (a person cut by the
   * band's edge is a box that changes size from look to look, which the tracker cannot follow), so its margin is at
   * least BAND_PER_HEIGHT of the tallest person lately (decaying by 2 % a look), in steps of 0.05. A camera starts
   * as if it had seen a person half the picture tall (a wide band for its first ~10 s of looks), so the first people
   * at a door with large people are not cut before their size is known.
   */
  private widen(camera: DoorCamera, boxes: readonly BodyBox[], width: number, height: number): void {
    const band = this.opts.band ?? { margin: DEFAULT_BAND_MARGIN };
    if (!band) return;
    camera.personHeight = Math.max(camera.personHeight * 0.98, ...boxes.map((b) => b.h));
    if (boxes.length > 0 || camera.seenHeight !== undefined) camera.seenHeight = Math.max((camera.seenHeight ?? 0) * 0.98, ...boxes.map((b) => b.h));
    const region = bandRegion(camera.line, width, height, bandMargin(band.margin, camera.personHeight));
    if (region.x !== camera.region.x || region.y !== camera.region.y || region.w !== camera.region.w || region.h !== camera.region.h) camera.region = region;
  }

  /**
   * What the detector looks at this time (`roi`): the part of the band where something moved since the last look,
   * and where each live track is expected now, widened to hold whole people; the whole band when nothing moved (a
   * recheck: someone standing still) or when that part is most of the band.
   */
  private lookRegion(camera: DoorCamera, frame: Frame): Region {
    const band = camera.region;
    if (!(this.opts.roi ?? DEFAULT_ROI) || !this.gate) return band;
    const moved = this.gate.movedAt(frame.cameraId);
    if (!moved) return band;
    const ph = (camera.seenHeight ?? camera.personHeight) * frame.height;
    const at = frame.at.getTime();
    const boxes: Region[] = [moved];
    for (const t of camera.tracker.tracks()) {
      const dt = Math.min(Math.max(0, at - t.lastAt), 1000);
      boxes.push({ x: (t.box.x + t.vx * dt) * frame.width, y: (t.box.y + t.vy * dt) * frame.height, w: t.box.w * frame.width, h: t.box.h * frame.height });
    }
    let x0 = Math.min(...boxes.map((b) => b.x)) - 0.4 * ph;
    let x1 = Math.max(...boxes.map((b) => b.x + b.w)) + 0.4 * ph;
    let y0 = Math.min(...boxes.map((b) => b.y)) - 0.6 * ph;
    let y1 = Math.max(...boxes.map((b) => b.y + b.h)) + 0.6 * ph;
    // At least a whole person around the middle.
    const grow = (lo: number, hi: number, least: number): [number, number] => (hi - lo >= least ? [lo, hi] : [(lo + hi - least) / 2, (lo + hi + least) / 2]);
    [x0, x1] = grow(x0, x1, 1.0 * ph);
    [y0, y1] = grow(y0, y1, 1.8 * ph);
    const x = Math.max(band.x, Math.floor(x0));
    const y = Math.max(band.y, Math.floor(y0));
    const w = Math.min(band.x + band.w, Math.ceil(x1)) - x;
    const h = Math.min(band.y + band.h, Math.ceil(y1)) - y;
    if (w < 32 || h < 32 || w * h >= ROI_MOST * band.w * band.h) return band;
    return { x, y, w, h };
  }

  /** Whether two or more live tracks' points are within one body height of the line (a group at the door). */
  private crowded(camera: DoorCamera): boolean {
    let near = 0;
    for (const t of camera.tracker.tracks()) if (Math.abs(camera.counter.signed(camera.counter.point(t.box))) <= t.box.h && ++near >= 2) return true;
    return false;
  }

  /** Whether a live track's point is within one body height of the line (about to cross, or crossing). */
  private nearLine(camera: DoorCamera): boolean {
    if (!(this.opts.nearFps ?? DEFAULT_NEAR_FPS)) return false;
    return camera.tracker.tracks().some((t) => Math.abs(camera.counter.signed(camera.counter.point(t.box))) <= t.box.h);
  }

  private load(): void {
    if (this.loading || this.closed) return;
    if (this.failedAt !== undefined && Date.now() - this.failedAt < (this.opts.retryMs ?? 60_000)) return;
    const started = Date.now();
    this.loading = this.opts
      .loadDetector()
      .then(async (detector) => {
        if (this.closed) {
          await detector.close();
          return;
        }
        this.detector = detector;
        this.problem = undefined;
        this.failedAt = undefined;
        this.opts.log.info({ detector: detector.name, ms: Date.now() - started }, 'body counting running');
      })
      .catch((err: unknown) => {
        this.failedAt = Date.now();
        const problem = `person detector would not load: ${(err as Error).message}`.slice(0, 300);
        if (problem !== this.problem) this.opts.log.error({ problem }, 'body counting not running');
        this.problem = problem;
      })
      .finally(() => {
        this.loading = undefined;
      });
  }

  private async drain(): Promise<void> {
    while (this.detector && !this.closed) {
      const next = this.pending.entries().next();
      if (next.done) return;
      const [cameraId, { picture, region, at: frameAt, width, height, camera, maxScale }] = next.value;
      this.pending.delete(cameraId);
      let boxes;
      const started = performance.now();
      try {
        boxes = (await this.detector.detect(picture, maxScale !== undefined ? { maxScale } : undefined)).map((b) => fromRegion(b, region, width, height));
      } catch (err) {
        const problem = (err as Error).message;
        if (this.failures++ === 0) this.opts.log.warn({ err: problem, camera: cameraId }, 'person detection failed on a frame');
        // Failing again and again (its thread died): closed, and loaded again after retryMs.
        if (this.failures >= MAX_FAILURES && this.detector) {
          const dead = this.detector;
          this.detector = undefined;
          this.failedAt = Date.now();
          this.problem = `person detector failed ${this.failures} times in a row: ${problem}`.slice(0, 300);
          this.opts.log.error({ problem: this.problem }, 'body counting stopped; the detector is loaded again later');
          this.failures = 0;
          await dead.close().catch(() => undefined);
        }
        continue;
      } finally {
        this.detectorTime.calls++;
        this.detectorTime.ms += performance.now() - started;
      }
      this.failures = 0;
      // The camera's line changed (or it was removed) while the detector ran: this frame belongs to the old one.
      if (this.cameras.get(cameraId) !== camera) continue;
      camera.stats.analysed++;
      camera.stats.bodies += boxes.length;
      this.opts.onLook?.(cameraId, frameAt, region, boxes);
      this.widen(camera, boxes, width, height);
      const crossings = camera.counter.update(camera.tracker.update(boxes, frameAt.getTime()), frameAt);
      for (const c of crossings) {
        camera.stats[c.direction]++;
        try {
          this.opts.onCrossing(cameraId, c);
        } catch (err) {
          this.opts.log.error({ err, camera: cameraId }, 'crossing not reported');
        }
      }
    }
  }
}

/**
 * The installed person detector (agent/bodies/detector.ts): the person model sits in the models folder beside the
 * face models (`footfall models fetch`), listed in its own `bodies.json`; the face models' `manifest.json` is not
 * needed. `modelsDir`: the folder given (`footfall agent --models`); otherwise `<data dir>/models`.
 */
export async function loadDefaultBodyDetector(dataDir: string, modelsDir: string | undefined): Promise<BodyDetector> {
  // In a thread of its own (TF.js's WebAssembly backend computes synchronously), started only now: a shop PC without
  // a counting line does not pay for TF.js.
  const { startBodyDetectorThread } = await import('../bodies/detector-thread.js');
  // `shape`: the line's band is rarely square; the detector's input takes its shape instead of padding it.
  // FOOTFALL_PERSON_ENGINE=tfjs runs the whole model on TF.js, as before its backbone moved to onnxruntime (the same
  // boxes at about twice the CPU): a way back should onnxruntime misbehave on some PC, and the benchmarks' before.
  const engine = process.env.FOOTFALL_PERSON_ENGINE === 'tfjs' ? { engine: 'tfjs' as const } : {};
  return startBodyDetectorThread(modelsDir ?? join(dataDir, 'models'), { fit: 'shape', ...engine });
}
