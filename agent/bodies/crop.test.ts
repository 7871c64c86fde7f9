import { describe, expect, it } from 'vitest';
import { bandRegion, cropPicture, fromRegion } from './crop.js';
import { bandMargin } from '../runtime/doors.js';
import { shapeInput } from './image.js';

describe("a door line's band", () => {
  it('is the line widened by the margin (share of the height) each way, clamped to the picture', () => {
    // A vertical line across a 768x576 walkway at x = 0.5: 0.2 x 576 = 115.2 px each side, the whole height.
    expect(bandRegion({ a: [0.5, 0], b: [0.5, 1], inside: 'left' }, 768, 576, 0.2)).toEqual({ x: 268, y: 0, w: 232, h: 576 });
    // A short horizontal line near the bottom right corner: clamped to the picture.
    expect(bandRegion({ a: [0.7, 0.9], b: [0.95, 0.9] , inside: 'right' }, 1000, 500, 0.1)).toEqual({ x: 650, y: 400, w: 350, h: 100 });
    // No margin: never thinner than 32 px.
    expect(bandRegion({ a: [0.2, 0.5], b: [0.8, 0.5], inside: 'right' }, 640, 360, 0).h).toBe(32);
  });

  it('is copied row by row, and boxes found in it map back to the whole picture', () => {
    const width = 4;
    const height = 3;
    const data = Buffer.from(Array.from({ length: width * height * 3 }, (_, i) => i));
    const crop = cropPicture({ width, height, data }, { x: 1, y: 1, w: 2, h: 2 });
    expect(crop.width).toBe(2);
    expect([...crop.data]).toEqual([15, 16, 17, 18, 19, 20, 27, 28, 29, 30, 31, 32]);
    const box = fromRegion({ x: 0.5, y: 0, w: 0.5, h: 1, score: 0.7 }, { x: 100, y: 50, w: 200, h: 100 }, 400, 200);
    expect(box).toEqual({ x: 0.5, y: 0.25, w: 0.25, h: 0.5, score: 0.7 });
  });

  it("gets an input of its own shape with the square's pixels, sides multiples of 32, enlarged at most twice", () => {
    expect(shapeInput(232, 576, 256)).toEqual({ width: 160, height: 416 });
    expect(shapeInput(640, 360, 256)).toEqual({ width: 352, height: 192 });
    expect(shapeInput(60, 60, 256)).toEqual({ width: 128, height: 128 });
  });

  it('scales by at most maxScale (people already large enough), never above the square pixels', () => {
    expect(shapeInput(768, 576, 256, 0.25)).toEqual({ width: 192, height: 160 });
    expect(shapeInput(232, 576, 256, 5)).toEqual(shapeInput(232, 576, 256));
  });

  it('widens with the tallest person lately: 0.75 of their height in steps of 0.05, never under the least, at most the picture', () => {
    // People 60-110 px tall in a 576-px picture keep the 0.2 band; the drawn door's 290 px of 360 get 0.65.
    expect(bandMargin(0.2, 110 / 576)).toBe(0.2);
    expect(bandMargin(0.2, 290 / 360)).toBeCloseTo(0.65);
    expect(bandMargin(0.2, 0.5)).toBeCloseTo(0.4);
    expect(bandMargin(0.2, 2)).toBe(1);
  });
});
