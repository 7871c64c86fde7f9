/** Cutting regions out of a frame, grey conversion and sharpness (the variance of the Laplacian). */
import type { FrameRegion, Rect } from './image-core.js';
import type { RgbImage } from './types.js';
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
