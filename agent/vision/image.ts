/**
 * Pixel operations of the pipeline in plain TypedArray code: resizing a frame
 * into a model tensor, affine warps (bilinear, supersampled when shrinking),
 * grey conversion and the variance of the Laplacian. They work on tiny images
 * (64x64, 112x112) or once per frame (640x360 -> 320x240), where plain code is
 * as fast as calling out to sharp or OpenCV (measurements in docs/decisions.md).
 */
import type { RgbImage } from './types.js';

/** Row-major 2x3 affine matrix [a, b, c, d, e, f]: x' = a*x + b*y + c, y' = d*x + e*y + f. */
export type Affine = readonly [number, number, number, number, number, number];

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** How a model wants its input tensor: NCHW float32, value = (pixel - mean[c]) / std[c]. */
export interface TensorFormat {
  colour: 'RGB' | 'BGR' | 'grey';
  mean: readonly number[];
  std: readonly number[];
}

export function rgbImage(width: number, height: number, data?: Uint8Array): RgbImage {
  const size = width * height * 3;
  if (data && data.length < size) throw new Error(`image data has ${data.length} bytes, ${width}x${height} RGB needs ${size}`);
  return { width, height, data: data ?? new Uint8Array(size) };
}

// ---------------------------------------------------------------------------------------------------------------
// Whole-frame resize (area average) straight into a tensor: the detector's input, once per frame.

interface Taps {
  /** Per output index: first source index, tap count, offset into `weights`. */
  start: Int32Array;
  count: Int32Array;
  offset: Int32Array;
  weights: Float32Array;
}

/** Exact area-average weights for resizing `src` samples to `dst` (each output covers src/dst inputs). */
function areaTaps(src: number, dst: number): Taps {
  const scale = src / dst;
  const start = new Int32Array(dst);
  const count = new Int32Array(dst);
  const offset = new Int32Array(dst);
  const weights: number[] = [];
  for (let o = 0; o < dst; o++) {
    let lo = o * scale;
    let hi = (o + 1) * scale;
    if (scale < 1) {
      // Upscaling: fall back to linear interpolation between the two nearest samples.
      const x = Math.min(Math.max((o + 0.5) * scale - 0.5, 0), src - 1);
      const i = Math.min(Math.floor(x), src - 2 < 0 ? 0 : src - 2);
      const w = x - i;
      start[o] = i;
      offset[o] = weights.length;
      if (src === 1) {
        count[o] = 1;
        weights.push(1);
      } else {
        count[o] = 2;
        weights.push(1 - w, w);
      }
      continue;
    }
    lo = Math.max(0, lo);
    hi = Math.min(src, hi);
    const first = Math.floor(lo);
    const last = Math.min(src - 1, Math.ceil(hi) - 1);
    start[o] = first;
    offset[o] = weights.length;
    count[o] = last - first + 1;
    for (let i = first; i <= last; i++) weights.push((Math.min(hi, i + 1) - Math.max(lo, i)) / (hi - lo));
  }
  return { start, count, offset, weights: Float32Array.from(weights) };
}

const tapCache = new Map<string, Taps>();
function cachedTaps(src: number, dst: number): Taps {
  const key = `${src}>${dst}`;
  let t = tapCache.get(key);
  if (!t) {
    if (tapCache.size > 64) tapCache.clear();
    t = areaTaps(src, dst);
    tapCache.set(key, t);
  }
  return t;
}

interface BilinearTaps {
  /** Per output index: offset of the first sample, of the second, and the second's weight in 1/256. */
  i0: Int32Array;
  i1: Int32Array;
  w256: Int32Array;
}

/** Centre-aligned linear interpolation taps (as OpenCV's INTER_LINEAR); `stride` multiplies the indices. */
function bilinearTaps(src: number, dst: number, stride: number): BilinearTaps {
  const i0 = new Int32Array(dst);
  const i1 = new Int32Array(dst);
  const w256 = new Int32Array(dst);
  const scale = src / dst;
  for (let o = 0; o < dst; o++) {
    const x = Math.min(Math.max((o + 0.5) * scale - 0.5, 0), src - 1);
    const a = Math.floor(x);
    const b = Math.min(a + 1, src - 1);
    i0[o] = a * stride;
    i1[o] = b * stride;
    w256[o] = Math.round((x - a) * 256);
  }
  return { i0, i1, w256 };
}

