/**
 * Counting crossings of a camera's line (docs/body-counting.md, "Shop PC"). Each body track has a reference point
 * (by default its box's centre: a door camera often cuts people's feet or heads off at the picture's edge, and the
 * centre moves across the line as surely as the feet). The point's signed distance to the line decides its side:
 *
 * - a track is *clearly* on a side once its point is more than `margin` away from the line (the hysteresis band);
 * - a crossing is counted when a track that was clearly on one side is next clearly on the other: an entry when the
 *   new side is the line's `inside`, an exit otherwise. Jitter inside the band changes nothing, so a person
 *   standing on the line is not counted again and again; someone who walks in and back out is one entry and one
 *   exit;
 * - only the segment counts: the place where the track's path last went over the (infinite) line must lie between
 *   `a` and `b` (within `extent` of the segment's length), so someone passing beside the end of a door line is not
 *   counted;
 * - a track first seen inside the band has no side yet: it takes one when it leaves the band, without a crossing.
 *
 * Geometry is in 0..1 picture coordinates with x scaled by the picture's aspect (width / height), so the margin is a
 * share of the picture's height whatever the line's direction.
 */
import type { CountingLine } from '../../shared/agent-api.js';
import type { BodyTrack } from './tracker.js';
import type { BodyBox, Crossing } from './types.js';

export type ReferencePoint = 'centre' | 'bottom';

export interface LineCounterOptions {
  /** Half-width of the hysteresis band, share of the picture's height; default 0.04. */
  margin?: number;
  /** How far beyond its ends the segment still counts, share of its length; default 0. */
  extent?: number;
  /** The box point that crosses: its centre (default) or its bottom-centre (the feet). */
  reference?: ReferencePoint;
  /** The picture's width / height; default 16/9. */
  aspect?: number;
  /**
   * The hysteresis band is at most this share of the track's own height (small people far from the camera move
   * less than `margin` in a step and may leave the picture before they are that far past the line); default 0: off.
   */
  perHeight?: number;
  /**
   * A track first seen inside the hysteresis band, at least this share of the band's half-width from the line, takes
   * that side at once (someone in a group, hidden behind another until they are on the line); default 0: off, such a
   * track takes a side only when it leaves the band, without a crossing.
   */
  bornSide?: number;
  /**
   * A track that ends (the tracker lost it) after its path went over the line, last seen at least this share of the
   * band's half-width past it and moving away from it, is counted, stamped with its last sighting (someone who
   * leaves the picture, or is hidden, just past the line); default 0: off.
   */
  lostPast?: number;
  /**
   * A track first seen clearly on a side but within this many of its own heights of the line, beside another track
   * (their boxes overlap), that then steps further away from the line, is counted as having come over it (someone
   * hidden behind their neighbour while crossing); default 0: off.
   */
  emerged?: number;
}

type Side = 'in' | 'out';

interface TrackState {
  /** The side the track was last clearly on. */
  side: Side | undefined;
  /** Signed distance (positive: inside) and position along the line at the last observation. */
  s: number;
  p: [number, number];
  /** Position along the line (0 at a, 1 at b) where the path last went over the line; undefined: not since `side`. */
  overAt: number | undefined;
  /** When it was last seen, its signed distance the observation before, and the band's half-width for it. */
  at: Date;
  before: number;
  margin: number;
  /** `emerged`: first seen beside another track near the line, not yet known to have walked on. */
  emerged?: boolean;
}

export class LineCounter {
  readonly margin: number;
  readonly extent: number;
  readonly reference: ReferencePoint;
  readonly perHeight: number;
  readonly bornSide: number;
  readonly lostPast: number;
  readonly emerged: number;
  private readonly aspect: number;
  private readonly a: [number, number];
  private readonly d: [number, number];
  private readonly len: number;
  /** +1 when `inside` is the right of a->b (y down), -1 for the left. */
  private readonly inward: number;
  private readonly states = new Map<string, TrackState>();
  /** Crossings counted since start. */
  readonly counts = { in: 0, out: 0 };

  constructor(
    readonly line: CountingLine,
    options: LineCounterOptions = {},
  ) {
    this.margin = options.margin ?? 0.04;
    this.extent = options.extent ?? 0;
    this.reference = options.reference ?? 'centre';
    this.aspect = options.aspect ?? 16 / 9;
    this.perHeight = options.perHeight ?? 0;
    this.bornSide = options.bornSide ?? 0;
    this.lostPast = options.lostPast ?? 0;
    this.emerged = options.emerged ?? 0;
    this.a = [line.a[0] * this.aspect, line.a[1]];
    this.d = [(line.b[0] - line.a[0]) * this.aspect, line.b[1] - line.a[1]];
    this.len = Math.hypot(this.d[0], this.d[1]);
    // With y growing downwards, the cross product d x (p - a) is positive on the right of a->b.
    this.inward = line.inside === 'right' ? 1 : -1;
  }

