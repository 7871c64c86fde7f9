/** Affine warps (bilinear, supersampled when shrinking) and crops that stretch a rectangle to a size. */
import type { Affine, FrameRegion, Rect } from './image-core.js';
import type { RgbImage } from './types.js';
// ---------------------------------------------------------------------------------------------------------------
// Affine warps.


/** Output pixels u0 <= u < u1, v0 <= v < v1 of a warp. */
export interface PixelWindow {
  u0: number;
  v0: number;
  u1: number;
  v1: number;
}

export interface WarpOptions {
  /** Compute only these output pixels (the others are left as they are in `into`); default the whole output. */
  window?: PixelWindow;
  /** Write into this buffer (outW*outH*3 bytes) instead of a new one. */
  into?: Uint8Array;
  /** At most k x k samples per output pixel (default: as many as the shrink needs, up to 6 x 6). */
  maxSupersampling?: number;
}

/** A region as the warp reads it: its pixels, and where it sits in the frame whose coordinates the warp uses. */
interface Source {
  src: Uint8Array;
  /** Bytes per row of `src`. */
  stride: number;
  /** Index of frame pixel (0, 0) in `src` (negative for a region): frame pixel (x, y) is at base + y*stride + x*3. */
  base: number;
  maxX: number;
  maxY: number;
}

function wholeImage(img: RgbImage): Source {
  return { src: img.data, stride: img.width * 3, base: 0, maxX: img.width - 1, maxY: img.height - 1 };
}

function regionOfFrame(region: FrameRegion): Source {
  const stride = region.width * 3;
  return { src: region.data, stride, base: -(region.y * stride + region.x * 3), maxX: region.frameWidth - 1, maxY: region.frameHeight - 1 };
}

/**
 * The frame pixels (x1, y1 inclusive) that warping the output `window` through `toSource` may read, in a frame
 * whose last pixel is (maxX, maxY): every sample lies within half a pixel of an output pixel centre, is clamped to
 * the frame, and reads its pixel and the next one right and down. A pixel of margin covers rounding.
 */
export function warpFootprint(toSource: Affine, window: PixelWindow, maxX: number, maxY: number): { x0: number; y0: number; x1: number; y1: number } {
  const [a, b, c, d, e, f] = toSource;
  const us = [window.u0 - 0.5, window.u1 - 0.5];
  const vs = [window.v0 - 0.5, window.v1 - 0.5];
  let minX = Infinity;
  let maxXs = -Infinity;
  let minY = Infinity;
  let maxYs = -Infinity;
  for (const u of us) {
    for (const v of vs) {
      const x = a * u + b * v + c;
      const y = d * u + e * v + f;
      minX = Math.min(minX, x);
      maxXs = Math.max(maxXs, x);
      minY = Math.min(minY, y);
      maxYs = Math.max(maxYs, y);
    }
  }
  const clamp = (v: number, hi: number): number => (v < 0 ? 0 : v > hi ? hi : v);
  return {
    x0: clamp(Math.floor(minX) - 1, maxX),
    y0: clamp(Math.floor(minY) - 1, maxY),
    x1: clamp(Math.ceil(maxXs) + 2, maxX),
    y1: clamp(Math.ceil(maxYs) + 2, maxY),
  };
}

/**
 * Warp `img` into a new `outW`x`outH` RGB image. `toSource` maps output pixel
 * coordinates to source coordinates (pixel centres at integers, as OpenCV's
 * warpAffine with WARP_INVERSE_MAP). Bilinear; when the map shrinks by more
 * than 2x each output pixel averages k x k bilinear samples, k = ceil(scale/2),
 * so large faces in photos are not aliased. Outside the image the edge pixels
 * are repeated.
 *
 * A `window` computes only part of the output, each pixel exactly as the whole warp computes it.
 */
export function warpAffine(img: RgbImage, toSource: Affine, outW: number, outH: number, opts: WarpOptions = {}): RgbImage {
  return warp(wholeImage(img), toSource, outW, outH, opts);
}

/**
 * warpAffine of the frame that `region` was cut from (`toSource` maps into frame coordinates), read from the region
 * alone: exactly the warp of the whole frame, provided the region holds the warp's footprint (checked, see
 * warpFootprint; FaceFound.crop is made to).
 */