const bilinearCache = new Map<string, BilinearTaps>();
function cachedBilinear(src: number, dst: number, stride: number): BilinearTaps {
  const key = `${src}>${dst}*${stride}`;
  let t = bilinearCache.get(key);
  if (!t) {
    if (bilinearCache.size > 64) bilinearCache.clear();
    t = bilinearTaps(src, dst, stride);
    bilinearCache.set(key, t);
  }
  return t;
}

/**
 * Resize a whole RGB image to `outW`x`outH` (stretched) and write it as a
 * normalised NCHW tensor. Shrinking by at most 2x in each direction (a 640x360
 * or 1280x720 camera frame into 320x240) is plain bilinear, which at these
 * factors averages the covered pixels (2:1 is an exact 2-pixel mean); larger
 * factors (photos) use an exact area average so small faces are not aliased away.
 */
export function resizeToTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  if (img.width === 2 * outW && img.height <= 2 * outH && fmt.colour !== 'grey') return resizeHalfWidthToTensor(img, outW, outH, fmt, out);
  if (img.width <= 2 * outW && img.height <= 2 * outH) return resizeBilinearToTensor(img, outW, outH, fmt, out);
  return resizeAreaToTensor(img, outW, outH, fmt, out);
}

function normaliser(fmt: TensorFormat): { bgr: boolean; k: Float32Array; c: Float32Array } {
  // value = (p - mean) / std = p * k + c
  const k = new Float32Array(3);
  const c = new Float32Array(3);
  for (let i = 0; i < 3; i++) {
    const std = fmt.std[i] ?? fmt.std[0]!;
    const mean = fmt.mean[i] ?? fmt.mean[0]!;
    k[i] = 1 / std;
    c[i] = -mean / std;
  }
  return { bgr: fmt.colour === 'BGR', k, c };
}

function resizeBilinearToTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  // Grey tensors (no model here takes a whole grey frame) go through the area path.
  if (fmt.colour === 'grey') return resizeAreaToTensor(img, outW, outH, fmt, out);
  const plane = outW * outH;
  const tensor = out ?? new Float32Array(plane * 3);
  const tx = cachedBilinear(img.width, outW, 3);
  const ty = cachedBilinear(img.height, outH, img.width * 3);
  const src = img.data;
  const { bgr, k, c } = normaliser(fmt);
  // Fixed point: weights in 1/256, so a sample sums to pixel * 65536. Tensor plane 0 gets R (B when BGR).
  const kr = k[bgr ? 2 : 0]! / 65536;
  const kg = k[1]! / 65536;
  const kb = k[bgr ? 0 : 2]! / 65536;
  const cr = c[bgr ? 2 : 0]!;
  const cg = c[1]!;
  const cb = c[bgr ? 0 : 2]!;
  const outR = bgr ? 2 * plane : 0;
  const outB = bgr ? 0 : 2 * plane;
  const xi0 = tx.i0;
  const xi1 = tx.i1;
  const xw = tx.w256;
  let i = 0;
  for (let v = 0; v < outH; v++) {
    const r0 = ty.i0[v]!;
    const r1 = ty.i1[v]!;
    const wy1 = ty.w256[v]!;
    const wy0 = 256 - wy1;
    for (let u = 0; u < outW; u++, i++) {
      const wx1 = xw[u]!;
      const wx0 = 256 - wx1;
      const a = r0 + xi0[u]!;
      const b = r0 + xi1[u]!;
      const d = r1 + xi0[u]!;
      const e = r1 + xi1[u]!;
      const pr = (src[a]! * wx0 + src[b]! * wx1) * wy0 + (src[d]! * wx0 + src[e]! * wx1) * wy1;
      const pg = (src[a + 1]! * wx0 + src[b + 1]! * wx1) * wy0 + (src[d + 1]! * wx0 + src[e + 1]! * wx1) * wy1;
      const pb = (src[a + 2]! * wx0 + src[b + 2]! * wx1) * wy0 + (src[d + 2]! * wx0 + src[e + 2]! * wx1) * wy1;
      tensor[outR + i] = pr * kr + cr;
      tensor[plane + i] = pg * kg + cg;
      tensor[outB + i] = pb * kb + cb;
    }
  }
  return tensor;
}

/**
 * The same bilinear resize when the width halves exactly (640 -> 320, the usual
 * sub-stream): each output column is then the plain mean of two source columns,
 * which halves the work of the general path (measured 0.29 against 0.56 ms).
 */
function resizeHalfWidthToTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  const plane = outW * outH;
  const tensor = out ?? new Float32Array(plane * 3);
  const ty = cachedBilinear(img.height, outH, img.width * 3);
  const src = img.data;
  const { bgr, k, c } = normaliser(fmt);
  // Two columns summed and weights in 1/256: a sample sums to pixel * 512.
  const kr = k[bgr ? 2 : 0]! / 512;
  const kg = k[1]! / 512;
  const kb = k[bgr ? 0 : 2]! / 512;
  const cr = c[bgr ? 2 : 0]!;
  const cg = c[1]!;
  const cb = c[bgr ? 0 : 2]!;
  const outR = bgr ? 2 * plane : 0;
  const outB = bgr ? 0 : 2 * plane;
  let i = 0;
  for (let v = 0; v < outH; v++) {
    const wy1 = ty.w256[v]!;
    const wy0 = 256 - wy1;
    let a = ty.i0[v]!;
    let d = ty.i1[v]!;
    for (let u = 0; u < outW; u++, i++, a += 6, d += 6) {
      tensor[outR + i] = ((src[a]! + src[a + 3]!) * wy0 + (src[d]! + src[d + 3]!) * wy1) * kr + cr;
      tensor[plane + i] = ((src[a + 1]! + src[a + 4]!) * wy0 + (src[d + 1]! + src[d + 4]!) * wy1) * kg + cg;
      tensor[outB + i] = ((src[a + 2]! + src[a + 5]!) * wy0 + (src[d + 2]! + src[d + 5]!) * wy1) * kb + cb;
    }
  }
  return tensor;
}

/** Exact area average, separable; for large shrink factors. */
let scratch = new Float32Array(0);

/** A float buffer of at least `n` values for resizeAreaToTensor's row pass (contents undefined; one per thread). */
function scratchRows(n: number): Float32Array {
  if (scratch.length < n) scratch = new Float32Array(n);
  return scratch;
}

/**
 * When every output index takes the same number of consecutive source samples with one and the same weight, and the
 * next starts where the last ended (an integer downscale factor): that count and weight.
 */
function uniformTaps(t: Taps): { count: number; weight: number } | undefined {
  const cached = uniformCache.get(t);
  if (cached !== undefined) return cached ?? undefined;
  const n = t.count[0]!;
  const w = t.weights[t.offset[0]!]!;
  let ok = n > 0;
  for (let o = 0; ok && o < t.count.length; o++) {
    if (t.count[o] !== n || t.start[o] !== t.start[0]! + o * n) ok = false;
    for (let q = 0; ok && q < n; q++) if (t.weights[t.offset[o]! + q] !== w) ok = false;
  }
  const result = ok ? { count: n, weight: w } : undefined;
  uniformCache.set(t, result ?? null);
  return result;
}

const uniformCache = new WeakMap<Taps, { count: number; weight: number } | null>();

function resizeAreaToTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  const channels = fmt.colour === 'grey' ? 1 : 3;
  const plane = outW * outH;
  const tensor = out ?? new Float32Array(plane * channels);
  const tx = cachedTaps(img.width, outW);
  const ty = cachedTaps(img.height, outH);
  const src = img.data;
  const sw = img.width;
  // Horizontal pass for every source row into a float buffer (3 channels interleaved), reused from call to call: a
  // 1280x720 frame's is 2.7 MB, which at 5 frames a second was most of the vision thread's garbage.
  const rows = scratchRows(img.height * outW * 3);
  const uniform = uniformTaps(tx);
  for (let y = 0; y < img.height; y++) {
    const rowIn = y * sw * 3;
    const rowOut = y * outW * 3;
    if (uniform) {
      // Every output pixel averages the same number of whole source pixels (an integer factor, 1280 -> 320): the same
      // sums in the same order as below, without the per-pixel tap lookups.
      const n = uniform.count;
      const w = uniform.weight;
      let p = rowIn + tx.start[0]! * 3;
      for (let o = 0; o < outW; o++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let q = 0; q < n; q++, p += 3) {
          r += src[p]! * w;
          g += src[p + 1]! * w;
          b += src[p + 2]! * w;
        }
        const i = rowOut + o * 3;
        rows[i] = r;
        rows[i + 1] = g;
        rows[i + 2] = b;
      }
      continue;
    }
    for (let o = 0; o < outW; o++) {
      const n = tx.count[o]!;
      const off = tx.offset[o]!;
      let p = rowIn + tx.start[o]! * 3;
      let r = 0;
      let g = 0;
      let b = 0;
      for (let q = 0; q < n; q++, p += 3) {
        const w = tx.weights[off + q]!;
        r += src[p]! * w;
        g += src[p + 1]! * w;
        b += src[p + 2]! * w;
      }
      const q = rowOut + o * 3;
      rows[q] = r;
      rows[q + 1] = g;
      rows[q + 2] = b;
    }
  }
  const { bgr, k, c } = normaliser(fmt);
  const rowLen = outW * 3;
  for (let v = 0; v < outH; v++) {
    const n = ty.count[v]!;
    const off = ty.offset[v]!;
    const first = ty.start[v]!;
    for (let o = 0; o < outW; o++) {
      let r = 0;
      let g = 0;
      let b = 0;
      let p = first * rowLen + o * 3;
      for (let q = 0; q < n; q++, p += rowLen) {
        const w = ty.weights[off + q]!;
        r += rows[p]! * w;
        g += rows[p + 1]! * w;
        b += rows[p + 2]! * w;
      }
      const i = v * outW + o;
      if (channels === 1) {
        tensor[i] = grey(r, g, b) * k[0]! + c[0]!;
      } else {
        tensor[i] = (bgr ? b : r) * k[0]! + c[0]!;
        tensor[plane + i] = g * k[1]! + c[1]!;
        tensor[2 * plane + i] = (bgr ? r : b) * k[2]! + c[2]!;
      }
    }
  }
  return tensor;
}

/** Source channel (0 R, 1 G, 2 B) feeding tensor planes 0, 1, 2. */
function channelOrder(fmt: TensorFormat): [number, number, number] {
  return fmt.colour === 'BGR' ? [2, 1, 0] : [0, 1, 2];
}

/** ITU-R BT.601 luma, as OpenCV's and canvas' RGB -> grey. */
export function grey(r: number, g: number, b: number): number {
  return 0.299 * r + 0.587 * g + 0.114 * b;
}

/** A small RGB image as a normalised NCHW tensor (the whole image, no resizing). */
export function imageToTensor(img: RgbImage, fmt: TensorFormat, out?: Float32Array): Float32Array {
  const channels = fmt.colour === 'grey' ? 1 : 3;
  const plane = img.width * img.height;
  const tensor = out ?? new Float32Array(plane * channels);
  const [m0, m1, m2] = channelOrder(fmt);
  const d = img.data;
  if (channels === 1) {
    const mean = fmt.mean[0]!;
    const std = fmt.std[0]!;
    for (let i = 0, p = 0; i < plane; i++, p += 3) tensor[i] = (grey(d[p]!, d[p + 1]!, d[p + 2]!) - mean) / std;
    return tensor;
  }
  const s0 = fmt.std[0]!;
  const s1 = fmt.std[1]!;
  const s2 = fmt.std[2]!;
  const a0 = fmt.mean[0]!;
  const a1 = fmt.mean[1]!;
  const a2 = fmt.mean[2]!;
  for (let i = 0, p = 0; i < plane; i++, p += 3) {
    tensor[i] = (d[p + m0]! - a0) / s0;
    tensor[plane + i] = (d[p + m1]! - a1) / s1;
    tensor[2 * plane + i] = (d[p + m2]! - a2) / s2;
  }
  return tensor;
}

// ---------------------------------------------------------------------------------------------------------------
// Affine warps.

/**
 * A region cut out of a larger frame (frameWidth x frameHeight) at `x`, `y`: a face's context crop. Warped as if it
 * were the whole frame, in frame coordinates, as long as the warp reads only pixels inside it.
 */
export interface FrameRegion extends RgbImage {
  x: number;
  y: number;
  frameWidth: number;
  frameHeight: number;
}

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
  const k = supersampling(toSource);
  if (k === 1) warpBilinear(source, toSource, outW, win, out);
  else warpSupersampled(source, toSource, k, out, outW, win);
  return { width: outW, height: outH, data: out };
}

