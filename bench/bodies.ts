/**
 * The person detector, chosen by measurement (`npm run bench -- bodies`, issue 20): each candidate on the labelled
 * 640x360 door scenes (bench/bodies-scenes.ts): precision and recall of the people found (a detection is right when
 * its box overlaps a person's by IoU >= 0.4), frames where exactly the right people were found, false people in the
 * empty frames, and process CPU per frame on one thread (median and 90th percentile). Each candidate is scored at its
 * default threshold and at the threshold that gives it the best F1 on this set. The bare reference is the picture
 * fitted into a 512x512 input tensor and nothing else (the part every TF.js candidate pays before its model).
 *
 * OpenCV's HOG people detector runs only where `@u4/opencv4nodejs` has been built in a scratch folder (it is not a
 * dependency); otherwise its row says why:
 *
 *   apt-get install libopencv-dev
 *   mkdir /tmp/cv && cd /tmp/cv && npm init -y && OPENCV4NODEJS_DISABLE_AUTOBUILD=1 npm install @u4/opencv4nodejs
 *   FOOTFALL_BENCH_OPENCV=/tmp/cv npm run bench -- bodies
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { BODY_DEFAULTS } from '../agent/bodies/detector.js';
import { fitPicture } from '../agent/bodies/image.js';
import { testBodyDetector } from '../agent/bodies/test-detector.js';
import { tf, useWasmBackend } from '../agent/bodies/tfjs.js';
import type { BodyBox } from '../agent/bodies/types.js';
import type { RawImage } from '../agent/capture/ppm.js';
import { BODY_MODEL_IDS } from '../agent/models/catalogue.js';
import type { BodyModelId } from '../agent/models/catalogue.js';
import { ensureTestBodyModels } from '../agent/models/test-cache.js';
import { processCpuMs } from '../agent/vision/cpu.js';
import { makeScenes, SCENE_HEIGHT, SCENE_WIDTH } from './bodies-scenes.js';
import type { PixelBox, Scene } from './bodies-scenes.js';
import { loadAverage, ms, pct, percentile, progress, table } from './util.js';

const SCENES = 60;
const MATCH_IOU = 0.4;
const LOW = 0.05;
const THRESHOLDS = Array.from({ length: 15 }, (_, i) => Math.round((0.1 + 0.05 * i) * 100) / 100);

interface Candidate {
  name: string;
  licence: string;
  defaultScore: number;
  /** Detect at score >= minScore. */
  open(): Promise<{ detect(image: RawImage, minScore: number): Promise<BodyBox[]>; close(): Promise<void> }>;
}

function iou(a: PixelBox, b: PixelBox): number {
  const ix = Math.max(0, Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1));
  const iy = Math.max(0, Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1));
  const inter = ix * iy;
  const union = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return union > 0 ? inter / union : 0;
}

const px = (b: BodyBox): PixelBox => ({ x1: b.x * SCENE_WIDTH, y1: b.y * SCENE_HEIGHT, x2: (b.x + b.w) * SCENE_WIDTH, y2: (b.y + b.h) * SCENE_HEIGHT });

interface Score {
  tp: number;
  fp: number;
  fn: number;
  exact: number;
  emptyFp: number;
}

/** Greedy matching, best detection first; a detection on a "don't care" person is not counted. */
export function score(scenes: readonly Scene[], found: readonly BodyBox[][], minScore: number): Score {
  const s: Score = { tp: 0, fp: 0, fn: 0, exact: 0, emptyFp: 0 };
  scenes.forEach((scene, i) => {
    const dets = found[i]!.filter((b) => b.score >= minScore).sort((a, b) => b.score - a.score);
    const used = new Set<number>();
    let tp = 0;
    let fp = 0;
    for (const d of dets) {
      const box = px(d);
      let best = -1;
      let bestIou = MATCH_IOU;
      scene.people.forEach((p, j) => {
        const v = iou(box, p);
        if (!used.has(j) && v >= bestIou) [best, bestIou] = [j, v];
      });
      if (best >= 0) {
        used.add(best);
        tp++;
      } else if (!scene.dontCare.some((p) => iou(box, p) >= MATCH_IOU)) fp++;
    }
    const fn = scene.people.length - tp;
    s.tp += tp;
    s.fp += fp;
    s.fn += fn;
    if (fp === 0 && fn === 0) s.exact++;
    if (scene.people.length === 0 && scene.dontCare.length === 0) s.emptyFp += fp;
  });
  return s;
}