  /** The reference point of a box, aspect-scaled. */
  point(box: BodyBox): [number, number] {
    const y = this.reference === 'bottom' ? box.y + box.h : box.y + box.h / 2;
    return [(box.x + box.w / 2) * this.aspect, y];
  }

  /** Signed distance of a scaled point from the line (positive: inside), in picture heights. */
  signed(p: [number, number]): number {
    const [dx, dy] = this.d;
    return (this.inward * (dx * (p[1] - this.a[1]) - dy * (p[0] - this.a[0]))) / this.len;
  }

  /** Position of a scaled point along the line: 0 at `a`, 1 at `b`. */
  along(p: [number, number]): number {
    const [dx, dy] = this.d;
    return (dx * (p[0] - this.a[0]) + dy * (p[1] - this.a[1])) / (this.len * this.len);
  }

  /** The tracks after a frame (those matched in it move on); returns the crossings this frame completed. */
  update(tracks: readonly BodyTrack[], at: Date): Crossing[] {
    const crossings: Crossing[] = [];
    const live = new Set<string>();
    for (const track of tracks) {
      live.add(track.id);
      if (!track.seen) continue;
      const p = this.point(track.box);
      const s = this.signed(p);
      const margin = this.perHeight > 0 ? Math.min(this.margin, this.perHeight * track.box.h) : this.margin;
      let state = this.states.get(track.id);
      if (!state) {
        // bornSide: first seen in the band but off the line, it takes the side it is on.
        const born: Side | undefined = this.bornSide > 0 && Math.abs(s) >= this.bornSide * margin ? (s > 0 ? 'in' : 'out') : undefined;
        state = { side: born, s, p, overAt: undefined, at, before: s, margin };
        if (this.emerged > 0 && Math.abs(s) > margin && Math.abs(s) <= this.emerged * track.box.h && tracks.some((o) => o !== track && o.seen && overlaps(o.box, track.box))) {
          state.emerged = true;
          state.side = s > 0 ? 'in' : 'out';
        }
        this.states.set(track.id, state);
        if (state.emerged) continue;
      } else if (state.emerged) {
        state.emerged = false;
        const side = state.side!;
        const further = side === 'in' ? s - state.s : state.s - s;
        if (further >= margin * 0.5 && (side === 'in' ? s : -s) > margin) {
          this.counts[side]++;
          crossings.push({ direction: side, at: state.at, trackId: track.id });
        }
        state.before = state.s;
        state.s = s;
        state.p = p;
        state.at = at;
        state.margin = margin;
        continue;
      } else if (s >= 0 !== state.s >= 0) {
        // The path went over the line between the last observation and this one: where?
        const f = state.s / (state.s - s);
        state.overAt = this.along([state.p[0] + f * (p[0] - state.p[0]), state.p[1] + f * (p[1] - state.p[1])]);
      }
      state.before = state.s;
      state.s = s;
      state.p = p;
      state.at = at;
      state.margin = margin;
      const clearly: Side | undefined = s > margin ? 'in' : s < -margin ? 'out' : undefined;
      if (!clearly || clearly === state.side) {
        if (clearly) state.overAt = undefined;
        continue;
      }
      const from = state.side;
      const over = state.overAt;
      state.side = clearly;
      state.overAt = undefined;
      if (from === undefined || over === undefined) continue;
      if (over < -this.extent || over > 1 + this.extent) continue;
      this.counts[clearly]++;
      crossings.push({ direction: clearly, at, trackId: track.id });
    }
    for (const [id, state] of [...this.states]) {
      if (live.has(id)) continue;
      this.states.delete(id);
      // lostPast: gone just past the line, walking away from it.
      if (this.lostPast <= 0 || state.side === undefined || state.overAt === undefined) continue;
      if (state.overAt < -this.extent || state.overAt > 1 + this.extent) continue;
      const past: Side = state.s > 0 ? 'in' : 'out';
      if (past === state.side || Math.abs(state.s) < this.lostPast * state.margin || (past === 'in' ? state.s - state.before : state.before - state.s) <= 0) continue;
      this.counts[past]++;
      crossings.push({ direction: past, at: state.at, trackId: id });
    }
    return crossings;
  }

  reset(): void {
    this.states.clear();
  }
}

/** Whether two boxes overlap at all. */
function overlaps(a: BodyBox, b: BodyBox): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}
