/**
 * `footfall vision`: face diagnostics for installers and evaluation, on the
 * same code path as the agent (agent/vision FaceAnalyzer, same models, same
 * quality gate).
 */
import { Command, InvalidArgumentError } from 'commander';
import { defaultModelsDir } from '../agent/models/fetch.js';
import type { ObservedFace } from '../agent/vision/analyzer.js';
import type { VisionEngine } from '../agent/vision/engine.js';
import type { RgbImage } from '../agent/vision/types.js';

interface CommonOptions {
  models: string;
  json?: boolean;
  threads: number;
  gate?: number;
}

function fail(err: unknown): void {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number of at least 1');
  return n;
}

function fraction(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('must be a number from 0 to 1');
  return n;
}

const r1 = (x: number): number => Math.round(x * 10) / 10;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

async function withEngine<T>(opts: CommonOptions, f: (engine: VisionEngine) => Promise<T>): Promise<T> {
  // Loaded here, not at the top, so other footfall commands do not load onnxruntime and sharp.
  const { createVisionEngine } = await import('../agent/vision/engine.js');
  const engine = await createVisionEngine({
    modelsDir: opts.models,
    workers: 0,
    intraOpThreads: opts.threads,
    ...(opts.gate !== undefined ? { config: { quality: { gate: opts.gate } } } : {}),
  });
  try {
    return await f(engine);
  } finally {
    await engine.close();
  }
}

async function readImage(path: string): Promise<RgbImage> {
  const { loadImage } = await import('../agent/vision/io.js');
  try {
    return await loadImage(path);
  } catch (err) {
    throw new Error(`Cannot read image ${path}: ${(err as Error).message}`);
  }
}

/** The JSON shape of one face (`detect`); `embed` adds `embedding`. */
export function faceJson(f: ObservedFace): Record<string, unknown> {
  const [le, re, nose, ml, mr] = f.landmarks;
  const pt = (p: readonly [number, number]): number[] => [r1(p[0]), r1(p[1])];
  const q = f.qualityParts;
  return {
    box: { x1: r1(f.box.x1), y1: r1(f.box.y1), x2: r1(f.box.x2), y2: r1(f.box.y2) },
    score: r3(f.score),
    landmarks: { left_eye: pt(le), right_eye: pt(re), nose: pt(nose), mouth_left: pt(ml), mouth_right: pt(mr) },
    quality: r3(f.quality),
    quality_parts: {
      eye_distance: r1(q.eyeDistance),
      size: r3(q.size),
      laplacian_variance: r1(q.laplacianVariance),
      sharpness: r3(q.sharpness),
      yaw: r1(q.yaw),
      roll: r1(q.roll),
      pose: r3(q.pose),
      detector: r3(q.detector),
    },
    passes_gate: f.passesGate,
  };
}

function faceLine(i: number, f: ObservedFace): string {
  const b = f.box;
  const q = f.qualityParts;
  return (
    `  face ${i + 1}: box ${Math.round(b.x1)},${Math.round(b.y1)} ${Math.round(b.x2 - b.x1)}x${Math.round(b.y2 - b.y1)}  score ${f.score.toFixed(2)}  ` +
    `quality ${f.quality.toFixed(2)} ${f.passesGate ? 'passes the gate' : 'BELOW THE GATE'} ` +
    `(eyes ${q.eyeDistance.toFixed(0)} px, sharpness ${q.laplacianVariance.toFixed(0)}, yaw ${q.yaw.toFixed(0)}, roll ${q.roll.toFixed(0)})`
  );
}

async function largestFace(engine: VisionEngine, path: string): Promise<ObservedFace> {
  const { faces } = await engine.analyze(await readImage(path));
  const face = faces[0];
  if (!face) throw new Error(`No face found in ${path}.`);
  return face;
}

/**
 * `detect` and `embed`: each image read and analysed in turn; `describe` gives its JSON entry and the text heading
 * printed above its face lines. With --json one JSON array is printed at the end.
 */
