/**
 * Pictures into the person detectors' input tensors, and their boxes back into 0..1 frame coordinates.
 */
import type { RawImage } from '../capture/ppm.js';
import type { BodyBox } from './types.js';
import { tf } from './tfjs.js';

/**
 * How a picture is fitted into the model's square input: `letterbox` keeps its aspect ratio (scaled to fit, the
 * rest of the square black, picture at the top left); `stretch` resizes it to the square, as @vladmandic/human does;
 * `shape` (fully convolutional models only: MoveNet) gives the input the picture's own shape, sides multiples of 32,
 * with as many pixels as the square would have (a tall crop around a door line wastes no input on padding, and a
 * small one is enlarged up to twice, so small people get more pixels).
 */
export type Fit = 'letterbox' | 'stretch' | 'shape';

/** Most a `shape` input enlarges a picture. */
export const MAX_UPSCALE = 2;

/**
 * The input width and height for a `shape` fit of a width x height picture into the pixels of a size x size square,
 * scaled by at most `maxScale` (a smaller input when the people in it would be larger than the detector needs).
 */
export function shapeInput(width: number, height: number, size: number, maxScale = Infinity): { width: number; height: number } {
  const scale = Math.min(MAX_UPSCALE, maxScale, Math.sqrt((size * size) / (width * height)));
  const side = (v: number) => Math.max(32, Math.round((v * scale) / 32) * 32);
  return { width: side(width), height: side(height) };
}

export interface Fitted {
  /** [1, size, size, 3], 0..255 (float32 or int32). */
  input: tf.Tensor4D;
  /** Width and height, in input pixels, that the picture covers (the rest is padding; all of it for `shape`). */
  width: number;
  height: number;
}

/** The picture resized into a size x size input; the caller disposes `input`. */
export function fitPicture(image: RawImage, size: number, fit: Fit, dtype: 'float32' | 'int32', maxScale?: number): Fitted {
  if (image.width < 1 || image.height < 1 || image.data.length < image.width * image.height * 3) {
    throw new Error(`Not an RGB24 picture: ${image.width}x${image.height}, ${image.data.length} bytes.`);
  }
  const scale = Math.min(size / image.width, size / image.height);
  const shaped = fit === 'shape' ? shapeInput(image.width, image.height, size, maxScale) : undefined;
  const width = shaped?.width ?? (fit === 'stretch' ? size : Math.max(1, Math.min(size, Math.round(image.width * scale))));
  const height = shaped?.height ?? (fit === 'stretch' ? size : Math.max(1, Math.min(size, Math.round(image.height * scale))));
  const pixels = new Uint8Array(image.data.buffer, image.data.byteOffset, image.width * image.height * 3);
  const input = tf.tidy(() => {
    const rgb = tf.tensor3d(pixels, [image.height, image.width, 3], 'int32');
    let x: tf.Tensor3D = tf.image.resizeBilinear(rgb, [height, width]);
    if (!shaped && (width < size || height < size)) x = tf.pad(x, [[0, size - height], [0, size - width], [0, 0]]);
    if (dtype === 'int32') x = tf.cast(tf.round(x), 'int32');
    return tf.expandDims(x, 0) as tf.Tensor4D;
  });
  return { input, width, height };
}

/** A box given as corners in input pixels, as 0..1 of the picture (clamped); undefined when nothing is left. */
export function toFrameBox(x1: number, y1: number, x2: number, y2: number, fitted: Pick<Fitted, 'width' | 'height'>, score: number): BodyBox | undefined {
  const c = (v: number) => Math.min(1, Math.max(0, v));
  const ax = c(x1 / fitted.width);
  const ay = c(y1 / fitted.height);
  const bx = c(x2 / fitted.width);
  const by = c(y2 / fitted.height);
  if (bx - ax <= 0 || by - ay <= 0) return undefined;
  return { x: ax, y: ay, w: bx - ax, h: by - ay, score };
}

function iou(a: BodyBox, b: BodyBox): number {
  const ix = Math.max(0, Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x));
  const iy = Math.max(0, Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y));
  const inter = ix * iy;
  const union = a.w * a.h + b.w * b.h - inter;
  return union > 0 ? inter / union : 0;
}

/** Greedy non-maximum suppression: best score first, dropping boxes overlapping a kept one by more than `maxIou`. */
export function nms(boxes: readonly BodyBox[], maxIou: number, maxCount = Infinity): BodyBox[] {
  const sorted = [...boxes].sort((a, b) => b.score - a.score);
  const kept: BodyBox[] = [];
  for (const b of sorted) {
    if (kept.length >= maxCount) break;
    if (kept.every((k) => iou(k, b) <= maxIou)) kept.push(b);
  }
  return kept;
}
