/** Frames and small images into model tensors: resizing (bilinear, exact area average) and normalisation. */
import { endianness } from 'node:os';
import type { TensorFormat } from './image-core.js';
import type { RgbImage } from './types.js';
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
  if (img.width % outW === 0 && img.height % outH === 0 && fmt.colour !== 'grey') {
    return fourByThreeBlocks(img, outW, outH) ? resizeBox4x3ToTensor(img, outW, outH, fmt, out) : resizeBoxToTensor(img, outW, outH, fmt, out);
  }
  return resizeAreaToTensor(img, outW, outH, fmt, out);
}

/**
 * The exact area average when both factors are whole numbers (1280x720 -> 320x240: 4 x 3 blocks), in one pass: each
 * output pixel is the integer sum of its block times 1/(block size), normalised. The general area path's separable
 * float passes give the same values (to float rounding) at 2.5 times the cost (a 2.7 MB float buffer written and
 * read back); measured in docs/benchmarks.md (agent-real).
 */
function resizeBoxToTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  const plane = outW * outH;
  const tensor = out ?? new Float32Array(plane * 3);
  const nx = img.width / outW;
  const ny = img.height / outH;
  const stride = img.width * 3;
  const src = img.data;
  const { kr, kg, kb, cr, cg, cb, outR, outB } = planarFactors(fmt, plane, 1 / (nx * ny));
  const span = nx * 3;
  let i = 0;
  for (let v = 0; v < outH; v++) {
    const top = v * ny * stride;
    for (let u = 0; u < outW; u++, i++) {
      let r = 0;
      let g = 0;
      let b = 0;
      for (let row = top + u * span, y = 0; y < ny; y++, row += stride) {
        for (let p = row, end = row + span; p < end; p += 3) {
          r += src[p]!;
          g += src[p + 1]!;
          b += src[p + 2]!;
        }
      }
      tensor[outR + i] = r * kr + cr;
      tensor[plane + i] = g * kg + cg;
      tensor[outB + i] = b * kb + cb;
    }
  }
  return tensor;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** Whether resizeBox4x3ToTensor applies: blocks 4 x 3 pixels (1280x720 -> 320x240), the frame word-aligned. */
function fourByThreeBlocks(img: RgbImage, outW: number, outH: number): boolean {
  return LITTLE_ENDIAN && img.width === 4 * outW && img.height === 3 * outH && img.data.byteOffset % 4 === 0;
}

/**
 * resizeBoxToTensor for 4 x 3 blocks (a 1280x720 camera frame into the detector's 320x240), the same integer sums
 * read a word at a time: a block row is 12 bytes, three 32-bit words, R0 G0 B0 R1 | G1 B1 R2 G2 | B2 R3 G3 B3
 * (little-endian). Each word's even and odd bytes go into two 16-bit lanes (mask 0x00ff00ff), the three rows' lanes
 * are added (at most 765 a lane), then each channel's four lanes. 9 reads per block instead of 36, no inner loops,
 * the same sums and the same float arithmetic, so the same tensor bit for bit (tested against resizeBoxToTensor);
 * 4-5 times faster (docs/benchmarks.md, faces-door).
 */
function resizeBox4x3ToTensor(img: RgbImage, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array): Float32Array {
  const plane = outW * outH;
  const tensor = out ?? new Float32Array(plane * 3);
  const row = 3 * outW;
  const row2 = 2 * row;
  const words = new Uint32Array(img.data.buffer, img.data.byteOffset, row * img.height);
  const { kr, kg, kb, cr, cg, cb, outR, outB } = planarFactors(fmt, plane, 1 / 12);
  const M = 0x00ff00ff;
  let i = 0;
  for (let v = 0; v < outH; v++) {
    for (let u = 0, p = 3 * v * row; u < outW; u++, i++, p += 3) {
      const a0 = words[p]!;
      const a1 = words[p + 1]!;
      const a2 = words[p + 2]!;
      const b0 = words[p + row]!;
      const b1 = words[p + row + 1]!;
      const b2 = words[p + row + 2]!;
      const c0 = words[p + row2]!;
      const c1 = words[p + row2 + 1]!;
      const c2 = words[p + row2 + 2]!;
      const e0 = (a0 & M) + (b0 & M) + (c0 & M);
      const o0 = ((a0 >>> 8) & M) + ((b0 >>> 8) & M) + ((c0 >>> 8) & M);
      const e1 = (a1 & M) + (b1 & M) + (c1 & M);
      const o1 = ((a1 >>> 8) & M) + ((b1 >>> 8) & M) + ((c1 >>> 8) & M);
      const e2 = (a2 & M) + (b2 & M) + (c2 & M);
      const o2 = ((a2 >>> 8) & M) + ((b2 >>> 8) & M) + ((c2 >>> 8) & M);
      const r = (e0 & 0xffff) + (o0 >>> 16) + (e1 >>> 16) + (o2 & 0xffff);
      const g = (o0 & 0xffff) + (e1 & 0xffff) + (o1 >>> 16) + (e2 >>> 16);
      const b = (e0 >>> 16) + (o1 & 0xffff) + (e2 & 0xffff) + (o2 >>> 16);
      tensor[outR + i] = r * kr + cr;
      tensor[plane + i] = g * kg + cg;
      tensor[outB + i] = b * kb + cb;
    }
  }
  return tensor;
}

/**
 * What a resize into a planar tensor multiplies and adds per channel: value = sum * k + c, where the normaliser's k
 * (value = (p - mean) / std = p * k + c) is scaled by `scale` (1 over what a sample sums to: the block's pixels, or
 * the fixed-point weights), and where R and B go (plane 0 gets R, or B when the model wants BGR).
 */
export function planarFactors(
  fmt: TensorFormat,
  plane: number,
  scale: number,
): { kr: number; kg: number; kb: number; cr: number; cg: number; cb: number; outR: number; outB: number } {
  const { bgr, k, c } = normaliser(fmt);
  return {
    kr: k[bgr ? 2 : 0]! * scale,
    kg: k[1]! * scale,
    kb: k[bgr ? 0 : 2]! * scale,
    cr: c[bgr ? 2 : 0]!,
    cg: c[1]!,
    cb: c[bgr ? 0 : 2]!,
    outR: bgr ? 2 * plane : 0,
    outB: bgr ? 0 : 2 * plane,
  };
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
  // Fixed point: weights in 1/256, so a sample sums to pixel * 65536 (a power of two: * 2^-16 is / 65536 exactly).
  const { kr, kg, kb, cr, cg, cb, outR, outB } = planarFactors(fmt, plane, 1 / 65536);
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
  // Two columns summed and weights in 1/256: a sample sums to pixel * 512 (a power of two, so exact).
  const { kr, kg, kb, cr, cg, cb, outR, outB } = planarFactors(fmt, plane, 1 / 512);
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
export function channelOrder(fmt: TensorFormat): [number, number, number] {
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