export function warpFromRegion(region: FrameRegion, toSource: Affine, outW: number, outH: number, opts: WarpOptions = {}): RgbImage {
  const source = regionOfFrame(region);
  const fp = warpFootprint(toSource, opts.window ?? { u0: 0, v0: 0, u1: outW, v1: outH }, source.maxX, source.maxY);
  if (fp.x0 < region.x || fp.y0 < region.y || fp.x1 >= region.x + region.width || fp.y1 >= region.y + region.height) {
    throw new Error(
      `warpFromRegion: the region ${region.width}x${region.height} at ${region.x},${region.y} does not hold the warp's footprint ${fp.x0},${fp.y0}-${fp.x1},${fp.y1}`,
    );
  }
  return warp(source, toSource, outW, outH, opts);
}

function warp(source: Source, toSource: Affine, outW: number, outH: number, opts: WarpOptions): RgbImage {
  const win = opts.window ?? { u0: 0, v0: 0, u1: outW, v1: outH };
  if (win.u0 < 0 || win.v0 < 0 || win.u1 > outW || win.v1 > outH || win.u0 >= win.u1 || win.v0 >= win.v1) {
    throw new Error(`warp: window ${win.u0},${win.v0}-${win.u1},${win.v1} is not inside a ${outW}x${outH} output`);
  }
  const out = opts.into ?? new Uint8Array(outW * outH * 3);
  if (out.length < outW * outH * 3) throw new Error(`warp: the output buffer holds ${out.length} bytes, ${outW}x${outH} RGB needs ${outW * outH * 3}`);
  // One bilinear sample already averages a 2x2 neighbourhood, so up to 2x shrink needs no more; beyond that
  // k x k samples, each spanning ~2 source pixels, cover the output pixel's footprint.
  const k = Math.min(supersampling(toSource), opts.maxSupersampling ?? Infinity);
  if (k <= 1) warpBilinear(source, toSource, outW, win, out);
  else warpSupersampled(source, toSource, k, out, outW, win);
  return { width: outW, height: outH, data: out };
}

/**
 * warpAffine with k x k bilinear samples per output pixel (k > 1), averaged. The sub-sample positions and the
 * products that depend on the column or the row alone are computed once per column and per row, not per sample,
 * and a window whose samples all fall inside the image skips the edge clamping: x = a*uu + b*vv + c is still added
 * in that order from the same products, so every sample and every pixel is what computing each sample on its own
 * gives (tested against that in align.test.ts; a 400-px face's quality window about 2x faster, docs/benchmarks.md,
 * faces-door).
 */
function warpSupersampled(source: Source, toSource: Affine, k: number, out: Uint8Array, outW: number, win: PixelWindow): void {
  const [a, b, c, d, e, f] = toSource;
  const au = new Float64Array((win.u1 - win.u0) * k);
  const du = new Float64Array(au.length);
  for (let u = win.u0, i = 0; u < win.u1; u++) {
    for (let sx = 0; sx < k; sx++, i++) {
      const uu = u + (sx + 0.5) / k - 0.5;
      au[i] = a * uu;
      du[i] = d * uu;
    }
  }
  // The corners of the sample grid (an affine map takes its extremes there): inside, no sample needs clamping.
  const lo = 0.5 / k - 0.5;
  const hi = (k - 0.5) / k - 0.5;
  let inside = true;
  for (const uu of [win.u0 + lo, win.u1 - 1 + hi]) {
    for (const vv of [win.v0 + lo, win.v1 - 1 + hi]) {
      const x = a * uu + b * vv + c;
      const y = d * uu + e * vv + f;
      if (!(x >= EDGE_MARGIN && x < source.maxX - EDGE_MARGIN && y >= EDGE_MARGIN && y < source.maxY - EDGE_MARGIN)) inside = false;
    }
  }
  const bv = new Float64Array(k);
  const ev = new Float64Array(k);
  for (let v = win.v0; v < win.v1; v++) {
    for (let sy = 0; sy < k; sy++) {
      const vv = v + (sy + 0.5) / k - 0.5;
      bv[sy] = b * vv;
      ev[sy] = e * vv;
    }
    const q = (v * outW + win.u0) * 3;
    // Two functions, not two branches of one loop (as warpBilinear's rows).
    if (inside) supersampledRowInside(source, au, du, bv, ev, c, f, k, out, q, win.u1 - win.u0);
    else supersampledRowClamped(source, au, du, bv, ev, c, f, k, out, q, win.u1 - win.u0);
  }
}

