/** The image types of the pixel code (agent/vision/image.ts). */
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
