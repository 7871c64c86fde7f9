/**
 * Per-camera face tracking: associates each frame's face boxes with the live
 * tracks by overlap with the track's predicted box (IoU) and, failing that, by
 * centre distance relative to the face size (a face that moved faster than
 * its own size between two 5-fps frames), with a short tolerance for frames in
 * which a face is missed. Pure bookkeeping: no pixels, no models.
 */
import { iou } from './detect.js';
import type { Box } from './types.js';

export interface TrackerConfig {
  /** Minimum IoU between a track's predicted box and a detection to associate them. */
  minIou: number;
  /** Otherwise: maximum centre distance, in multiples of the track's face size (sqrt of box area). */
  maxCentreDistance: number;
  /** Always required: detection/track face size ratio within [1/maxSizeRatio, maxSizeRatio]. */
  maxSizeRatio: number;
  /** A track unseen for longer than this (frame time) has ended. */
  maxLostMs: number;
}

export const DEFAULT_TRACKER: TrackerConfig = { minIou: 0.2, maxCentreDistance: 1.0, maxSizeRatio: 1.5, maxLostMs: 1200 };

export interface Track<T> {
  readonly id: string;
  readonly firstAt: number;
  lastAt: number;
  box: Box;
  /** Centre velocity, pixels per ms (smoothed). */
  vx: number;
  vy: number;
  /** Frames in which the track was matched. */
  frames: number;
  /** Caller's per-track state. */
  readonly data: T;
}

function centre(b: Box): [number, number] {
  return [(b.x1 + b.x2) / 2, (b.y1 + b.y2) / 2];
}

function size(b: Box): number {
  return Math.sqrt(Math.max(1, (b.x2 - b.x1) * (b.y2 - b.y1)));
}

function predict(t: Track<unknown>, at: number): Box {
  const dt = Math.min(at - t.lastAt, 1000);
  const dx = t.vx * dt;
  const dy = t.vy * dt;
  return { x1: t.box.x1 + dx, y1: t.box.y1 + dy, x2: t.box.x2 + dx, y2: t.box.y2 + dy };
}

export class FaceTracker<T> {
  private readonly live: Track<T>[] = [];

  constructor(
    readonly config: TrackerConfig,
    private readonly newData: () => T,
    private readonly newId: () => string,
  ) {}

  get tracks(): readonly Track<T>[] {
    return this.live;
  }

  /**
   * One frame's detections at frame time `at` (ms). Returns, for each
   * detection (same order), the track it now belongs to, and the tracks that
   * ended (unseen for longer than maxLostMs), which are removed.
   */
  update(at: number, boxes: readonly Box[]): { assigned: Track<T>[]; ended: Track<T>[] } {
    const cfg = this.config;
    const ended = this.expire(at);
    const pairs: { t: number; d: number; score: number }[] = [];
    const predicted = this.live.map((t) => predict(t, at));
    for (let ti = 0; ti < this.live.length; ti++) {
      const track = this.live[ti]!;
      const p = predicted[ti]!;
      const [pcx, pcy] = centre(p);
      const ts = size(track.box);
      for (let di = 0; di < boxes.length; di++) {
        const b = boxes[di]!;
        const ratio = size(b) / ts;
        if (ratio > cfg.maxSizeRatio || ratio < 1 / cfg.maxSizeRatio) continue;
        const overlap = iou(p, b);
        if (overlap >= cfg.minIou) {
          pairs.push({ t: ti, d: di, score: 1 + overlap });
          continue;
        }
        const [cx, cy] = centre(b);
        const dist = Math.hypot(cx - pcx, cy - pcy) / ts;
        if (dist <= cfg.maxCentreDistance) {
          pairs.push({ t: ti, d: di, score: 1 - dist / cfg.maxCentreDistance });
        }
      }
    }
    pairs.sort((a, b) => b.score - a.score);
    const trackUsed = new Set<number>();
    const assigned: (Track<T> | undefined)[] = new Array(boxes.length).fill(undefined);
    for (const { t, d } of pairs) {
      if (trackUsed.has(t) || assigned[d]) continue;
      trackUsed.add(t);
      const track = this.live[t]!;
      const b = boxes[d]!;
      const dt = at - track.lastAt;
      if (dt > 0) {
        const [ox, oy] = centre(track.box);
        const [nx, ny] = centre(b);
        const vx = (nx - ox) / dt;
        const vy = (ny - oy) / dt;
        track.vx = track.frames === 1 ? vx : 0.5 * track.vx + 0.5 * vx;
        track.vy = track.frames === 1 ? vy : 0.5 * track.vy + 0.5 * vy;
      }
      track.box = b;
      track.lastAt = at;
      track.frames++;
      assigned[d] = track;
    }
    const result: Track<T>[] = [];
    for (let di = 0; di < boxes.length; di++) {
      let track = assigned[di];
      if (!track) {
        track = { id: this.newId(), firstAt: at, lastAt: at, box: boxes[di]!, vx: 0, vy: 0, frames: 1, data: this.newData() };
        this.live.push(track);
      }
      result.push(track);
    }
    return { assigned: result, ended };
  }

  /** Remove and return the tracks unseen since before `at - maxLostMs`. */
  expire(at: number): Track<T>[] {
    const ended: Track<T>[] = [];
    for (let i = this.live.length - 1; i >= 0; i--) {
      if (at - this.live[i]!.lastAt > this.config.maxLostMs) ended.push(...this.live.splice(i, 1));
    }
    return ended.reverse();
  }

  /** Remove and return every live track. */
  clear(): Track<T>[] {
    return this.live.splice(0);
  }
}
