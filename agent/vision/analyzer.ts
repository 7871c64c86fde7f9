/**
 * The per-image face analysis shared by the agent, the CLI and the
 * benchmark: detect -> landmarks -> five points -> aligned 112x112 crop ->
 * quality; and, on request, the embedding and the attributes of a face.
 * Runs wherever its ModelSessions live (a worker thread in the agent).
 */
import type { ModelId } from '../models/catalogue.js';
import type { ManifestModel } from '../models/fetch.js';
import { alignmentTransform, fivePointsFrom68 } from './align.js';
import { decodeExpression, decodeSsrNet, emotionFromProbabilities, emotionRuleFor, genderFromScore, genderRuleFor } from './attributes.js';
import { processCpuMs } from './cpu.js';
import { DescriptionModel, descriptionSquare } from './description.js';
import { EmotionModel, emotionSquare } from './emotion.js';
import { DEFAULT_DETECT_OPTIONS, decodeDetections } from './detect.js';
import type { DetectOptions } from './detect.js';
import { clampRect, cropRgb, cropToTensor, imageToTensor, resizeToTensor, shiftInside, warpAffine, warpFootprint, warpFromRegion, wholePixels } from './image.js';
import type { Affine, FrameRegion, PixelWindow, Rect, TensorFormat } from './image.js';
import type { ModelSessions, Outputs } from './models.js';
import { DEFAULT_QUALITY, qualityOf, sharpnessWindow } from './quality.js';
import { SimdTensors } from './simd.js';
import type { QualityConfig } from './quality.js';
import type { Box, FaceAttributes, FaceFound, FaceObservation, FivePoints, Point, RgbImage } from './types.js';

export interface AnalyzerConfig {
  detect: DetectOptions;
  quality: QualityConfig;
}

/** The most k x k samples per landmark-input pixel (see observe). */
const LANDMARK_SUPERSAMPLING = 2;

export const DEFAULT_ANALYZER_CONFIG: AnalyzerConfig = { detect: DEFAULT_DETECT_OPTIONS, quality: DEFAULT_QUALITY };

/** What callers may override; anything left out takes its default. */
export interface AnalyzerConfigInput {
  detect?: Partial<DetectOptions>;
  quality?: Partial<QualityConfig>;
}

export function resolveAnalyzerConfig(input: AnalyzerConfigInput = {}): AnalyzerConfig {
  return { detect: { ...DEFAULT_DETECT_OPTIONS, ...input.detect }, quality: { ...DEFAULT_QUALITY, ...input.quality } };
}

/** Regions of a face's context crop (context coordinates) that the attribute models and the face image use. */
export interface ContextRegions {
  /** SSR-Net age/gender crop: box x1.4 about its centre, shifted inside the frame. */
  ssr: Rect;
  /** Expression crop: from the box's top-left corner, width and height x1.2, clamped to the frame. */
  expression: Rect;
  /** Face image: box x1.5 about its centre, clamped to the frame. */
  image: Rect;
  /** Gender and age model's face square (description.ts), not clamped: outside the frame is black. */
  description?: Rect;
  /** The mini expression model's face square (emotion.ts), not clamped: outside the frame is black. */
  emotion?: Rect;
}

/** A face found in a frame, with its context regions (relative to its crop). */
export type FoundFace = FaceFound & { regions: ContextRegions };

/** A face with its pixels: aligned crop and context region. */
export type ObservedFace = FaceObservation & { regions: ContextRegions };

/** One scanned frame: its faces, largest first, without their pixels (the pipeline cuts out the ones it keeps). */
export interface FrameScan {
  faces: FoundFace[];
  /** The frame's pixel buffer, handed back so the caller can reuse it (a worker engine transfers it back). */
  input?: Uint8Array;
}

/** One analysed frame: its faces, largest first, with their pixels. */
export interface FrameAnalysis {
  faces: ObservedFace[];
  /** The frame's pixel buffer, handed back so the caller can reuse it (a worker engine transfers it back). */
  input?: Uint8Array;
}

export interface AttributeParts {
  /** Run the age and gender models (cheap). Default true. */
  ageGender?: boolean;
  /** Run the expression model (the mini model ~2.5 ms, fr_expression.onnx ~60 ms). Default true. */
  expression?: boolean;
}

