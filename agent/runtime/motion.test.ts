import { describe, expect, it } from 'vitest';
import type { Frame } from '../capture/frame.js';
import { MotionGate } from './motion.js';

const W = 320;
const H = 180;
const T0 = Date.UTC(2026, 0, 1, 9);

/** A grey doorway with a camera's noise (+-3 levels), and optionally a bright square (someone) at x. */
function frame(ms: number, seed: number, personAt?: number, cameraId = 'door'): Frame {
  const data = Buffer.alloc(W * H * 3);
  let s = seed;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1_103_515_245 + 12_345) >>> 0;
    data[i] = 100 + ((s >>> 16) % 7) - 3;
  }
  if (personAt !== undefined) {
    for (let y = 40; y < 140; y++) for (let x = personAt; x < personAt + 60; x++) data.fill(220, (y * W + x) * 3, (y * W + x) * 3 + 3);
  }
  return { cameraId, width: W, height: H, data, at: new Date(T0 + ms) };
}

describe('MotionGate', () => {
  it('lets the first frame through, holds an unchanged noisy doorway, lets a change through at once', () => {
    const gate = new MotionGate({ recheckMs: 2000 });
    expect(gate.pass(frame(0, 1), false)).toBe(true);
    for (let i = 1; i < 9; i++) expect(gate.pass(frame(i * 200, i + 1), false)).toBe(false);
    expect(gate.pass(frame(1800, 20, 100), false)).toBe(true);
    // The person moved: through; stands still: held; while a track is open: through.
    expect(gate.pass(frame(2000, 21, 130), false)).toBe(true);
    expect(gate.pass(frame(2200, 22, 130), false)).toBe(false);
    expect(gate.pass(frame(2400, 23, 130), true)).toBe(true);
    expect(gate.counts).toEqual({ passed: 4, held: 9 });
  });

  it('lets a frame through every recheckMs even with nothing moving, and keeps cameras apart', () => {
    const gate = new MotionGate({ recheckMs: 2000 });
    expect(gate.pass(frame(0, 1), false)).toBe(true);
    expect(gate.pass(frame(1000, 2), false)).toBe(false);
    expect(gate.pass(frame(2000, 3), false)).toBe(true);
    expect(gate.pass(frame(2100, 4, undefined, 'till'), false)).toBe(true);
    expect(gate.pass(frame(2200, 5), false)).toBe(false);
    gate.forget('door');
    expect(gate.pass(frame(2300, 6), false)).toBe(true);
  });

  it('given what the detector has analysed, lets the frames after a change through until the detector has answered it', () => {
    const gate = new MotionGate({ recheckMs: 2000 });
    const at = (ms: number) => T0 + ms;
    // The first frame is a change; nothing analysed yet: the still frames after it go too (the pipeline keeps the newest waiting).
    expect(gate.pass(frame(0, 1), false, undefined, 0)).toBe(true);
    expect(gate.pass(frame(200, 2), false, undefined, 0)).toBe(true);
    expect(gate.pass(frame(400, 3), false, undefined, 0)).toBe(true);
    // The detector has analysed the changed frame: still frames are held again.
    expect(gate.pass(frame(600, 4), false, undefined, at(0))).toBe(false);
    expect(gate.pass(frame(800, 5), false, undefined, at(400))).toBe(false);
    // Someone steps in and stands still while the detector is slow (a loaded shop PC): every frame goes until it answers...
    expect(gate.pass(frame(1000, 6, 100), false, undefined, at(400))).toBe(true);
    for (let ms = 1200; ms <= 2400; ms += 200) expect(gate.pass(frame(ms, ms, 100), false, undefined, at(400))).toBe(true);
    // ...a frame analysed before the change is no answer; one at or after it is.
    expect(gate.pass(frame(2600, 26, 100), false, undefined, at(800))).toBe(true);
    expect(gate.pass(frame(2800, 28, 100), false, undefined, at(1000))).toBe(false);
    // An idle recheck is not a change: the frames after it are held while the detector looks at it.
    expect(gate.pass(frame(4800, 48, 100), false, undefined, at(2600))).toBe(true);
    expect(gate.pass(frame(5000, 50, 100), false, undefined, at(2600))).toBe(false);
    // Without what the detector analysed (the door counter), a change wakes only its own frame.
    const plain = new MotionGate({ recheckMs: 2000 });
    expect(plain.pass(frame(0, 1), false)).toBe(true);
    expect(plain.pass(frame(200, 2, 100), false)).toBe(true);
    expect(plain.pass(frame(400, 3, 100), false)).toBe(false);
  });

  it("with a region (a door line's band), holds motion elsewhere in view and lets motion in the region through", () => {
    const gate = new MotionGate({ recheckMs: 2000 });
    const band = { x: 200, y: 0, w: 100, h: H };
    expect(gate.pass(frame(0, 1), false, band)).toBe(true);
    // Someone walking at the left of the picture, outside the band: held.
    expect(gate.pass(frame(200, 2, 20), false, band)).toBe(false);
    expect(gate.pass(frame(400, 3, 60), false, band)).toBe(false);
    // They reach the band: through.
    expect(gate.pass(frame(600, 4, 180), false, band)).toBe(true);
    // Another region is a fresh start.
    expect(gate.pass(frame(800, 5, 180), false, { x: 0, y: 0, w: 100, h: H })).toBe(true);
  });
});
