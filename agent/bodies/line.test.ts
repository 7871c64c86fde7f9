import { describe, expect, it } from 'vitest';
import type { CountingLine } from '../../shared/agent-api.js';
import { LineCounter, type LineCounterOptions } from './line.js';
import { BodyTracker } from './tracker.js';
import type { BodyBox, Crossing } from './types.js';

const T0 = Date.UTC(2026, 0, 1, 9);
const FPS = 5;
const STEP = 1000 / FPS;

/** A person's box centred at (cx, cy), 0.12 wide and 0.4 high (a body at a door, 16:9 picture). */
function body(cx: number, cy: number, w = 0.12, h = 0.4): BodyBox {
  return { x: cx - w / 2, y: cy - h / 2, w, h, score: 0.9 };
}

/** Straight walk from p to q in `frames` frames (both ends included). */
function walk(p: [number, number], q: [number, number], frames: number): [number, number][] {
  return Array.from({ length: frames }, (_, i) => {
    const f = i / (frames - 1);
    return [p[0] + f * (q[0] - p[0]), p[1] + f * (q[1] - p[1])];
  });
}

/** Runs frames of boxes through a tracker and a counter; returns every crossing. */
function count(line: CountingLine, frames: BodyBox[][], options: Omit<LineCounterOptions, 'aspect'> = {}): Crossing[] {
  const tracker = new BodyTracker({}, 16 / 9);
  const counter = new LineCounter(line, { aspect: 16 / 9, ...options });
  const out: Crossing[] = [];
  frames.forEach((boxes, i) => {
    const at = T0 + i * STEP;
    out.push(...counter.update(tracker.update(boxes, at), new Date(at)));
  });
  return out;
}

/** A vertical door line in the middle; walking a->b is walking down, so its right is the picture's left. */
const VERTICAL: CountingLine = { a: [0.5, 0.1], b: [0.5, 0.9], inside: 'right' };
const dirs = (c: Crossing[]) => c.map((x) => x.direction);