function boxRect(b: Box): Rect {
  return { x: b.x1, y: b.y1, w: b.x2 - b.x1, h: b.y2 - b.y1 };
}

function scaledAbout(b: Box, k: number): Rect {
  const w = (b.x2 - b.x1) * k;
  const h = (b.y2 - b.y1) * k;
  return { x: (b.x1 + b.x2) / 2 - w / 2, y: (b.y1 + b.y2) / 2 - h / 2, w, h };
}

function union(rects: Rect[]): Rect {
  const x1 = Math.min(...rects.map((r) => r.x));
  const y1 = Math.min(...rects.map((r) => r.y));
  const x2 = Math.max(...rects.map((r) => r.x + r.w));
  const y2 = Math.max(...rects.map((r) => r.y + r.h));
  return { x: x1, y: y1, w: x2 - x1, h: y2 - y1 };
}

function formatOf(spec: ManifestModel): TensorFormat {
  return { colour: spec.preprocessing.colour, mean: spec.preprocessing.mean, std: spec.preprocessing.std };
}

export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s) || 1;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! / n;
  return out;
}

/**
 * Cosine similarity at or above which two faces count as the same person
 * (docs/recognition.md): every confirmed pair of different people measured
 * here is at most 0.40, every same-person pair of photos at least 0.55.
 */
export const DEFAULT_MATCH_THRESHOLD = 0.45;

/** Cosine similarity; for L2-normalised vectors the dot product. */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / (Math.sqrt(na * nb) || 1);
}

/** Per-stage time, cumulative (ms), for the benchmark: wall time, or process CPU time with `measureCpu`. */
export interface StageTimes {
  detectPrep: number;
  detect: number;
  landmarks: number;
  align: number;
  quality: number;
  embed: number;
  attributes: number;
}

export class FaceAnalyzer {
  readonly config: AnalyzerConfig;
  readonly stageMs: StageTimes = { detectPrep: 0, detect: 0, landmarks: 0, align: 0, quality: 0, embed: 0, attributes: 0 };
  private readonly template: readonly Point[];
  private readonly alignedSize: number;
  /**
   * Model input buffers, reused (the detector's alone is 0.9 MB): one is taken for a model call and given back
   * when the call is over, so calls that overlap (on one analyzer without an engine) never share one.
   */
  private readonly spareTensors = new Map<ModelId, Float32Array[]>();
  /** The detector's input made with WebAssembly SIMD (same values as resizeToTensor), where available. */
  private readonly simd = SimdTensors.create();
  private simdBusy = false;

  /** Clock of the stage times: wall time, or the process's CPU time when measuring (benchmark, inline engine). */
  private readonly clock: () => number;

  constructor(
    readonly models: ModelSessions,
    config: AnalyzerConfigInput = {},
    opts: { measureCpu?: boolean } = {},
  ) {
    this.config = resolveAnalyzerConfig(config);
    this.clock = opts.measureCpu ? processCpuMs : () => performance.now();
    models.setMeasureCpu(opts.measureCpu === true);
    const feature = models.spec('feature').preprocessing;
    if (!feature.alignment) throw new Error('The manifest\'s "feature" model has no alignment template.');
    if (feature.width !== feature.height) throw new Error('The "feature" model input must be square.');
    this.template = feature.alignment.points;
    this.alignedSize = feature.width;
  }

  get modelSet(): string {
    return this.models.manifest.set;
  }

  private spec(id: ModelId): ManifestModel {
    return this.models.spec(id);
  }

  /** The input format of a model, as its manifest says (the catalogue holds the measured colour order). */
  inputFormat(id: ModelId): TensorFormat {
    return formatOf(this.spec(id));
  }

  /** An input buffer for model `id` (its manifest shape), from the spares when one is free. */
  private takeTensor(id: ModelId): Float32Array {
    const spare = this.spareTensors.get(id)?.pop();
    return spare ?? new Float32Array(this.spec(id).input.shape.reduce((a, b) => a * b, 1));
  }

  private giveTensor(id: ModelId, t: Float32Array): void {
    let list = this.spareTensors.get(id);
    if (!list) this.spareTensors.set(id, (list = []));
    if (list.length < 2) list.push(t);
  }