/** One output row of warpSupersampled whose samples all lie inside the image: 0 < x < maxX, 0 < y < maxY. */
function supersampledRowInside(
  { src, stride, base }: Source,
  au: Float64Array,
  du: Float64Array,
  bv: Float64Array,
  ev: Float64Array,
  c: number,
  f: number,
  k: number,
  out: Uint8Array,
  q: number,
  n: number,
): void {
  const inv = 1 / (k * k);
  for (let i = 0, col = 0; i < n; i++, col += k, q += 3) {
    let r = 0;
    let g = 0;
    let bl = 0;
    for (let sy = 0; sy < k; sy++) {
      const bvy = bv[sy]!;
      const evy = ev[sy]!;
      for (let sx = col, end = col + k; sx < end; sx++) {
        const x = au[sx]! + bvy + c;
        const y = du[sx]! + evy + f;
        const x0 = x | 0;
        const y0 = y | 0;
        const fx = x - x0;
        const fy = y - y0;
        const p = base + y0 * stride + x0 * 3;
        const p2 = p + stride;
        const w00 = (1 - fx) * (1 - fy);
        const w01 = fx * (1 - fy);
        const w10 = (1 - fx) * fy;
        const w11 = fx * fy;
        r += src[p]! * w00 + src[p + 3]! * w01 + src[p2]! * w10 + src[p2 + 3]! * w11;
        g += src[p + 1]! * w00 + src[p + 4]! * w01 + src[p2 + 1]! * w10 + src[p2 + 4]! * w11;
        bl += src[p + 2]! * w00 + src[p + 5]! * w01 + src[p2 + 2]! * w10 + src[p2 + 5]! * w11;
      }
    }
    out[q] = r * inv + 0.5;
    out[q + 1] = g * inv + 0.5;
    out[q + 2] = bl * inv + 0.5;
  }
}

/** One output row of warpSupersampled, clamping samples to the image (edge pixels repeated). */
function supersampledRowClamped(
  { src, stride, base, maxX, maxY }: Source,
  au: Float64Array,
  du: Float64Array,
  bv: Float64Array,
  ev: Float64Array,
  c: number,
  f: number,
  k: number,
  out: Uint8Array,
  q: number,
  n: number,
): void {
  const inv = 1 / (k * k);
  for (let i = 0, col = 0; i < n; i++, col += k, q += 3) {
    let r = 0;
    let g = 0;
    let bl = 0;
    for (let sy = 0; sy < k; sy++) {
      const bvy = bv[sy]!;
      const evy = ev[sy]!;
      for (let sx = col, end = col + k; sx < end; sx++) {
        let x = au[sx]! + bvy + c;
        let y = du[sx]! + evy + f;
        if (x < 0) x = 0;
        else if (x > maxX) x = maxX;
        if (y < 0) y = 0;
        else if (y > maxY) y = maxY;
        const x0 = x | 0;
        const y0 = y | 0;
        const fx = x - x0;
        const fy = y - y0;
        const dx = x0 < maxX ? 3 : 0;
        const dy = y0 < maxY ? stride : 0;
        const p00 = base + y0 * stride + x0 * 3;
        const p01 = p00 + dx;
        const p10 = p00 + dy;
        const p11 = p10 + dx;
        const w00 = (1 - fx) * (1 - fy);
        const w01 = fx * (1 - fy);
        const w10 = (1 - fx) * fy;
        const w11 = fx * fy;
        r += src[p00]! * w00 + src[p01]! * w01 + src[p10]! * w10 + src[p11]! * w11;
        g += src[p00 + 1]! * w00 + src[p01 + 1]! * w01 + src[p10 + 1]! * w10 + src[p11 + 1]! * w11;
        bl += src[p00 + 2]! * w00 + src[p01 + 2]! * w01 + src[p10 + 2]! * w10 + src[p11 + 2]! * w11;
      }
    }
    out[q] = r * inv + 0.5;
    out[q + 1] = g * inv + 0.5;
    out[q + 2] = bl * inv + 0.5;
  }
}

/**
 * Supersampling factor of a warp: 1 (one bilinear sample per output pixel) up to a 2x shrink, else k x k samples.
 */
export function supersampling(toSource: Affine): number {
  const [a, b, , d, e] = toSource;
  const scale = Math.sqrt(Math.max(a * a + d * d, b * b + e * e));
  return scale > 2 ? Math.min(6, Math.ceil(scale / 2)) : 1;
}

/** Margin (source pixels) that keeps the rounding of a row walk from crossing the image edge. */
const EDGE_MARGIN = 1e-6;

/**
 * warpAffine without supersampling: one bilinear sample per output pixel, walking the source along each row.
 * A row whose samples all fall inside the image (the usual case for faces) skips the edge clamping; the
 * arithmetic per pixel is the same either way, so the result is too. A window's row starts with the walk's
 * own steps (repeated addition from u = 0), so its pixels are bit for bit those of the whole warp.
 */