describe('LineCounter with BodyTracker', () => {
  it('counts a walk across as one entry, the way back as one exit, with the side named by inside', () => {
    const right = walk([0.8, 0.5], [0.2, 0.5], 15).map(([x, y]) => [body(x, y)]);
    // inside 'right' of a (top) -> b (bottom) is the picture's left: right-to-left is an entry.
    expect(dirs(count(VERTICAL, right))).toEqual(['in']);
    expect(dirs(count({ ...VERTICAL, inside: 'left' }, right))).toEqual(['out']);
    const left = walk([0.2, 0.5], [0.8, 0.5], 15).map(([x, y]) => [body(x, y)]);
    expect(dirs(count(VERTICAL, left))).toEqual(['out']);
    expect(dirs(count({ ...VERTICAL, inside: 'left' }, left))).toEqual(['in']);
  });

  it('stamps the crossing with the frame in which the track is clearly on the new side', () => {
    const frames = walk([0.8, 0.5], [0.2, 0.5], 13).map(([x, y]) => [body(x, y)]);
    const [c] = count(VERTICAL, frames);
    // x = 0.8 - 0.05 i; clearly past 0.5 once (0.5 - x) * 16/9 > 0.04: x < 0.4775, i = 7.
    expect(c!.at.getTime()).toBe(T0 + 7 * STEP);
  });

  it('does not count jitter at the line twice: a person standing on the line, rocking across it', () => {
    const frames: BodyBox[][] = [];
    for (const [x, y] of walk([0.8, 0.5], [0.5, 0.5], 8)) frames.push([body(x, y)]);
    // 30 frames rocking +-0.015 around the line (inside the band), then on through.
    for (let i = 0; i < 30; i++) frames.push([body(0.5 + (i % 2 ? 0.015 : -0.015), 0.5 + 0.003 * (i % 3))]);
    for (const [x, y] of walk([0.5, 0.5], [0.2, 0.5], 8)) frames.push([body(x, y)]);
    expect(dirs(count(VERTICAL, frames))).toEqual(['in']);
  });

  it('counts in then back out as one entry and one exit; a step over and back inside the band as nothing', () => {
    const frames = [...walk([0.8, 0.5], [0.3, 0.5], 10), ...walk([0.3, 0.5], [0.8, 0.5], 10)].map(([x, y]) => [body(x, y)]);
    expect(dirs(count(VERTICAL, frames))).toEqual(['in', 'out']);
    const hesitant = [...walk([0.8, 0.5], [0.49, 0.5], 10), ...walk([0.49, 0.5], [0.8, 0.5], 10)].map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, hesitant)).toEqual([]);
  });

  it('counts two people crossing side by side, and two crossing each other in opposite directions', () => {
    const together = walk([0.8, 0.5], [0.2, 0.5], 15).map(([x, y]) => [body(x, y - 0.2), body(x + 0.02, y + 0.22)]);
    const c = count(VERTICAL, together);
    expect(dirs(c)).toEqual(['in', 'in']);
    expect(new Set(c.map((x) => x.trackId)).size).toBe(2);
    const opposite = walk([0.8, 0.35], [0.2, 0.35], 15).map(([x, y], i) => [body(x, y), body(1 - x, 0.65 + 0.001 * i)]);
    expect(dirs(count(VERTICAL, opposite)).sort()).toEqual(['in', 'out']);
  });

  it('keeps a track through missed detections and counts it once', () => {
    const frames = walk([0.8, 0.5], [0.2, 0.5], 15).map(([x, y], i) => (i >= 5 && i <= 8 && i !== 7 ? [] : [body(x, y)]));
    const c = count(VERTICAL, frames);
    expect(dirs(c)).toEqual(['in']);
    // A gap longer than the tracker's memory: a new track on the far side has no side to come from.
    const gap = walk([0.8, 0.5], [0.2, 0.5], 15).map(([x, y], i) => (i >= 4 && i <= 12 ? [] : [body(x, y)]));
    expect(count(VERTICAL, gap)).toEqual([]);
  });

  it('counts nobody passing beside the end of the line, counts within the segment only', () => {
    const short: CountingLine = { a: [0.5, 0.3], b: [0.5, 0.7], inside: 'right' };
    const beside = walk([0.8, 0.85], [0.2, 0.85], 15).map(([x, y]) => [body(x, y, 0.1, 0.2)]);
    expect(count(short, beside)).toEqual([]);
    const through = walk([0.8, 0.65], [0.2, 0.65], 15).map(([x, y]) => [body(x, y, 0.1, 0.2)]);
    expect(dirs(count(short, through))).toEqual(['in']);
  });

  it('works with a rotated line and with the bottom-centre as the reference point', () => {
    // A diagonal from top-left to bottom-right; inside on its left (the picture's upper right).
    const diagonal: CountingLine = { a: [0.2, 0.1], b: [0.8, 0.9], inside: 'left' };
    const up = walk([0.3, 0.8], [0.7, 0.2], 15).map(([x, y]) => [body(x, y, 0.08, 0.2)]);
    expect(dirs(count(diagonal, up))).toEqual(['in']);
    const down = [...up].reverse();
    expect(dirs(count(diagonal, down))).toEqual(['out']);
    // A horizontal floor line at y 0.7: bodies whose feet cross it while their centre stays above.
    const floor: CountingLine = { a: [0.1, 0.7], b: [0.9, 0.7], inside: 'right' };
    const towards = walk([0.5, 0.3], [0.5, 0.6], 12).map(([x, y]) => [body(x, y, 0.12, 0.3)]);
    expect(count(floor, towards)).toEqual([]);
    // a->b walks right, so its right is downwards (y grows): walking down the picture is an entry.
    expect(dirs(count(floor, towards, { reference: 'bottom' }))).toEqual(['in']);
  });

  it('gives a track first seen in the band a side without counting a crossing', () => {
    const frames = walk([0.5, 0.5], [0.2, 0.5], 10).map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, frames)).toEqual([]);
  });

  it('with bornSide, a track first seen in the band off the line (hidden in a group until then) keeps that side', () => {
    // First seen 0.02 outside the line (half the 0.04 band), then walks in; and one first seen on the line itself.
    const off = walk([0.5 + 0.02 * (9 / 16), 0.5], [0.2, 0.5], 10).map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, off)).toEqual([]);
    expect(dirs(count(VERTICAL, off, { bornSide: 0.25 }))).toEqual(['in']);
    const on = walk([0.5, 0.5], [0.2, 0.5], 10).map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, on, { bornSide: 0.25 })).toEqual([]);
    // Seen once only: never counted.
    expect(count(VERTICAL, [[body(0.5 + 0.02 * (9 / 16), 0.5)], [], [], [], [], [], [], [], [], []], { bornSide: 0.25 })).toEqual([]);
  });

  it('with lostPast, a track lost just past the line walking away is counted at its last sighting; one turning back is not', () => {
    // From 0.2 inside to 0.03 outside (within the 0.04 band), then gone for longer than the tracker remembers.
    const gone = Array.from({ length: 10 }, (): BodyBox[] => []);
    const away = walk([0.5 - 0.2 * (9 / 16), 0.5], [0.5 + 0.03 * (9 / 16), 0.5], 8).map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, [...away, ...gone])).toEqual([]);
    const c = count(VERTICAL, [...away, ...gone], { lostPast: 0.25 });
    expect(dirs(c)).toEqual(['out']);
    expect(c[0]!.at.getTime()).toBe(T0 + 7 * STEP);
    const back = [...away, [body(0.5 + 0.02 * (9 / 16), 0.5)]];
    expect(count(VERTICAL, [...back, ...gone], { lostPast: 0.25 })).toEqual([]);
    // Lost on the line itself: not counted.
    const onLine = walk([0.5 - 0.2 * (9 / 16), 0.5], [0.5 + 0.005 * (9 / 16), 0.5], 8).map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, [...onLine, ...gone], { lostPast: 0.25 })).toEqual([]);
  });

  it('with emerged, someone hidden behind their neighbour until just past the line, then walking on, is counted', () => {
    // A walks in from 0.8 to 0.2; B beside and a step behind, hidden until 0.06 past the line (boxes overlapping).
    const past = 0.5 - 0.06 * (9 / 16);
    const frames = walk([0.8, 0.5], [0.2, 0.5], 15).map(([x, y]) => [body(x, y), ...(x + 0.03 <= past ? [body(x + 0.03, y + 0.06)] : [])]);
    expect(dirs(count(VERTICAL, frames))).toEqual(['in']);
    const c = count(VERTICAL, frames, { emerged: 0.5 });
    expect(dirs(c)).toEqual(['in', 'in']);
    expect(new Set(c.map((x) => x.trackId)).size).toBe(2);
    // C stands there instead, seen once A is beside them: not counted; nor someone first seen there alone, walking on.
    const standing = walk([0.8, 0.5], [0.2, 0.5], 15).map(([x, y]) => [body(x, y), ...(x <= past + 0.05 ? [body(past, y + 0.06)] : [])]);
    expect(dirs(count(VERTICAL, standing, { emerged: 0.5 }))).toEqual(['in']);
    const alone = walk([past, 0.5], [0.2, 0.5], 8).map(([x, y]) => [body(x, y)]);
    expect(count(VERTICAL, alone, { emerged: 0.5 })).toEqual([]);
  });

  it('keeps separate tracks apart: one person waiting outside while another walks in', () => {
    const frames = walk([0.8, 0.3], [0.2, 0.3], 15).map(([x, y]) => [body(0.85, 0.7), body(x, y)]);
    const c = count(VERTICAL, frames);
    expect(dirs(c)).toEqual(['in']);
  });
});