  /** Run model `id` on a tensor filled by `fill` in a reused input buffer. */
  private async runOn(id: ModelId, fill: (t: Float32Array) => void): Promise<Outputs> {
    const t = this.takeTensor(id);
    try {
      fill(t);
      return await this.models.run(id, t);
    } finally {
      this.giveTensor(id, t);
    }
  }

  /** Find the faces in an RGB image, largest first, with their aligned crops and context regions. */
  async analyze(img: RgbImage): Promise<FrameAnalysis> {
    const scan = await this.scan(img);
    const faces = scan.faces.map((f): ObservedFace => {
      const t = this.clock();
      const aligned = warpAffine(img, this.alignment(f.landmarks), this.alignedSize, this.alignedSize);
      this.stageMs.align += this.clock() - t;
      return { ...f, aligned, context: cropRgb(img, f.crop) };
    });
    return { faces, input: img.data };
  }

  /** Find the faces in an RGB image, largest first: boxes, landmarks, quality and crop regions, no pixels. */
  async scan(img: RgbImage): Promise<FrameScan> {
    const times = this.stageMs;
    let t = this.clock();
    const dspec = this.spec('detect');
    const dp = dspec.preprocessing;
    const fmt = this.inputFormat('detect');
    let raw;
    let now;
    if (this.simd && !this.simdBusy && SimdTensors.handles(img, dp.width, dp.height, fmt)) {
      // The tensor is a view into the SIMD kernel's memory: no other frame may use it until the detector is done.
      this.simdBusy = true;
      try {
        const tensor = this.simd.detectorTensor(img, dp.width, dp.height, fmt);
        now = this.clock();
        times.detectPrep += now - t;
        t = now;
        raw = await this.models.run('detect', tensor);
      } finally {
        this.simdBusy = false;
      }
    } else {
      const tensor = this.takeTensor('detect');
      try {
        resizeToTensor(img, dp.width, dp.height, fmt, tensor);
        now = this.clock();
        times.detectPrep += now - t;
        t = now;
        raw = await this.models.run('detect', tensor);
      } finally {
        this.giveTensor('detect', tensor);
      }
    }
    const [scoresName, boxesName] = dspec.outputs.map((o) => o.name);
    const scores = raw[scoresName ?? 'scores'];
    const boxes = raw[boxesName ?? 'boxes'];
    if (!scores || !boxes) throw new Error('The detector returned no scores/boxes outputs.');
    const dets = decodeDetections(scores, boxes, img.width, img.height, this.config.detect);
    now = this.clock();
    times.detect += now - t;

    const faces: FoundFace[] = [];
    for (const det of dets) {
      faces.push(await this.observe(img, det.box, det.score));
    }
    faces.sort((a, b) => (b.box.x2 - b.box.x1) * (b.box.y2 - b.box.y1) - (a.box.x2 - a.box.x1) * (a.box.y2 - a.box.y1));
    return { faces, input: img.data };
  }

  /** The aligned crop -> frame map of a face's five points. */
  private alignment(landmarks: FivePoints): Affine {
    return alignmentTransform(landmarks, this.template, this.alignedSize).toFrame;
  }

  /** Aligned-crop pixels the quality reads, warped into a reused buffer (the rest of it is stale). */
  private readonly sharpness: { window: PixelWindow; buffer: Uint8Array } = { window: { u0: 0, v0: 0, u1: 1, v1: 1 }, buffer: new Uint8Array(0) };

