/**
 * Manifest-driven model loading: one onnxruntime-node session per model,
 * created once, with tensor names, shapes and preprocessing taken from the
 * installed `manifest.json` (agent/models/fetch.ts), not hard-coded here.
 *
 * onnxruntime-node 1.30's `session.run` is not asynchronous native work: it
 * defers a synchronous native call with setImmediate, so it blocks the thread
 * that calls it for the whole inference (measured in docs/recognition.md). The
 * agent therefore calls these sessions from worker threads (engine.ts).
 */
import { AGENT_SESSION_OPTIONS, EVERY_FRAME_SESSION_OPTIONS } from '../models/ort-options.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { ModelId } from '../models/catalogue.js';
import { loadManifest, modelPath } from '../models/fetch.js';
import { processCpuMs } from './cpu.js';
import { emotionModelInstalled } from './emotion.js';
import type { Manifest, ManifestModel } from '../models/fetch.js';

export type Outputs = Record<string, Float32Array>;

export interface ModelLoadOptions {
  /** Folder with manifest.json and the .onnx files. */
  modelsDir: string;
  /**
   * Which models to load; default all the pipeline uses: PIPELINE_MODELS, less fr_expression.onnx where the mini
   * expression model is installed beside them (emotion.ts; the analyzer runs that one instead).
   */
  ids?: readonly ModelId[];
  /** onnxruntime intra-op threads per session; default 1 (parallelism comes from workers). */
  intraOpThreads?: number;
}

export const PIPELINE_MODELS: readonly ModelId[] = ['detect', 'landmark', 'feature', 'age', 'gender', 'expression'];

/** The models run on every analysed frame (with a face, for the landmarks): they keep onnxruntime's memory arena. */
const EVERY_FRAME_MODELS: ReadonlySet<ModelId> = new Set<ModelId>(['detect', 'landmark']);

/**
 * The face set's models the pipeline loads from `dir`: all of PIPELINE_MODELS, but fr_expression.onnx (28 MB, ~32 MiB
 * resident) only where the mini expression model is not installed (docs/decisions.md, "A small expression model").
 */
export async function pipelineModels(dir: string): Promise<readonly ModelId[]> {
  return (await emotionModelInstalled(dir)) ? PIPELINE_MODELS.filter((id) => id !== 'expression') : PIPELINE_MODELS;
}

/** Cumulative run count and time per model inside `run` (wall time, or process CPU time when measuring). */
export type ModelTimings = Partial<Record<ModelId, { runs: number; ms: number }>>;

export class ModelSessions {
  readonly timings: ModelTimings = {};
  /** Clock of `timings`: wall time, or the process's CPU time (setMeasureCpu, for the benchmark). */
  private clock: () => number = () => performance.now();

  setMeasureCpu(on: boolean): void {
    this.clock = on ? processCpuMs : () => performance.now();
  }

  private constructor(
    readonly dir: string,
    readonly manifest: Manifest,
    private readonly sessions: Map<ModelId, { spec: ManifestModel; session: ort.InferenceSession }>,
  ) {}

  static async load(opts: ModelLoadOptions): Promise<ModelSessions> {
    const dir = resolve(opts.modelsDir);
    const manifest = await loadManifest(dir);
    const ids = opts.ids ?? (await pipelineModels(dir));
    const threads = Math.max(1, Math.floor(opts.intraOpThreads ?? 1));
    const sessions = new Map<ModelId, { spec: ManifestModel; session: ort.InferenceSession }>();
    try {
      for (const id of ids) {
        const spec = manifest.models.find((m) => m.id === id);
        if (!spec) throw new Error(`The models manifest in ${dir} has no "${id}" model. Run \`footfall models fetch\`.`);
        const path = modelPath(dir, manifest, id);
        if (!existsSync(path)) throw new Error(`Model file ${path} is missing. Run \`footfall models fetch\` to repair the models folder.`);
        const options = EVERY_FRAME_MODELS.has(id) ? EVERY_FRAME_SESSION_OPTIONS : AGENT_SESSION_OPTIONS;
        const session = await ort.InferenceSession.create(path, { ...options, intraOpNumThreads: threads });
        if (!session.inputNames.includes(spec.input.name)) {
          throw new Error(`Model ${spec.file} has no input "${spec.input.name}" (it has ${session.inputNames.join(', ')}); the manifest does not match the file.`);
        }
        sessions.set(id, { spec, session });
      }
    } catch (err) {
      for (const { session } of sessions.values()) await session.release().catch(() => undefined);
      throw err;
    }
    return new ModelSessions(dir, manifest, sessions);
  }

  has(id: ModelId): boolean {
    return this.sessions.has(id);
  }

  spec(id: ModelId): ManifestModel {
    const s = this.sessions.get(id);
    if (!s) throw new Error(`Model "${id}" is not loaded.`);
    return s.spec;
  }

  /** Run one model on a tensor shaped as its manifest input; returns every output by name. */
  async run(id: ModelId, input: Float32Array): Promise<Outputs> {
    const s = this.sessions.get(id);
    if (!s) throw new Error(`Model "${id}" is not loaded.`);
    const shape = s.spec.input.shape;
    const size = shape.reduce((a, b) => a * b, 1);
    if (input.length !== size) throw new Error(`Model "${id}" takes ${size} values ([${shape.join(',')}]), got ${input.length}.`);
    const t0 = this.clock();
    const result = await s.session.run({ [s.spec.input.name]: new ort.Tensor('float32', input, shape) });
    const t = (this.timings[id] ??= { runs: 0, ms: 0 });
    t.runs++;
    t.ms += this.clock() - t0;
    const out: Outputs = {};
    for (const [name, tensor] of Object.entries(result)) {
      if (tensor.type !== 'float32') throw new Error(`Model "${id}" output ${name} is ${tensor.type}, expected float32.`);
      out[name] = tensor.data as Float32Array;
    }
    return out;
  }

  async release(): Promise<void> {
    for (const { session } of this.sessions.values()) await session.release();
    this.sessions.clear();
  }
}