function f1(s: Score): number {
  return s.tp === 0 ? 0 : (2 * s.tp) / (2 * s.tp + s.fp + s.fn);
}

/** A model of the catalogue; MoveNet on its default engine (backbone on onnxruntime) unless `engine` is 'tfjs'. */
function detectorCandidate(model: BodyModelId, fit: 'letterbox' | 'stretch', licence: string, inputSize?: number, engine?: 'tfjs'): Candidate {
  const defaults = BODY_DEFAULTS[model];
  const size = { ...(inputSize !== undefined ? { inputSize } : {}), ...(engine ? { engine } : {}) };
  const runs = model === 'movenet-multipose' && !engine ? 'onnxruntime + tfjs-wasm' : 'tfjs-wasm';
  return {
    name: `${model}${inputSize !== undefined ? ` ${inputSize}x${inputSize}` : ''}${fit === defaults.fit ? '' : ` (${fit})`}, ${runs}`,
    licence,
    defaultScore: defaults.minScore,
    async open() {
      const low = await testBodyDetector({ model, fit, minScore: LOW, ...size });
      const atDefault = await testBodyDetector({ model, fit, ...size });
      return {
        detect: (image, minScore) => (minScore === defaults.minScore ? atDefault : low).detect(image),
        close: async () => {
          await low.close();
          await atDefault.close();
        },
      };
    },
  };
}

/** The part of @u4/opencv4nodejs used here (not a dependency, so untyped). */
interface Cv {
  Mat: new (data: Buffer, rows: number, cols: number, type: number) => { cvtColor(code: number): unknown };
  CV_8UC3: number;
  COLOR_RGB2GRAY: number;
  Size: new (w: number, h: number) => unknown;
  HOGDescriptor: (new () => {
    setSVMDetector(d: unknown): void;
    detectMultiScale(img: unknown, hitThreshold: number, winStride: unknown, padding: unknown, scale: number, finalThreshold: number, meanShift: boolean): {
      foundLocations: { x: number; y: number; width: number; height: number }[];
      foundWeights: number[];
    };
  }) & { getDefaultPeopleDetector(): unknown };
  setNumThreads?: (n: number) => void;
}

function loadOpenCv(): { cv?: Cv; why?: string } {
  const dir = process.env.FOOTFALL_BENCH_OPENCV;
  if (!dir) return { why: 'not built here (set FOOTFALL_BENCH_OPENCV to a folder where @u4/opencv4nodejs is installed)' };
  if (!existsSync(join(dir, 'node_modules', '@u4', 'opencv4nodejs'))) return { why: `@u4/opencv4nodejs is not installed in ${dir}` };
  try {
    const require = createRequire(join(dir, 'package.json'));
    return { cv: require('@u4/opencv4nodejs') as Cv };
  } catch (err) {
    return { why: `@u4/opencv4nodejs does not load: ${(err as Error).message.split('\n')[0]}` };
  }
}

/** HOG + linear SVM (Dalal-Triggs, OpenCV's default people detector), 64x128 window, stride 8, scale step 1.05, grouping 2. */
function hogCandidate(cv: Cv): Candidate {
  return {
    name: 'HOG people detector, OpenCV 4.6 (Debian)',
    licence: 'OpenCV 4.6 Apache-2.0; @u4/opencv4nodejs MIT (native addon, built from source)',
    defaultScore: 0.5,
    async open() {
      cv.setNumThreads?.(1);
      const hog = new cv.HOGDescriptor();
      hog.setSVMDetector(cv.HOGDescriptor.getDefaultPeopleDetector());
      return {
        async detect(image, minScore) {
          const grey = new cv.Mat(image.data, image.height, image.width, cv.CV_8UC3).cvtColor(cv.COLOR_RGB2GRAY);
          // Hit threshold -1 (OpenCV's default is 0) so that windows with small negative margins are kept too and
          // the threshold sweep below can trade precision for recall.
          const r = hog.detectMultiScale(grey, -1, new cv.Size(8, 8), new cv.Size(0, 0), 1.05, 2, false);
          // SVM margins, not probabilities: squashed to 0..1 (margin 0 -> 0.5) so one threshold grid serves every candidate.
          return r.foundLocations
            .map((l, i) => ({ x: l.x / image.width, y: l.y / image.height, w: l.width / image.width, h: l.height / image.height, score: 1 / (1 + Math.exp(-(r.foundWeights[i] ?? 0))) }))
            .filter((b) => b.score >= minScore);
        },
        async close() {},
      };
    },
  };
}