async function eachImage(
  images: string[],
  opts: CommonOptions,
  describe: (engine: VisionEngine, path: string, img: RgbImage, faces: ObservedFace[]) => Promise<{ json: Record<string, unknown>; heading: string }>,
): Promise<void> {
  try {
    await withEngine(opts, async (engine) => {
      const out: Record<string, unknown>[] = [];
      for (const path of images) {
        const img = await readImage(path);
        const { faces } = await engine.analyze(img);
        const { json, heading } = await describe(engine, path, img, faces);
        if (opts.json) out.push(json);
        else {
          console.log(heading);
          faces.forEach((f, i) => console.log(faceLine(i, f)));
        }
      }
      if (opts.json) console.log(JSON.stringify(out, null, 2));
    });
  } catch (err) {
    fail(err);
  }
}

function addCommon(cmd: Command): Command {
  return cmd
    .option('--models <dir>', 'models directory (footfall models fetch)', defaultModelsDir())
    .option('--threads <n>', 'onnxruntime threads', positiveInt, 1)
    .option('--json', 'print JSON');
}

export function visionCommand(): Command {
  const vision = new Command('vision')
    .description('Face diagnostics: detection, quality gate, embeddings and comparison, as the shop-PC agent runs them')
    .addHelpText('after', '\nThe models must be installed first: footfall models fetch. See docs/recognition.md.');

  addCommon(vision.command('detect').description('Find the faces in images, with box, score, five landmarks, quality and the gate'))
    .argument('<image...>', 'JPEG, PNG or WebP files')
    .option('--gate <quality>', 'quality gate (0..1) instead of the default', fraction)
    .action((images: string[], opts: CommonOptions) =>
      eachImage(images, opts, async (engine, path, img, faces) => ({
        json: { image: path, width: img.width, height: img.height, gate: engine.config.quality.gate, faces: faces.map(faceJson) },
        heading: `${path}: ${img.width}x${img.height}, ${faces.length} face${faces.length === 1 ? '' : 's'} (gate ${engine.config.quality.gate})`,
      })),
    );

  addCommon(vision.command('embed').description('Detection as `detect`, plus the L2-normalised 512-d embedding of each face (largest face first)'))
    .argument('<image...>', 'JPEG, PNG or WebP files')
    .action((images: string[], opts: CommonOptions) =>
      eachImage(images, opts, async (engine, path, img, faces) => {
        const rows: Record<string, unknown>[] = [];
        for (const f of faces) {
          const e = await engine.embed(f.aligned);
          rows.push({ ...faceJson(f), embedding: Array.from(e, (x) => Math.round(x * 1e6) / 1e6) });
        }
        return {
          json: { image: path, width: img.width, height: img.height, model: engine.modelSet, faces: rows },
          heading: `${path}: ${faces.length} face${faces.length === 1 ? '' : 's'}, ${engine.modelSet} embeddings (512-d; use --json to print them)`,
        };
      }),
    );

  addCommon(vision.command('compare').description('Similarity of the largest face of two images, and whether they count as the same person'))
    .argument('<a>', 'first image')
    .argument('<b>', 'second image')
    .option('--threshold <cosine>', 'same-person threshold (default: the agent\'s)', fraction)
    .action(async (a: string, b: string, opts: CommonOptions & { threshold?: number }) => {
      try {
        const { cosine, DEFAULT_MATCH_THRESHOLD } = await import('../agent/vision/analyzer.js');
        const threshold = opts.threshold ?? DEFAULT_MATCH_THRESHOLD;
        await withEngine(opts, async (engine) => {
          const fa = await largestFace(engine, a);
          const fb = await largestFace(engine, b);
          const similarity = cosine(await engine.embed(fa.aligned), await engine.embed(fb.aligned));
          const same = similarity >= threshold;
          if (opts.json) {
            console.log(
              JSON.stringify(
                { a, b, similarity: r3(similarity), threshold, same_person: same, quality: { a: r3(fa.quality), b: r3(fb.quality) }, passes_gate: { a: fa.passesGate, b: fb.passesGate } },
                null,
                2,
              ),
            );
          } else {
            console.log(`similarity ${similarity.toFixed(3)}: ${same ? 'same person' : 'different people'} (threshold ${threshold})`);
            for (const [name, f] of [[a, fa], [b, fb]] as const) {
              if (!f.passesGate) console.log(`  note: the face in ${name} is below the quality gate (${f.quality.toFixed(2)}); the agent would not use it to identify anyone`);
            }
          }
        });
      } catch (err) {
        fail(err);
      }
    });

  return vision;
}
