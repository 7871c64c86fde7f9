/**
 * Motion gating before detection: a camera's frame goes to the face pipeline only when the picture changed since the
 * last frame that went (something moved in view), while the pipeline still follows someone on that camera, or when
 * `recheckMs` passed without either (someone standing still in view is still found). An empty doorway then costs
 * a sparse comparison per frame instead of a detector run (docs/benchmarks.md, agent-real: idle cost).
 *
 * The comparison: the green channel on a grid every `step` pixels (160x90 points of a 1280x720 picture); a point
 * changed when it moved by more than `pointDelta` levels (a camera's sensor noise is a few levels), the picture
 * changed when more than `changedShare` of the points did. A person entering a doorway changes thousands.
 *
 * A change is followed until the detector has answered it: given `analysedUpTo` (the time of the newest frame of the
 * camera the detector has finished with), the frames after a change go through, unchanged or not, until the detector
 * has analysed the changed frame. The pipeline keeps only the newest of them waiting (agent/vision/pipeline.ts), so
 * someone who steps into view and stands still is looked at again as soon as the detector is free, not only at the
 * next recheck; without it, a detector slower than the frame interval (a loaded shop PC) saw such a face once,
 * too few frames for a visit (docs/decisions.md, issue 26). An idle recheck is not a change: it wakes nothing more.
 */
import type { Region } from '../bodies/crop.js';
import type { Frame } from '../capture/frame.js';

export interface MotionGateOptions {
  step?: number;
  pointDelta?: number;
  changedShare?: number;
  recheckMs?: number;
}

interface CameraRef {
  /** The picture's size and the region compared (the whole picture, or a door line's band). */
  key: string;
  points: Uint8Array;
  passedAt: number;
  /** The time of a changed frame that went and the detector has not answered yet (with `analysedUpTo` only). */
  changeAt?: number;
}

export class MotionGate {
  private readonly step: number;
  private readonly pointDelta: number;
  private readonly changedShare: number;
  private readonly recheckMs: number;
  private readonly cameras = new Map<string, CameraRef>();
  /** Frames held back / let through since start. */
  readonly counts = { held: 0, passed: 0 };

  constructor(options: MotionGateOptions = {}) {
    this.step = options.step ?? 8;
    this.pointDelta = options.pointDelta ?? 24;
    this.changedShare = options.changedShare ?? 0.002;
    this.recheckMs = options.recheckMs ?? 2000;
  }

  /**
   * Whether this frame goes to the pipeline. `following`: the pipeline has a track open on this camera. `region`:
   * only motion there counts (a door line's band: people walking elsewhere in view do not wake the detector).
   * `analysedUpTo`: the time (ms) of the newest frame of this camera the detector has finished with; when given, the
   * frames after a change go through until the detector has analysed it (see above).
   */
  pass(frame: Frame, following: boolean, region?: Region, analysedUpTo?: number): boolean {
    const now = frame.at.getTime();
    const ref = this.cameras.get(frame.cameraId);
    const r = region ?? { x: 0, y: 0, w: frame.width, h: frame.height };
    const key = `${frame.width}x${frame.height}/${r.x},${r.y},${r.w},${r.h}`;
    const fresh = !ref || ref.key !== key;
    const points = this.sample(frame, r, fresh ? undefined : ref.points);
    const moved = fresh || this.changed(points, ref.points);
    // (A clock set back ends the wait: `now` before the change.)
    const awaiting = !fresh && analysedUpTo !== undefined && ref.changeAt !== undefined && now >= ref.changeAt && analysedUpTo < ref.changeAt;
    const go = moved || following || awaiting || now - ref.passedAt >= this.recheckMs || now < ref.passedAt;
    if (go) {
      const changeAt = awaiting ? ref.changeAt : moved && analysedUpTo !== undefined ? now : undefined;
      this.cameras.set(frame.cameraId, changeAt === undefined ? { key, points, passedAt: now } : { key, points, passedAt: now, changeAt });
      this.counts.passed++;
    } else {
      this.counts.held++;
    }
    return go;
  }

  forget(cameraId: string): void {
    this.cameras.delete(cameraId);
  }

  /** The grid's green values (into a new array: the reference outlives the frame's buffer). */
  private sample(frame: Frame, r: Region, like: Uint8Array | undefined): Uint8Array {
    const { width, data } = frame;
    const step = this.step;
    const cols = Math.floor((r.w + step - 1) / step);
    const rows = Math.floor((r.h + step - 1) / step);
    const out = like && like.length === cols * rows ? new Uint8Array(like.length) : new Uint8Array(cols * rows);
    let i = 0;
    for (let y = r.y; y < r.y + r.h; y += step) {
      let p = (y * width + r.x) * 3 + 1;
      for (let x = 0; x < r.w; x += step, p += step * 3) out[i++] = data[p]!;
    }
    return out;
  }

  private changed(a: Uint8Array, b: Uint8Array): boolean {
    const limit = Math.max(1, Math.floor(a.length * this.changedShare));
    let n = 0;
    for (let i = 0; i < a.length; i++) {
      const d = a[i]! - b[i]!;
      if ((d > this.pointDelta || d < -this.pointDelta) && ++n >= limit) return true;
    }
    return false;
  }
}