function warpBilinear(source: Source, toSource: Affine, outW: number, win: PixelWindow, out: Uint8Array): void {
  const [a, b, c, d, e, f] = toSource;
  const { src, stride, base, maxX, maxY } = source;
  const spanX = a * (outW - 1);
  const spanY = d * (outW - 1);
  const n = win.u1 - win.u0;
  for (let v = win.v0; v < win.v1; v++) {
    let x = b * v + c;
    let y = e * v + f;
    const inside =
      Math.min(x, x + spanX) >= EDGE_MARGIN &&
      Math.max(x, x + spanX) < maxX - EDGE_MARGIN &&
      Math.min(y, y + spanY) >= EDGE_MARGIN &&
      Math.max(y, y + spanY) < maxY - EDGE_MARGIN;
    for (let u = 0; u < win.u0; u++) {
      x += a;
      y += d;
    }
    const q = (v * outW + win.u0) * 3;
    // Two functions, not two branches of one loop: a branch that is rarely taken would leave the optimised loop
    // without type feedback for it, and V8 would finish such rows in the interpreter.
    if (inside) bilinearRowInside(src, stride, base, out, q, x, y, a, d, n);
    else bilinearRowClamped(src, stride, base, maxX, maxY, out, q, x, y, a, d, n);
  }
}

/** One output row of warpBilinear whose samples all lie inside the image: 0 < x < maxX, 0 < y < maxY. */
function bilinearRowInside(src: Uint8Array, stride: number, base: number, out: Uint8Array, q: number, x: number, y: number, a: number, d: number, n: number): void {
  for (let u = 0; u < n; u++, x += a, y += d, q += 3) {
    const x0 = x | 0;
    const y0 = y | 0;
    const fx = x - x0;
    const fy = y - y0;
    const p = base + y0 * stride + x0 * 3;
    const p2 = p + stride;
    const w00 = (1 - fx) * (1 - fy);
    const w01 = fx * (1 - fy);
    const w10 = (1 - fx) * fy;
    const w11 = fx * fy;
    out[q] = src[p]! * w00 + src[p + 3]! * w01 + src[p2]! * w10 + src[p2 + 3]! * w11 + 0.5;
    out[q + 1] = src[p + 1]! * w00 + src[p + 4]! * w01 + src[p2 + 1]! * w10 + src[p2 + 4]! * w11 + 0.5;
    out[q + 2] = src[p + 2]! * w00 + src[p + 5]! * w01 + src[p2 + 2]! * w10 + src[p2 + 5]! * w11 + 0.5;
  }
}

/** One output row of warpBilinear, clamping samples to the image (edge pixels repeated). */
function bilinearRowClamped(
  src: Uint8Array,
  stride: number,
  base: number,
  maxX: number,
  maxY: number,
  out: Uint8Array,
  q: number,
  x: number,
  y: number,
  a: number,
  d: number,
  n: number,
): void {
  for (let u = 0; u < n; u++, x += a, y += d, q += 3) {
    const xc = x < 0 ? 0 : x > maxX ? maxX : x;
    const yc = y < 0 ? 0 : y > maxY ? maxY : y;
    const x0 = xc | 0;
    const y0 = yc | 0;
    const fx = xc - x0;
    const fy = yc - y0;
    const dx = x0 < maxX ? 3 : 0;
    const dy = y0 < maxY ? stride : 0;
    const p = base + y0 * stride + x0 * 3;
    const w00 = (1 - fx) * (1 - fy);
    const w01 = fx * (1 - fy);
    const w10 = (1 - fx) * fy;
    const w11 = fx * fy;
    out[q] = src[p]! * w00 + src[p + dx]! * w01 + src[p + dy]! * w10 + src[p + dy + dx]! * w11 + 0.5;
    out[q + 1] = src[p + 1]! * w00 + src[p + dx + 1]! * w01 + src[p + dy + 1]! * w10 + src[p + dy + dx + 1]! * w11 + 0.5;
    out[q + 2] = src[p + 2]! * w00 + src[p + dx + 2]! * w01 + src[p + dy + 2]! * w10 + src[p + dy + dx + 2]! * w11 + 0.5;
  }
}

/** The affine map that stretches `rect` (in source pixels) onto an `outW`x`outH` image (pixel-centre aligned). */
export function rectToSource(rect: Rect, outW: number, outH: number): Affine {
  const sx = rect.w / outW;
  const sy = rect.h / outH;
  return [sx, 0, rect.x + 0.5 * sx - 0.5, 0, sy, rect.y + 0.5 * sy - 0.5];
}

/** Crop `rect` and stretch it to `outW`x`outH` (bilinear, supersampled when shrinking). */
export function cropResize(img: RgbImage, rect: Rect, outW: number, outH: number): RgbImage {
  return warpAffine(img, rectToSource(rect, outW, outH), outW, outH);
}