describe('BodyTracker at a low frame rate', () => {
  it('keeps two people walking in file apart (no leapfrogging) and counts both: every third frame of 5 fps', () => {
    // Like the door video's pair entering 1.2 s apart, seen at 1.7 fps: the follower is nearer a new track's box
    // than the leader it belongs to.
    const frames: BodyBox[][] = [];
    for (let i = 0; i < 12; i++) {
      const t = i * 0.6;
      const lead = -0.05 + 0.27 * t;
      const follow = lead - 0.24;
      frames.push([lead, follow].filter((x) => x > -0.05 && x < 1.05).map((x) => body(x, 0.5, 0.25, 0.8)));
    }
    // Left to right across VERTICAL (inside: the picture's left) is leaving.
    const c = count(VERTICAL, frames);
    expect(dirs(c)).toEqual(['out', 'out']);
    expect(new Set(c.map((x) => x.trackId)).size).toBe(2);
  });

  it('with perHeight, a small person is clearly past the line sooner: counted before leaving the picture', () => {
    // A person 0.12 of the picture tall from 0.04 inside to 0.03 past a vertical line, then gone (left the picture).
    const steps = walk([0.5 - 0.04 * (9 / 16), 0.5], [0.5 + 0.03 * (9 / 16), 0.5], 6).map(([x, y]) => [body(x, y, 0.04, 0.12)]);
    const frames = [...steps, [], [], []];
    const run = (perHeight?: number) => {
      const tracker = new BodyTracker({}, 16 / 9);
      const counter = new LineCounter(VERTICAL, { aspect: 16 / 9, ...(perHeight ? { perHeight } : {}) });
      return frames.flatMap((boxes, i) => counter.update(tracker.update(boxes, T0 + i * STEP), new Date(T0 + i * STEP)));
    };
    // The 0.04 band: never clearly outside, nothing counted; at 0.2 of its height (0.024): one exit.
    expect(run()).toEqual([]);
    expect(dirs(run(0.2))).toEqual(['out']);
  });

  it('keeps the track of someone standing still while nothing moves (still), so their crossing after is counted', () => {
    const tracker = new BodyTracker({}, 16 / 9);
    const counter = new LineCounter(VERTICAL, { aspect: 16 / 9 });
    const out: Crossing[] = [];
    const look = (boxes: BodyBox[], ms: number) => out.push(...counter.update(tracker.update(boxes, T0 + ms), new Date(T0 + ms)));
    // Walks from inside onto the line, stands there 10 s looked at every 2 s (missed once), then walks out.
    walk([0.35, 0.5], [0.5, 0.5], 6).forEach(([x, y], i) => look([body(x, y)], i * STEP));
    let at = 5 * STEP;
    for (let k = 1; k <= 5; k++) {
      for (let f = 1; f <= 10; f++) tracker.still(T0 + at + (f - 1) * STEP, T0 + at + f * STEP);
      at += 10 * STEP;
      look(k === 3 ? [] : [body(0.5, 0.5)], at);
    }
    walk([0.52, 0.5], [0.65, 0.5], 4).forEach(([x, y], i) => look([body(x, y)], at + (i + 1) * STEP));
    expect(dirs(out)).toEqual(['out']);
    // Without still(), the 2-s gaps end the track: the one walking off the line is a new track with no side.
    const t2 = new BodyTracker({}, 16 / 9);
    const c2 = new LineCounter(VERTICAL, { aspect: 16 / 9 });
    const out2: Crossing[] = [];
    const look2 = (boxes: BodyBox[], ms: number) => out2.push(...c2.update(t2.update(boxes, T0 + ms), new Date(T0 + ms)));
    walk([0.35, 0.5], [0.5, 0.5], 6).forEach(([x, y], i) => look2([body(x, y)], i * STEP));
    for (let k = 1; k <= 5; k++) look2([body(0.5, 0.5)], 5 * STEP + k * 10 * STEP);
    walk([0.52, 0.5], [0.65, 0.5], 4).forEach(([x, y], i) => look2([body(x, y)], 55 * STEP + (i + 1) * STEP));
    expect(out2).toEqual([]);
  });
});