  /**
   * Landmarks, quality and crop region for one detected box. Quality needs only the sharpness window of the
   * aligned crop (about a third of it), so only that is warped here; the whole aligned crop is made for the
   * faces that get embedded (embedFace), from the cut-out crop region, with the same pixels.
   */
  async observe(img: RgbImage, box: Box, score: number): Promise<FoundFace> {
    const times = this.stageMs;
    let t = this.clock();
    const lspec = this.spec('landmark');
    const lp = lspec.preprocessing;
    const rect = shiftInside(boxRect(box), img.width, img.height);
    // At most 2 x 2 samples per input pixel: a face 300-600 px wide would take 4 x 4 to 5 x 5 (16-25 bilinear samples
    // for each of the 64 x 64 pixels, on every frame, the largest cost of a large face); measured in docs/benchmarks.md
    // (agent-real, large faces), the recognition tests and the same-person figures unchanged.
    const lout = await this.runOn('landmark', (t) => cropToTensor(img, rect, lp.width, lp.height, this.inputFormat('landmark'), t, LANDMARK_SUPERSAMPLING));
    const pts = lout[lspec.outputs[0]?.name ?? 'output'];
    if (!pts) throw new Error('The landmark model returned no output.');
    const frame68 = new Float32Array(136);
    for (let i = 0; i < 68; i++) {
      frame68[2 * i] = rect.x + pts[2 * i]! * rect.w;
      frame68[2 * i + 1] = rect.y + pts[2 * i + 1]! * rect.h;
    }
    const landmarks = fivePointsFrom68(frame68);
    let now = this.clock();
    times.landmarks += now - t;
    t = now;

    const size = this.alignedSize;
    const toFrame = this.alignment(landmarks);
    const sharp = this.sharpness;
    if (sharp.buffer.length !== size * size * 3) {
      sharp.buffer = new Uint8Array(size * size * 3);
      sharp.window = sharpnessWindow(size);
    }
    const window = warpAffine(img, toFrame, size, size, { window: sharp.window, into: sharp.buffer });
    now = this.clock();
    times.align += now - t;
    t = now;

    const q = qualityOf(landmarks, window, score, this.config.quality);

    const ssr = shiftInside(scaledAbout(box, 1.4), img.width, img.height);
    const bw = box.x2 - box.x1;
    const bh = box.y2 - box.y1;
    const expression = clampRect({ x: box.x1, y: box.y1, w: bw * 1.2, h: bh * 1.2 }, img.width, img.height);
    const image = clampRect(scaledAbout(box, 1.5), img.width, img.height);
    const description = descriptionSquare(box);
    const emotion = emotionSquare(box);
    const fp = warpFootprint(toFrame, { u0: 0, v0: 0, u1: size, v1: size }, img.width - 1, img.height - 1);
    const crop = wholePixels(union([ssr, expression, image, clampRect(description, img.width, img.height), clampRect(emotion, img.width, img.height), { x: fp.x0, y: fp.y0, w: fp.x1 + 1 - fp.x0, h: fp.y1 + 1 - fp.y0 }]), img.width, img.height);
    const rel = (r: Rect): Rect => ({ x: r.x - crop.x, y: r.y - crop.y, w: r.w, h: r.h });
    times.quality += this.clock() - t;
    return {
      box,
      score,
      landmarks,
      quality: q.quality,
      qualityParts: q.parts,
      passesGate: q.quality >= this.config.quality.gate,
      crop,
      regions: { ssr: rel(ssr), expression: rel(expression), image: rel(image), description: rel(description), emotion: rel(emotion) },
    };
  }

  /**
   * L2-normalised embedding of the face whose five points are `landmarks`, from its crop region (FaceFound.crop
   * cut out of the frame): the aligned crop is warped from the region, the same pixels as from the whole frame.
   */
  async embedFace(region: FrameRegion, landmarks: FivePoints): Promise<Float32Array> {
    const t = this.clock();
    const aligned = warpFromRegion(region, this.alignment(landmarks), this.alignedSize, this.alignedSize);
    this.stageMs.align += this.clock() - t;
    return this.embed(aligned);
  }

  /** L2-normalised embedding of an aligned crop. */
  async embed(aligned: RgbImage): Promise<Float32Array> {
    const t = this.clock();
    const spec = this.spec('feature');
    if (aligned.width !== spec.preprocessing.width || aligned.height !== spec.preprocessing.height) {
      throw new Error(`embed: expected a ${spec.preprocessing.width}x${spec.preprocessing.height} aligned crop`);
    }
    const out = await this.runOn('feature', (t) => imageToTensor(aligned, this.inputFormat('feature'), t));
    const v = out[spec.outputs[0]?.name ?? 'output'];
    if (!v) throw new Error('The feature model returned no output.');
    const e = l2normalize(v);
    this.stageMs.embed += this.clock() - t;
    return e;
  }

  private description?: Promise<DescriptionModel | undefined>;

  private emotion?: Promise<EmotionModel | undefined>;

  /** Starts loading the gender and age model and the mini expression model (a failure surfaces at the first attributes, as without this). */
  prepareAttributes(): void {
    this.descriptionModel().catch(() => undefined);
    this.emotionModel().catch(() => undefined);
  }

