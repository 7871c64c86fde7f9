/**
 * The line's band (docs/body-counting.md, "Shop PC"): only people near a door's line can cross it, so the person
 * detector looks at a crop around the line instead of the whole picture. Small people then keep their pixels (the
 * crop is given the detector's input pixels, not the whole frame) and the cost drops with the area.
 *
 * The band: the line's bounding box widened by `margin` (share of the picture's height) on every side, clamped to the
 * picture; wide enough that the tracker sees a person on both sides of the line for a few looks.
 */
import type { CountingLine } from '../../shared/agent-api.js';
import type { RawImage } from '../capture/ppm.js';
import type { BodyBox } from './types.js';

/** A rectangle of the picture, in whole pixels. */
export interface Region {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The line's band in a width x height picture (at least 32 px each way where the picture allows). */
export function bandRegion(line: CountingLine, width: number, height: number, margin: number): Region {
  const m = margin * height;
  const xs = [line.a[0] * width, line.b[0] * width];
  const ys = [line.a[1] * height, line.b[1] * height];
  const grow = (lo: number, hi: number, size: number): [number, number] => {
    let a = Math.max(0, Math.floor(lo - m));
    let b = Math.min(size, Math.ceil(hi + m));
    const least = Math.min(size, 32);
    if (b - a < least) {
      const mid = (a + b) / 2;
      a = Math.max(0, Math.min(size - least, Math.round(mid - least / 2)));
      b = a + least;
    }
    return [a, b];
  };
  const [x0, x1] = grow(Math.min(...xs), Math.max(...xs), width);
  const [y0, y1] = grow(Math.min(...ys), Math.max(...ys), height);
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** A copy of the region of an RGB24 picture. */
export function cropPicture(image: RawImage, r: Region): RawImage {
  if (r.x === 0 && r.y === 0 && r.w === image.width && r.h === image.height) {
    return { width: r.w, height: r.h, data: Buffer.from(image.data.subarray(0, r.w * r.h * 3)) };
  }
  const out = Buffer.allocUnsafe(r.w * r.h * 3);
  const row = r.w * 3;
  for (let y = 0; y < r.h; y++) {
    const from = ((r.y + y) * image.width + r.x) * 3;
    image.data.copy(out, y * row, from, from + row);
  }
  return { width: r.w, height: r.h, data: out };
}

/** A box found in the region (0..1 of the region) as 0..1 of the whole width x height picture. */
export function fromRegion(b: BodyBox, r: Region, width: number, height: number): BodyBox {
  return { x: (r.x + b.x * r.w) / width, y: (r.y + b.y * r.h) / height, w: (b.w * r.w) / width, h: (b.h * r.h) / height, score: b.score };
}
