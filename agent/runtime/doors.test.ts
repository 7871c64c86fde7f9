/**
 * Body counting at the doors (doors.ts) with the real person detector on the door video's frames (decoded by
 * ffmpeg at 5 fps, agent/fixtures/door-video.ts), without capture or head office: what reaches `onCrossing`, what
 * motion gating holds back on an empty doorway, and that a camera without a line never loads the detector. The
 * detector runs in its worker thread (detector-thread.ts), as in the agent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CountingLine } from '../../shared/agent-api.js';
import { loadBodyDetector } from '../bodies/detector.js';
import { startBodyDetectorThread } from '../bodies/detector-thread.js';
import { ensureTestBodyModels, testModelsDir } from '../models/test-cache.js';
import type { BodyDetector, Crossing } from '../bodies/types.js';
import type { Frame } from '../capture/frame.js';
import { DOOR_LINE, DOOR_VIDEO, decodeDoorFrames, doorTruth, ensureDoorVideo } from '../fixtures/door-video.js';
import { DoorCounting } from './doors.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
const FPS = 5;
const T0 = Date.UTC(2026, 0, 1, 9);
const { width: W, height: H } = DOOR_VIDEO;

let frames: Buffer[] = [];
let tmp: string;

function frame(n: number, cameraId = 'door', data = frames[n]!): Frame {
  return { cameraId, width: W, height: H, data, at: new Date(T0 + (n * 1000) / FPS) };
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-doors-'));
  const [{ video }] = await Promise.all([ensureDoorVideo(), ensureTestBodyModels()]);
  frames = await decodeDoorFrames(video, FPS, 12);
}, 120_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function counting(lines: Record<string, CountingLine | null>, crossings: { camera: string; c: Crossing }[], loads: { n: number }, maxFps = 0) {
  return new DoorCounting({
    maxFps,
    lineOf: (id) => lines[id],
    loadDetector: () => {
      loads.n++;
      return startBodyDetectorThread(testModelsDir());
    },
    onCrossing: (camera, c) => void crossings.push({ camera, c }),
    log,
  });
}

describe('DoorCounting', () => {
  it('counts the door video\'s first two entries (one with the back of the head turned) and no exit', { timeout: 120_000 }, async () => {
    const crossings: { camera: string; c: Crossing }[] = [];
    const loads = { n: 0 };
    const doors = counting({ door: DOOR_LINE }, crossings, loads);
    doors.prepare();
    await doors.idle();
    expect(doors.detectorName).toMatch(/onnxruntime \+ tfjs-wasm/);
    // Every frame looked at (or held by motion gating): the next one goes in once the detector is done.
    for (let n = 0; n < frames.length; n++) {
      doors.consume(frame(n));
      await doors.idle();
    }
    const truth = doorTruth().filter((x) => x.t < 11);
    expect(truth.map((x) => x.direction)).toEqual(['in', 'in']);
    expect(crossings.map((x) => x.c.direction)).toEqual(['in', 'in']);
    for (const [i, x] of crossings.entries()) {
      expect(x.camera).toBe('door');
      expect(Math.abs((x.c.at.getTime() - T0) / 1000 - truth[i]!.t)).toBeLessThanOrEqual(1);
    }
    expect(new Set(crossings.map((x) => x.c.trackId)).size).toBe(2);
    const stats = doors.stats().door!;
    expect(stats).toMatchObject({ frames: frames.length, in: 2, out: 0, skipped: 0 });
    expect(stats.analysed + stats.held).toBe(frames.length);
    expect(loads.n).toBe(1);
    await doors.close();
  });

  it('paced to door_fps 3 (the agent\'s default) from 5 frames a second: every other frame is left out, the same two entries counted', { timeout: 120_000 }, async () => {
    const crossings: { camera: string; c: Crossing }[] = [];
    const doors = counting({ door: DOOR_LINE }, crossings, { n: 0 }, 3);
    doors.prepare();
    await doors.idle();
    for (let n = 0; n < frames.length; n++) {
      doors.consume(frame(n));
      await doors.idle();
    }
    const stats = doors.stats().door!;
    // Frames 200 ms apart, at most one per 300 ms (less 10 % slack): frames 0, 2, 4, ... go on.
    expect(stats.paced).toBe(Math.floor(frames.length / 2));
    expect(stats.analysed + stats.held).toBe(frames.length - stats.paced);
    expect(crossings.map((x) => x.c.direction)).toEqual(['in', 'in']);
    await doors.close();
  });

  it('gives a look more pixels (crowdPx) while two people are near the line, and the same counts', { timeout: 120_000 }, async () => {
    // The same frames twice with the real detector, recording the hint each look was given: without crowdPx and
    // with the default (140 px a person against personPx's 100). Looks are the same until two tracks are near the
    // line at once; that look is enlarged 1.4x more.
    const run = async (crowdPx: number | false) => {
      const hints: (number | undefined)[] = [];
      const crossings: Crossing[] = [];
      const doors = new DoorCounting({
        lineOf: () => DOOR_LINE,
        loadDetector: async () => {
          const real = await startBodyDetectorThread(testModelsDir());
          return {
            name: real.name,
            close: () => real.close(),
            detect: (image, hint) => {
              hints.push(hint?.maxScale);
              return real.detect(image, hint);
            },
          };
        },
        onCrossing: (_id, c) => void crossings.push(c),
        log,
        personPx: 100,
        crowdPx,
      });
      doors.prepare();
      await doors.idle();
      for (let n = 0; n < frames.length; n++) {
        doors.consume(frame(n));
        await doors.idle();
      }
      await doors.close();
      return { hints, directions: crossings.map((c) => c.direction) };
    };
    const plain = await run(false);
    const crowd = await run(140);
    const first = crowd.hints.findIndex((h, i) => h !== plain.hints[i]);
    expect(first).toBeGreaterThan(0);
    expect(crowd.hints.slice(0, first)).toEqual(plain.hints.slice(0, first));
    expect(crowd.hints[first]! / plain.hints[first]!).toBeCloseTo(1.4, 5);
    expect(crowd.directions).toEqual(plain.directions);
    expect(crowd.directions).toEqual(['in', 'in']);
  });

  it('holds back an empty doorway (motion gating) and runs no detector for a camera without a line', { timeout: 60_000 }, async () => {
    const crossings: { camera: string; c: Crossing }[] = [];
    const loads = { n: 0 };
    const doors = counting({ door: DOOR_LINE, till: null }, crossings, loads);
    // The till camera has no line: nothing is loaded for it, nothing kept.
    for (let n = 0; n < 5; n++) doors.consume(frame(n, 'till'));
    await doors.idle();
    expect(loads.n).toBe(0);
    expect(doors.stats()).toEqual({});
    // The empty doorway (the video's first second, the same picture again and again): the detector looks at the
    // first frame and the periodic re-check only.
    doors.prepare();
    await doors.idle();
    const empty = frames[0]!;
    for (let n = 0; n < 30; n++) {
      doors.consume(frame(n, 'door', empty));
      await doors.idle();
    }
    const stats = doors.stats().door!;
    expect(stats.frames).toBe(30);
    expect(stats.held).toBeGreaterThanOrEqual(25);
    expect(stats.analysed).toBe(30 - stats.held);
    expect(doors.detectorTime.calls).toBe(stats.analysed);
    expect(crossings).toEqual([]);
    expect(loads.n).toBe(1);
    await doors.close();
  });

  it('reports a detector that will not load, counts nothing and does not throw', async () => {
    const empty = path.join(tmp, 'no-models');
    const doors = new DoorCounting({ lineOf: () => DOOR_LINE, loadDetector: () => loadBodyDetector(empty), onCrossing: () => undefined, log, retryMs: 60_000 });
    doors.consume(frame(0));
    await doors.idle();
    expect(doors.problem).toMatch(/person detector would not load/);
    expect(doors.detectorName).toBeUndefined();
    // Not tried again at every frame.
    doors.consume(frame(1));
    await doors.idle();
    expect(doors.stats().door).toMatchObject({ frames: 2, analysed: 0 });
    await doors.close();
  });

  it('closes a detector that keeps failing (its thread gone) and loads a new one', { timeout: 60_000 }, async () => {
    const loaded: BodyDetector[] = [];
    const doors = new DoorCounting({
      lineOf: () => DOOR_LINE,
      loadDetector: async () => {
        const d = await startBodyDetectorThread(testModelsDir());
        loaded.push(d);
        return d;
      },
      onCrossing: () => undefined,
      log,
      motion: false,
      retryMs: 0,
    });
    doors.prepare();
    await doors.idle();
    // Gone behind its back: every detection now fails.
    await loaded[0]!.close();
    for (let n = 0; n < 5; n++) {
      doors.consume(frame(n));
      await doors.idle();
    }
    expect(doors.problem).toMatch(/failed 5 times in a row/);
    expect(doors.detectorName).toBeUndefined();
    // The next frame loads a new one, which works.
    doors.consume(frame(5));
    await doors.idle();
    expect(loaded).toHaveLength(2);
    expect(doors.detectorName).toMatch(/onnxruntime \+ tfjs-wasm/);
    expect(doors.problem).toBeUndefined();
    doors.consume(frame(6));
    await doors.idle();
    expect(doors.stats().door!.analysed).toBe(1);
    await doors.close();
  });
});