  /**
   * The mini expression model, loaded once, when the face set's fr_expression.onnx was not loaded (ModelSessions
   * leaves it out when the mini model is installed: models.ts); undefined when fr_expression.onnx is the one.
   */
  private emotionModel(): Promise<EmotionModel | undefined> {
    this.emotion ??= this.models.has('expression') ? Promise.resolve(undefined) : EmotionModel.load(this.models.dir);
    return this.emotion;
  }

  /** The gender and age model beside the ONNX set, loaded once (undefined when it is not installed: SSR-Net then). */
  private descriptionModel(): Promise<DescriptionModel | undefined> {
    this.description ??= DescriptionModel.load(this.models.dir);
    return this.description;
  }

  /**
   * Gender, age and emotion from a face's context crop (`parts` picks the models). Gender and age come from the
   * description model (HSE FaceRes) when it is installed beside the face set, else from SSR-Net; the expression from
   * the mini model when it is installed, else from fr_expression.onnx.
   */
  async attributes(context: RgbImage, regions: ContextRegions, parts: AttributeParts = {}): Promise<FaceAttributes> {
    const t = this.clock();
    const result: FaceAttributes = {};
    const raw: NonNullable<FaceAttributes['raw']> = {};
    const description = parts.ageGender !== false && regions.description ? await this.descriptionModel() : undefined;
    if (description && regions.description) {
      const d = await description.describe(context, regions.description);
      const gender = genderFromScore(d.maleScore, genderRuleFor('faceres'));
      if (gender) result.gender = gender;
      result.age = Math.round(Math.min(130, Math.max(0, d.age)) * 10) / 10;
      raw.genderScore = d.maleScore;
      raw.genderModel = 'faceres';
      raw.age = d.age;
    } else if (parts.ageGender !== false) {
      const ap = this.spec('age').preprocessing;
      const af = this.inputFormat('age');
      const ssrTensor = this.takeTensor('age');
      let age: number;
      let genderScore: number;
      try {
        cropToTensor(context, regions.ssr, ap.width, ap.height, af, ssrTensor);
        age = decodeSsrNet(await this.models.run('age', ssrTensor), 101);
        const gp = this.spec('gender').preprocessing;
        const gf = this.inputFormat('gender');
        const same = gp.width === ap.width && gp.height === ap.height && gf.colour === af.colour && gf.mean.join() === af.mean.join() && gf.std.join() === af.std.join();
        genderScore = same
          ? decodeSsrNet(await this.models.run('gender', ssrTensor), 1)
          : decodeSsrNet(await this.runOn('gender', (t) => cropToTensor(context, regions.ssr, gp.width, gp.height, gf, t)), 1);
      } finally {
        this.giveTensor('age', ssrTensor);
      }
      const gender = genderFromScore(genderScore);
      if (gender) result.gender = gender;
      result.age = Math.round(Math.min(130, Math.max(0, age)) * 10) / 10;
      raw.genderScore = genderScore;
      raw.genderModel = 'ssr-net';
      raw.age = age;
    }
    const mini = parts.expression !== false ? await this.emotionModel() : undefined;
    if (mini) {
      if (!regions.emotion) throw new Error('attributes: the face has no expression square (regions.emotion).');
      const probabilities = await mini.classify(context, regions.emotion);
      const emotion = emotionFromProbabilities(probabilities, emotionRuleFor('emotion-mini'));
      if (emotion) result.emotion = emotion;
      raw.emotionProbabilities = probabilities;
      raw.emotionModel = 'emotion-mini';
    } else if (parts.expression !== false) {
      if (!this.models.has('expression')) throw new Error('No expression model is installed. Run `footfall models fetch`.');
      const ep = this.spec('expression').preprocessing;
      const eout = await this.runOn('expression', (t) => cropToTensor(context, regions.expression, ep.width, ep.height, this.inputFormat('expression'), t));
      const logits = eout[this.spec('expression').outputs[0]?.name ?? 'output'];
      if (!logits) throw new Error('The expression model returned no output.');
      const expr = decodeExpression(logits);
      const emotion = emotionFromProbabilities(expr.probabilities, emotionRuleFor('fr-expression'));
      if (emotion) result.emotion = emotion;
      raw.emotionProbabilities = expr.probabilities;
      raw.emotionModel = 'fr-expression';
    }
    result.raw = raw;
    this.stageMs.attributes += this.clock() - t;
    return result;
  }
}
