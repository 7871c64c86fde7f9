/** A face crop straight into a model tensor, without the intermediate image (cropToTensor). */
import type { Rect, TensorFormat } from './image-core.js';
import type { RgbImage } from './types.js';
import { channelOrder, imageToTensor } from './image-tensor.js';
import { rectToSource, supersampling, warpAffine } from './image-warp.js';
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
export function cropToTensor(img: RgbImage, rect: Rect, outW: number, outH: number, fmt: TensorFormat, out?: Float32Array, maxSupersampling?: number): Float32Array {
  const m = rectToSource(rect, outW, outH);
  if (supersampling(m) !== 1 && maxSupersampling !== 1) return imageToTensor(warpAffine(img, m, outW, outH, maxSupersampling === undefined ? {} : { maxSupersampling }), fmt, out);
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
