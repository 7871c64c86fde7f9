/**
 * Per-camera body tracking (docs/body-counting.md, "Shop PC"): each frame's person boxes are associated with the
 * live tracks (the least total cost over all pairs, agent/bodies/assign.ts), by overlap (IoU) with the track's predicted box (constant velocity) or,
 * failing that, by centre distance relative to the body's size (someone who walked further than their own width
 * between two frames at a low detect_fps). A track not matched is kept for `maxLostMs` of frame time (a missed
 * detection, someone passing behind another) and then ended. Pure bookkeeping in 0..1 frame coordinates.
 */
import { assign } from './assign.js';
import type { BodyBox } from './types.js';

export interface BodyTrackerConfig {
  /** Least IoU between a track's predicted box and a detection to associate them. */
  minIou: number;
  /** Otherwise: greatest centre distance, in multiples of the track's box size (sqrt of the area, aspect-corrected). */
  maxCentreDistance: number;
  /** Always required: the detection/track size ratio within [1/maxSizeRatio, maxSizeRatio]. */
  maxSizeRatio: number;
  /** A track unseen for longer than this (frame time) has ended. */
  maxLostMs: number;
  /** Detections below this score are ignored. */
  minScore: number;
}

export const DEFAULT_BODY_TRACKER: BodyTrackerConfig = { minIou: 0.2, maxCentreDistance: 1.2, maxSizeRatio: 1.8, maxLostMs: 1500, minScore: 0 };

export interface BodyTrack {
  readonly id: string;
  readonly firstAt: number;
  /** Frame time (ms) of the last match. */
  lastAt: number;
  box: BodyBox;
  /** Centre velocity, frame units per ms (smoothed). */
  vx: number;
  vy: number;
  /** Frames in which the track was matched. */
  hits: number;
  /** Matched in the latest update. */
  seen: boolean;
}

export function iouOf(a: BodyBox, b: BodyBox): number {
  const ix = Math.max(0, Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x));
  const iy = Math.max(0, Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y));
  const inter = ix * iy;
  const union = a.w * a.h + b.w * b.h - inter;
  return union > 0 ? inter / union : 0;
}

function centre(b: BodyBox): [number, number] {
  return [b.x + b.w / 2, b.y + b.h / 2];
}

export class BodyTracker {
  readonly config: BodyTrackerConfig;
  private readonly live: BodyTrack[] = [];
  private next = 0;

  /**
   * @param aspect the picture's width / height: distances are measured with x scaled by it (0.1 across a 16:9
   * picture is further than 0.1 down it).
   */
  constructor(
    config: Partial<BodyTrackerConfig> = {},
    private readonly aspect = 1,
    private readonly prefix = 'b',
  ) {
    this.config = { ...DEFAULT_BODY_TRACKER, ...config };
  }

  /** Live tracks (including those missed in the latest frames but still remembered). */
  tracks(): readonly BodyTrack[] {
    return this.live;
  }

  /** One frame's detections at frame time `at` (ms); returns the live tracks after association. */
  update(boxes: readonly BodyBox[], at: number): readonly BodyTrack[] {
    const { minIou, maxCentreDistance, maxSizeRatio, maxLostMs, minScore } = this.config;
    // Ended: unseen for too long (or time went backwards: a camera restarted).
    for (let i = this.live.length - 1; i >= 0; i--) {
      const t = this.live[i]!;
      if (at - t.lastAt > maxLostMs || at < t.lastAt) this.live.splice(i, 1);
    }
    const dets = boxes.filter((b) => b.score >= minScore && b.w > 0 && b.h > 0);
    const predicted = this.live.map((t) => this.predict(t, at));
    // Every allowed pair's cost: 0..1 by overlap, above 1 by centre distance (every overlap pair is cheaper).
    const cost = this.live.map((t, ti) => {
      const p = predicted[ti]!;
      const ps = this.size(p);
      return dets.map((d) => {
        const ratio = this.size(d) / ps;
        if (ratio > maxSizeRatio || ratio < 1 / maxSizeRatio) return Infinity;
        const overlap = iouOf(p, d);
        if (overlap >= minIou) return 1 - overlap;
        const [px, py] = centre(p);
        const [dx, dy] = centre(d);
        const dist = Math.hypot((px - dx) * this.aspect, py - dy) / ps;
        return dist <= maxCentreDistance ? 1 + dist : Infinity;
      });
    });
    // The least total cost, pairing as many as can be paired: leaving a track and a detection apart costs more than
    // any allowed pair.
    const taken = assign(cost, dets.length, 1 + maxCentreDistance);
    const usedD = new Set<number>();
    for (const t of this.live) t.seen = false;
    taken.forEach((d, t) => {
      if (d < 0) return;
      usedD.add(d);
      this.match(this.live[t]!, dets[d]!, at);
    });
    dets.forEach((d, i) => {
      if (usedD.has(i)) return;
      this.live.push({ id: `${this.prefix}${++this.next}`, firstAt: at, lastAt: at, box: { ...d }, vx: 0, vy: 0, hits: 1, seen: true });
    });
    return this.live;
  }

  /**
   * Nothing moved in view from `from` to `at` (frame times, ms: motion gating held the frame): whoever was there is
   * still there, so that time does not count toward `maxLostMs`. Someone standing still on the line is looked at
   * only every few seconds (motion gating's recheck), longer than a track would otherwise be remembered.
   */
  still(from: number, at: number): void {
    const ms = at - from;
    if (!(ms > 0)) return;
    for (const t of this.live) t.lastAt = Math.min(at, t.lastAt + ms);
  }

  /** Forgets every track (the camera's stream restarted, its line changed). */
  reset(): void {
    this.live.length = 0;
  }

  private match(t: BodyTrack, d: BodyBox, at: number): void {
    const dt = at - t.lastAt;
    if (dt > 0) {
      const [ox, oy] = centre(t.box);
      const [nx, ny] = centre(d);
      const vx = (nx - ox) / dt;
      const vy = (ny - oy) / dt;
      // The first step sets the velocity; later ones are smoothed.
      t.vx = t.hits === 1 ? vx : 0.5 * t.vx + 0.5 * vx;
      t.vy = t.hits === 1 ? vy : 0.5 * t.vy + 0.5 * vy;
    }
    t.box = { ...d };
    t.lastAt = at;
    t.hits++;
    t.seen = true;
  }

  private predict(t: BodyTrack, at: number): BodyBox {
    const dt = Math.min(Math.max(0, at - t.lastAt), 1000);
    return { ...t.box, x: t.box.x + t.vx * dt, y: t.box.y + t.vy * dt };
  }

  private size(b: BodyBox): number {
    return Math.sqrt(Math.max(1e-9, b.w * this.aspect * b.h));
  }
}