/** warpAffine with k x k bilinear samples per output pixel (k > 1), averaged. */
function warpSupersampled({ src, stride, base, maxX, maxY }: Source, toSource: Affine, k: number, out: Uint8Array, outW: number, win: PixelWindow): void {
  const [a, b, c, d, e, f] = toSource;
  const inv = 1 / (k * k);
  for (let v = win.v0; v < win.v1; v++) {
    for (let u = win.u0; u < win.u1; u++) {
      let r = 0;
      let g = 0;
      let bl = 0;
      for (let sy = 0; sy < k; sy++) {
        const vv = v + (sy + 0.5) / k - 0.5;
        for (let sx = 0; sx < k; sx++) {
          const uu = u + (sx + 0.5) / k - 0.5;
          let x = a * uu + b * vv + c;
          let y = d * uu + e * vv + f;
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
      const q = (v * outW + u) * 3;
      out[q] = r * inv + 0.5;
      out[q + 1] = g * inv + 0.5;
      out[q + 2] = bl * inv + 0.5;
    }
  }
}

/**
 * Supersampling factor of a warp: 1 (one bilinear sample per output pixel) up to a 2x shrink, else k x k samples.
 */
function supersampling(toSource: Affine): number {
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

/** Per output column (or row) of an axis-aligned bilinear crop: source offset, neighbour step, weights. */
interface AxisTaps {
  offset: Int32Array;
  step: Int32Array;
  near: Float64Array;
  far: Float64Array;
}

const axisScratch = new Map<string, AxisTaps>();
function axisTaps(key: string, n: number): AxisTaps {
  let t = axisScratch.get(key);
  if (!t || t.offset.length < n) {
    t = { offset: new Int32Array(n), step: new Int32Array(n), near: new Float64Array(n), far: new Float64Array(n) };
    axisScratch.set(key, t);
  }
  return t;
}

/**
 * `imageToTensor(cropResize(img, rect, outW, outH), fmt, out)` in one pass, without the intermediate image: the
 * model input for a face crop (landmarks, age, gender, expression). An axis-aligned bilinear crop is separable, so
 * the clamping and weights are worked out once per column and row; each pixel is still rounded to 8 bits before
 * the normalisation, exactly as the two-step version, so the tensor is identical. Crops that shrink by more than 2x
 * (supersampled) take the two-step path.
 */
export function cropToTensor(img: RgbImage, rect: Rect, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  const m = rectToSource(rect, outW, outH);
  if (supersampling(m) !== 1) return imageToTensor(warpAffine(img, m, outW, outH), fmt, out);
  const channels = fmt.colour === 'grey' ? 1 : 3;
  const plane = outW * outH;
  const tensor = out ?? new Float32Array(plane * channels);
  const [a, , c, , e, f] = m;
  const src = img.data;
  const maxX = img.width - 1;
  const maxY = img.height - 1;
  const stride = img.width * 3;
  // Columns: x walks from c in steps of a, as warpBilinear's row walk (b = 0, so every row sees the same x).
  const cols = axisTaps('x', outW);
  let x = c + 0; // b * v + c with b = 0
  for (let u = 0; u < outW; u++, x += a) {
    const xc = x < 0 ? 0 : x > maxX ? maxX : x;
    const x0 = xc | 0;
    const fx = xc - x0;
    cols.offset[u] = x0 * 3;
    cols.step[u] = x0 < maxX ? 3 : 0;
    cols.near[u] = 1 - fx;
    cols.far[u] = fx;
  }
  const [m0, , m2] = channelOrder(fmt);
  const mean0 = fmt.mean[0]!;
  const std0 = fmt.std[0]!;
  // Separate loops for grey and colour: one loop with both would be optimised for whichever came first, and V8
  // would run the other kind in the interpreter.
  if (channels === 1) cropGreyRows(src, stride, maxY, cols, e, f, outW, outH, mean0, std0, tensor);
  else {
    const means = [mean0, fmt.mean[1] ?? mean0, fmt.mean[2] ?? mean0] as const;
    const stds = [std0, fmt.std[1] ?? std0, fmt.std[2] ?? std0] as const;
    cropColourRows(src, stride, maxY, cols, e, f, outW, outH, m0 === 2, m2 === 0, means, stds, tensor);
  }
  return tensor;
}

/**
 * Rows of cropToTensor into a grey tensor. Each sample is first rounded to the 8-bit pixel the two-step version
 * would store (the sum lies within 0.5..255.5, so `| 0` truncates exactly as a Uint8Array store does).
 */
function cropGreyRows(
  src: Uint8Array,
  stride: number,
  maxY: number,
  cols: AxisTaps,
  e: number,
  f: number,
  outW: number,
  outH: number,
  mean: number,
  std: number,
  tensor: Float32Array,
): void {
  const { offset, step, near, far } = cols;
  let i = 0;
  for (let v = 0; v < outH; v++) {
    const y = e * v + f;
    const yc = y < 0 ? 0 : y > maxY ? maxY : y;
    const y0 = yc | 0;
    const fy = yc - y0;
    const dy = y0 < maxY ? stride : 0;
    const row = y0 * stride;
    const ofy = 1 - fy;
    for (let u = 0; u < outW; u++, i++) {
      const p = row + offset[u]!;
      const dx = step[u]!;
      const ofx = near[u]!;
      const fx = far[u]!;
      const w00 = ofx * ofy;
      const w01 = fx * ofy;
      const w10 = ofx * fy;
      const w11 = fx * fy;
      const r = (src[p]! * w00 + src[p + dx]! * w01 + src[p + dy]! * w10 + src[p + dy + dx]! * w11 + 0.5) | 0;
      const g = (src[p + 1]! * w00 + src[p + dx + 1]! * w01 + src[p + dy + 1]! * w10 + src[p + dy + dx + 1]! * w11 + 0.5) | 0;
      const b = (src[p + 2]! * w00 + src[p + dx + 2]! * w01 + src[p + dy + 2]! * w10 + src[p + dy + dx + 2]! * w11 + 0.5) | 0;
      tensor[i] = (0.299 * r + 0.587 * g + 0.114 * b - mean) / std;
    }
  }
}

/** cropGreyRows for colour tensors: planes R, G, B (or B, G, R when `bgr`). */
function cropColourRows(
  src: Uint8Array,
  stride: number,
  maxY: number,
  cols: AxisTaps,
  e: number,
  f: number,
  outW: number,
  outH: number,
  firstIsBlue: boolean,
  lastIsRed: boolean,
  means: readonly [number, number, number],
  stds: readonly [number, number, number],
  tensor: Float32Array,
): void {
  const { offset, step, near, far } = cols;
  const plane = outW * outH;
  const [mean0, mean1, mean2] = means;
  const [std0, std1, std2] = stds;
  let i = 0;
  for (let v = 0; v < outH; v++) {
    const y = e * v + f;
    const yc = y < 0 ? 0 : y > maxY ? maxY : y;
    const y0 = yc | 0;
    const fy = yc - y0;
    const dy = y0 < maxY ? stride : 0;
    const row = y0 * stride;
    const ofy = 1 - fy;
    for (let u = 0; u < outW; u++, i++) {
      const p = row + offset[u]!;
      const dx = step[u]!;
      const ofx = near[u]!;
      const fx = far[u]!;
      const w00 = ofx * ofy;
      const w01 = fx * ofy;
      const w10 = ofx * fy;
      const w11 = fx * fy;
      const r = (src[p]! * w00 + src[p + dx]! * w01 + src[p + dy]! * w10 + src[p + dy + dx]! * w11 + 0.5) | 0;
      const g = (src[p + 1]! * w00 + src[p + dx + 1]! * w01 + src[p + dy + 1]! * w10 + src[p + dy + dx + 1]! * w11 + 0.5) | 0;
      const b = (src[p + 2]! * w00 + src[p + dx + 2]! * w01 + src[p + dy + 2]! * w10 + src[p + dy + dx + 2]! * w11 + 0.5) | 0;
      tensor[i] = ((firstIsBlue ? b : r) - mean0) / std0;
      tensor[plane + i] = (g - mean1) / std1;
      tensor[2 * plane + i] = ((lastIsRed ? r : b) - mean2) / std2;
    }
  }
}

/** `rect` grown to whole pixels and cut to a `width`x`height` image (at least one pixel): what cropRgb copies. */
export function wholePixels(rect: Rect, width: number, height: number): Rect {
  const x = Math.max(0, Math.floor(rect.x));
  const y = Math.max(0, Math.floor(rect.y));
  const x2 = Math.min(width, Math.ceil(rect.x + rect.w));
  const y2 = Math.min(height, Math.ceil(rect.y + rect.h));
  return { x, y, w: Math.max(1, x2 - x), h: Math.max(1, y2 - y) };
}

/** Copy a region (clamped to the image) without resampling; it remembers where it sits in the image. */
export function cropRgb(img: RgbImage, rect: Rect): FrameRegion {
  const { x, y, w, h } = wholePixels(rect, img.width, img.height);
  const out = new Uint8Array(w * h * 3);
  for (let row = 0; row < h; row++) {
    const from = ((y + row) * img.width + x) * 3;
    out.set(img.data.subarray(from, from + w * 3), row * w * 3);
  }
  return { width: w, height: h, data: out, x, y, frameWidth: img.width, frameHeight: img.height };
}

/** Move `rect` so it lies inside a `width`x`height` image (shrinking it only if it is larger than the image). */
export function shiftInside(rect: Rect, width: number, height: number): Rect {
  const w = Math.min(rect.w, width);
  const h = Math.min(rect.h, height);
  const x = Math.min(Math.max(rect.x, 0), width - w);
  const y = Math.min(Math.max(rect.y, 0), height - h);
  return { x, y, w, h };
}

/** Clamp `rect` to the image (cut, not shifted). */
export function clampRect(rect: Rect, width: number, height: number): Rect {
  const x = Math.max(0, rect.x);
  const y = Math.max(0, rect.y);
  const x2 = Math.min(width, rect.x + rect.w);
  const y2 = Math.min(height, rect.y + rect.h);
  return { x, y, w: Math.max(1, x2 - x), h: Math.max(1, y2 - y) };
}

// ---------------------------------------------------------------------------------------------------------------
// Sharpness.

/** BT.601 grey of an RGB image, as floats 0..255. */
export function toGrey(img: RgbImage): Float32Array {
  const n = img.width * img.height;
  const out = new Float32Array(n);
  const d = img.data;
  for (let i = 0, p = 0; i < n; i++, p += 3) out[i] = 0.299 * d[p]! + 0.587 * d[p + 1]! + 0.114 * d[p + 2]!;
  return out;
}

/**
 * The pixels where laplacianVariance evaluates the Laplacian over `roi` (default: the whole image): x0 <= x < x1,
 * y0 <= y < y1, one pixel in from every edge. It reads the one-pixel ring around them too.
 */
export function laplacianBounds(width: number, height: number, roi?: Rect): { x0: number; y0: number; x1: number; y1: number } {
  return {
    x0: Math.max(1, Math.floor(roi?.x ?? 1)),
    y0: Math.max(1, Math.floor(roi?.y ?? 1)),
    x1: Math.min(width - 1, Math.ceil(roi ? roi.x + roi.w : width - 1)),
    y1: Math.min(height - 1, Math.ceil(roi ? roi.y + roi.h : height - 1)),
  };
}

/**
 * Variance of the 4-neighbour Laplacian (kernel [0 1 0; 1 -4 1; 0 1 0], as
 * OpenCV's Laplacian with ksize 1) over `roi` of a grey image.
 */
export function laplacianVariance(greyPixels: Float32Array, width: number, height: number, roi?: Rect): number {
  const { x0, y0, x1, y1 } = laplacianBounds(width, height, roi);
  let sum = 0;
  let sumSq = 0;
  let n = 0;
  for (let y = y0; y < y1; y++) {
    let i = y * width + x0;
    for (let x = x0; x < x1; x++, i++) {
      const l = greyPixels[i - 1]! + greyPixels[i + 1]! + greyPixels[i - width]! + greyPixels[i + width]! - 4 * greyPixels[i]!;
      sum += l;
      sumSq += l * l;
      n++;
    }
  }
  if (n === 0) return 0;
  const mean = sum / n;
  return sumSq / n - mean * mean;
}

let greyScratch = new Float32Array(0);

/**
 * `laplacianVariance(toGrey(img), img.width, img.height, roi)` without converting the whole image: only the ROI
 * and the one-pixel ring the Laplacian reads are made grey (into a reused buffer). Same values, same result.
 */
export function rgbLaplacianVariance(img: RgbImage, roi?: Rect): number {
  const { width, height } = img;
  const { x0, y0, x1, y1 } = laplacianBounds(width, height, roi);
  if (greyScratch.length < width * height) greyScratch = new Float32Array(width * height);
  const g = greyScratch;
  const d = img.data;
  for (let y = y0 - 1; y <= y1; y++) {
    let i = y * width + x0 - 1;
    for (let x = x0 - 1, p = i * 3; x <= x1; x++, i++, p += 3) g[i] = 0.299 * d[p]! + 0.587 * d[p + 1]! + 0.114 * d[p + 2]!;
  }
  return laplacianVariance(g, width, height, roi);
}
