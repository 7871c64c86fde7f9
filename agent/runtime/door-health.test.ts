import { describe, expect, it } from 'vitest';
import { DoorWindow } from './door-health.js';
import type { DoorCameraStats } from './doors.js';

const s = (frames: number, skipped: number, analysed: number, inn = 0): DoorCameraStats => ({ frames, paced: 0, held: frames - skipped - analysed, skipped, analysed, bodies: 0, tracks: 0, in: inn, out: 0 });

describe('DoorWindow: the heartbeat\'s `doors`, counts over the last five minutes', () => {
  it('reports from the second sample, over at most the window, and starts again when the counts go back', () => {
    const w = new DoorWindow(300_000);
    const t0 = 1_000_000;
    expect(w.report({ door: s(10, 0, 10) }, t0)).toEqual([]);
    expect(w.report({ door: s(60, 5, 45, 2) }, t0 + 10_000)).toEqual([{ camera_id: 'door', window_s: 10, frames: 50, paced: 0, held: 10, skipped: 5, analysed: 35, in: 2, out: 0 }]);
    // Ten minutes on: only the last five minutes (from the newest sample at or before the window's start) count.
    w.report({ door: s(1000, 5, 900) }, t0 + 300_000);
    const later = w.report({ door: s(1100, 105, 900) }, t0 + 600_000);
    expect(later).toEqual([{ camera_id: 'door', window_s: 300, frames: 100, paced: 0, held: 0, skipped: 100, analysed: 0, in: 0, out: 0 }]);
    // Counting started again (a line changed, the camera forgotten): reported again from the next sample.
    expect(w.report({ door: s(3, 0, 3) }, t0 + 601_000)).toEqual([]);
    expect(w.report({ door: s(8, 0, 8) }, t0 + 602_000)).toMatchObject([{ window_s: 1, frames: 5 }]);
    // A camera no longer counted is dropped.
    expect(w.report({}, t0 + 603_000)).toEqual([]);
  });
});