async function measure(c: Candidate, scenes: readonly Scene[]): Promise<string[][]> {
  const d = await c.open();
  try {
    for (const s of scenes.slice(0, 3)) await d.detect(s.image, c.defaultScore); // warm-up
    const found: BodyBox[][] = [];
    for (const s of scenes) found.push(await d.detect(s.image, LOW));
    const cpu: number[] = [];
    for (let rep = 0; rep < 2; rep++) {
      for (const s of scenes) {
        const t = processCpuMs();
        await d.detect(s.image, c.defaultScore);
        cpu.push(processCpuMs() - t);
      }
    }
    const atDefault = score(scenes, found, c.defaultScore);
    let bestT = THRESHOLDS[0]!;
    for (const t of THRESHOLDS) if (f1(score(scenes, found, t)) > f1(score(scenes, found, bestT))) bestT = t;
    const atBest = score(scenes, found, bestT);
    const row = (s: Score, t: number) => [
      String(t),
      pct(s.tp / (s.tp + s.fp || 1)),
      pct(s.tp / (s.tp + s.fn || 1)),
      f1(s).toFixed(2),
      `${s.exact}/${scenes.length}`,
      String(s.emptyFp),
    ];
    const median = ms(percentile(cpu, 0.5));
    const p90 = ms(percentile(cpu, 0.9));
    progress(`${c.name}: default ${row(atDefault, c.defaultScore).join(' ')}; best ${row(atBest, bestT).join(' ')}; cpu median ${median} ms`);
    return [
      [c.name, 'default', ...row(atDefault, c.defaultScore), median, p90, c.licence],
      ['', 'best F1', ...row(atBest, bestT), '', '', ''],
    ];
  } finally {
    await d.close();
  }
}

async function bareReference(scenes: readonly Scene[]): Promise<string> {
  await useWasmBackend();
  const cpu: number[] = [];
  for (let rep = 0; rep < 2; rep++) {
    for (const s of scenes) {
      const t = processCpuMs();
      const f = fitPicture(s.image, 512, 'letterbox', 'float32');
      await f.input.data();
      tf.dispose(f.input);
      cpu.push(processCpuMs() - t);
    }
  }
  return ms(percentile(cpu, 0.5));
}

export async function run(): Promise<string> {
  progress('making the labelled door scenes and fetching the models...');
  const [scenes] = await Promise.all([makeScenes(SCENES), ensureTestBodyModels(BODY_MODEL_IDS)]);
  const people = scenes.reduce((n, s) => n + s.people.length, 0);
  const empty = scenes.filter((s) => s.people.length === 0 && s.dontCare.length === 0).length;
  const candidates: Candidate[] = [
    detectorCandidate('centernet', 'letterbox', 'MIT package; upstream network (610265158/mobilenetv3_centernet) states no licence'),
    detectorCandidate('centernet', 'stretch', 'as above'),
    detectorCandidate('nanodet', 'letterbox', 'MIT package; network Apache-2.0 (NanoDet)'),
    detectorCandidate('movenet-multipose', 'letterbox', 'MIT package; network Apache-2.0 (Google MoveNet)'),
    detectorCandidate('movenet-multipose', 'letterbox', 'as above', undefined, 'tfjs'),
    detectorCandidate('movenet-multipose', 'letterbox', 'as above', 320),
  ];
  const opencv = loadOpenCv();
  if (opencv.cv) candidates.push(hogCandidate(opencv.cv));
  const reference = await bareReference(scenes);
  const rows: string[][] = [];
  for (const c of candidates) rows.push(...(await measure(c, scenes)));
  if (!opencv.cv) rows.push(['HOG people detector, OpenCV (Debian)', `not measured: ${opencv.why}`, '', '', '', '', '', '', '', '', 'Apache-2.0']);
  const head = ['candidate', 'at', 'score threshold', 'precision', 'recall', 'F1', 'frames exactly right', 'false people, empty frames', 'CPU ms/frame (median)', 'p90', 'licence'];
  return [
    '## Person detector candidates (issue 20)',
    '',
    `${SCENES} labelled 640x360 door scenes (bench/bodies-scenes.ts): ${people} people to find, ${empty} empty frames; a detection is right at IoU >= ${MATCH_IOU} with a labelled person. ` +
      `CPU: process CPU time per \`detect()\` (picture in, boxes out) on one thread, ${SCENES * 2} frames. ` +
      `Bare reference (picture fitted into a 512x512 tensor, no model): ${reference} ms/frame. Load average ${loadAverage()}.`,
    '',
    table(head, rows),
  ].join('\n');
}
