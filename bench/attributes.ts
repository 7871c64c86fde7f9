/**
 * Attribute accuracy benchmark (`npm run bench -- attributes`): gender, age and expression from the shop PC's
 * models against hand labels (agent/fixtures/attribute-labels.ts) of every face in the registry photos (women)
 * and, when present, ../shared/faces (mostly men). For each attribute it reports accuracy at the confidence levels
 * the agent could require, and the level the agent uses (agent/vision/attributes.ts ATTRIBUTE_CONFIDENCE): an
 * attribute is sent only where it was right most of the time. The expression is measured with both models on the
 * same faces: the mini model the agent runs where it is installed (emotion.ts), and fr_expression.onnx, which it runs
 * without it (a models folder of the ONNX face set alone); and the mini model on the face crops it could read.
 */
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ATTRIBUTE_LABELS } from '../agent/fixtures/attribute-labels.js';
import type { AttributeLabel } from '../agent/fixtures/attribute-labels.js';
import { ensureTestPhotos } from '../agent/fixtures/registry-photos.js';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { emotionFromProbabilities, emotionRuleFor, genderBand, genderFromScore, genderRuleFor, type GenderRule } from '../agent/vision/attributes.js';
import { descriptionSquare } from '../agent/vision/description.js';
import { EmotionModel } from '../agent/vision/emotion.js';
import type { Rect } from '../agent/vision/image.js';
import type { EmotionModelId, GenderModel } from '../agent/vision/types.js';
import { iou } from '../agent/vision/detect.js';
import { createVisionEngine } from '../agent/vision/engine.js';
import { sharedFacesDir } from '../agent/vision/fixtures.js';
import { loadImage } from '../agent/vision/io.js';
import { pct, progress, table } from './util.js';

export interface Measured {
  label: AttributeLabel;
  genderScore: number;
  age: number;
  /** Expression probabilities of each model. */
  probabilities: Record<EmotionModelId, Record<string, number>>;
  /** The mini model's probabilities on the other crops it could read (MINI_CROPS). */
  crops: Record<string, Record<string, number>>;
  quality: number;
}

const EMOTION_MODELS: readonly [EmotionModelId, string][] = [
  ['fr-expression', 'fr_expression.onnx'],
  ['emotion-mini', 'mini-Xception'],
];

/**
 * Face crops the mini model could read (frame pixels, from the detector box; `expression` is fr_expression's crop):
 * the one the agent uses is the box squared (1.0).
 */
const MINI_CROPS: readonly [string, (b: { x1: number; y1: number; x2: number; y2: number }, expression: Rect) => Rect][] = [
  ['fr_expression\'s crop (top-left corner, x1.2)', (_b, e) => e],
  ['the detector box', (b) => ({ x: b.x1, y: b.y1, w: b.x2 - b.x1, h: b.y2 - b.y1 })],
  ['oarriaga\'s (box, +10 % each side, +20 % above and below)', (b) => ({ x: b.x1 - 0.1 * (b.x2 - b.x1), y: b.y1 - 0.2 * (b.y2 - b.y1), w: 1.2 * (b.x2 - b.x1), h: 1.4 * (b.y2 - b.y1) })],
  ...[0.9, 1.0, 1.1, 1.2, 1.3].map((k): [string, (b: { x1: number; y1: number; x2: number; y2: number }) => Rect] => [`the box squared, x${k.toFixed(1)}${k === 1.2 ? ' (FaceRes\'s)' : k === 1 ? ' (used)' : ''}`, (b) => descriptionSquare(b, k)]),
];

/** A models folder with the ONNX face set only (links to `from`): the agent without the mini expression model. */
async function onnxOnly(from: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'footfall-onnx-only-'));
  for (const f of await readdir(from)) if (f === 'manifest.json' || f.endsWith('.onnx')) await symlink(join(from, f), join(dir, f));
  return dir;
}

/** Runs the models on every labelled face found (detections matched to labels by overlap). */
export async function measure(): Promise<{ measured: Measured[]; missing: AttributeLabel[]; shared: boolean; genderModel: GenderModel | undefined }> {
  await ensureTestModels();
  const { dir: registry } = await ensureTestPhotos();
  const shared = sharedFacesDir();
  const labels = ATTRIBUTE_LABELS.filter((l) => l.source === 'registry' || shared);
  const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 1, intraOpThreads: 1 });
  const frDir = await onnxOnly(testModelsDir());
  const fallback = await createVisionEngine({ modelsDir: frDir, workers: 0, intraOpThreads: 1 });
  const mini = await EmotionModel.load(testModelsDir());
  if (!mini) throw new Error(`The mini expression model is not in ${testModelsDir()}.`);
  const measured: Measured[] = [];
  let genderModel: GenderModel | undefined;
  const missing: AttributeLabel[] = [];
  try {
    const files = [...new Set(labels.map((l) => `${l.source}:${l.file}`))];
    for (const key of files) {
      const [source, file] = key.split(/:(.*)/) as [string, string];
      const img = await loadImage(join(source === 'registry' ? registry : shared!, file));
      const { faces } = await engine.analyze(img);
      for (const label of labels.filter((l) => `${l.source}:${l.file}` === key)) {
        const [x1, y1, x2, y2] = label.box;
        const face = faces.find((f) => iou(f.box, { x1, y1, x2, y2 }) > 0.5);
        if (!face) {
          missing.push(label);
          continue;
        }
        const a = await engine.attributes(face.context, face.regions);
        const fr = await fallback.attributes(face.context, face.regions, { ageGender: false });
        if (a.raw!.emotionModel !== 'emotion-mini' || fr.raw!.emotionModel !== 'fr-expression') throw new Error('The expression came from the wrong model.');
        genderModel = a.raw!.genderModel ?? genderModel;
        const e = face.regions.expression;
        const crops: Record<string, Record<string, number>> = {};
        for (const [name, crop] of MINI_CROPS) crops[name] = await mini.classify(img, crop(face.box, { ...e, x: e.x + face.crop.x, y: e.y + face.crop.y }));
        measured.push({
          label,
          genderScore: a.raw!.genderScore!,
          age: a.raw!.age!,
          probabilities: { 'emotion-mini': a.raw!.emotionProbabilities!, 'fr-expression': fr.raw!.emotionProbabilities! },
          crops,
          quality: face.quality,
        });
      }
    }
  } finally {
    await Promise.all([engine.close(), fallback.close(), mini.close()]);
    await rm(frDir, { recursive: true, force: true });
  }
  return { measured, missing, shared: shared !== undefined, genderModel };
}

/** Years outside the labelled range (0 inside it). */
function ageError(m: Measured): number {
  const [lo, hi] = m.label.age;
  return m.age < lo ? lo - m.age : m.age > hi ? m.age - hi : 0;
}

function topEmotion(p: Record<string, number>): [string, number] {
  return Object.entries(p).reduce((a, b) => (b[1] > a[1] ? b : a));
}

export async function run(): Promise<string> {
  const { measured, missing, shared, genderModel } = await measure();
  const modelName = genderModel === 'faceres' ? 'FaceRes' : 'SSR-Net';
  progress(`${measured.length} labelled faces measured, ${missing.length} not found`);
  const men = measured.filter((m) => m.label.gender === 'male').length;
  const lines: string[] = [
    '## Attribute accuracy (gender, age, expression)',
    '',
    `${measured.length} hand-labelled faces (agent/fixtures/attribute-labels.ts): ${measured.length - men} women, ${men} men; registry photos${shared ? ' and ../shared/faces' : ' only (../shared/faces absent: no men)'}. One photo per face (a visit takes gender and age from its best face).`,
    '',
  ];

  // Gender: a band around 0.5 where no gender is sent.
  const grows: (string | number)[][] = [];
  const used = genderRuleFor(genderModel);
  const bands: [string, GenderRule][] = [0, 0.05, 0.1, 0.15, 0.2, 0.25].map((margin) => [`${(0.5 - margin).toFixed(2)} / ${(0.5 + margin).toFixed(2)}`, genderBand(margin)]);
  bands.push([`${used.femaleAtMost ?? '-'} / ${used.maleAtLeast ?? 'never'} (used)`, used]);
  for (const [bandName, rule] of bands) {
    const decided = measured.map((m) => ({ m, g: genderFromScore(m.genderScore, rule) })).filter((x) => x.g !== undefined);
    const right = decided.filter((x) => x.g === x.m.label.gender);
    const per = (g: 'male' | 'female') => {
      const said = decided.filter((x) => x.g === g);
      return said.length ? `${pct(said.filter((x) => x.m.label.gender === g).length / said.length)} of ${said.length}` : '-';
    };
    grows.push([bandName, pct(decided.length / measured.length), pct(decided.length ? right.length / decided.length : 0), per('female'), per('male')]);
  }
  lines.push(
    `Gender (${modelName} score: 1 = male; female at or below the low bound, male at or above the high bound, nothing between):`,
    '',
    table(['female ≤ / male ≥', 'faces given a gender', 'right', '"female" right', '"male" right'], grows),
    '',
  );

  // Age: no confidence from the model; error against the labelled range, by face quality.
  const arows: (string | number)[][] = [];
  for (const [name, set] of [
    ['all', measured],
    ['women', measured.filter((m) => m.label.gender === 'female')],
    ['men', measured.filter((m) => m.label.gender === 'male')],
  ] as const) {
    if (set.length === 0) continue;
    const errs = set.map(ageError);
    arows.push([name, set.length, pct(errs.filter((e) => e === 0).length / set.length), pct(errs.filter((e) => e <= 5).length / set.length), pct(errs.filter((e) => e <= 10).length / set.length), (errs.reduce((a, b) => a + b, 0) / set.length).toFixed(1), Math.max(...errs).toFixed(0)]);
  }
  lines.push(
    `Age (${modelName} years against the labelled range; the model gives no confidence):`,
    '',
    table(['faces', 'n', 'inside the range', 'within 5 years of it', 'within 10 years', 'mean years outside', 'worst'], arows),
    '',
  );

  // Expression: top class probability as the confidence, for each model on the same faces.
  const labelled = measured.filter((m) => m.label.emotion);
  const counts = labelled.reduce<Record<string, number>>((a, m) => ((a[m.label.emotion!] = (a[m.label.emotion!] ?? 0) + 1), a), {});
  lines.push(
    `Expression (${labelled.length} faces with a plain expression: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ')}), with each model on the same faces: how often its top class is right, by class and by its probability.`,
    '',
  );
  const summary: (string | number)[][] = [];
  for (const [model, name] of EMOTION_MODELS) {
    const p = (m: Measured) => m.probabilities[model];
    const rule = emotionRuleFor(model);
    const erows: (string | number)[][] = [];
    const classes = [...new Set(labelled.map((m) => topEmotion(p(m))[0]))].sort();
    for (const cls of classes) {
      const cells: string[] = [];
      for (const t of [0, 0.5, 0.6, 0.8, 0.9, 0.95]) {
        const said = labelled.filter((m) => emotionFromProbabilities(p(m), { [cls]: t }) === cls);
        cells.push(said.length ? `${pct(said.filter((m) => m.label.emotion === cls).length / said.length)} of ${said.length}` : '-');
      }
      const used = rule[cls];
      erows.push([cls, ...cells, used === undefined ? 'never sent' : `p ≥ ${used}`]);
    }
    lines.push(`${name}${model === 'emotion-mini' ? ' (where installed)' : ' (without the mini model)'}:`, '', table(['model says', 'right at p ≥ 0', 'p ≥ 0.5', 'p ≥ 0.6', 'p ≥ 0.8', 'p ≥ 0.9', 'p ≥ 0.95', 'the agent sends it when'], erows), '');
    const sent = labelled.filter((m) => emotionFromProbabilities(p(m), rule) !== undefined);
    const sentRight = sent.filter((m) => emotionFromProbabilities(p(m), rule) === m.label.emotion);
    const before = labelled.filter((m) => topEmotion(p(m))[0] === m.label.emotion);
    const per = (cls: string) => {
      const said = sent.filter((m) => emotionFromProbabilities(p(m), rule) === cls);
      return said.length ? `${said.filter((m) => m.label.emotion === cls).length} of ${said.length}` : '-';
    };
    summary.push([name, `${sent.length} of ${labelled.length}`, pct(sent.length ? sentRight.length / sent.length : 0), per('happy'), per('neutral'), pct(before.length / labelled.length)]);
  }
  lines.push('Expression as sent, by model:', '', table(['model', 'faces given one', 'right', '"happy" right', '"neutral" right', 'top class alone right'], summary), '');
  lines.push(
    `The mini model on other crops (its top class right, of ${labelled.length}; the agent's rule as sent):`,
    '',
    table(
      ['crop', 'top class right', 'sent', 'right where sent'],
      MINI_CROPS.map(([name]) => {
        const top = labelled.filter((m) => topEmotion(m.crops[name]!)[0] === m.label.emotion).length;
        const sent = labelled.filter((m) => emotionFromProbabilities(m.crops[name]!, emotionRuleFor('emotion-mini')) !== undefined);
        const right = sent.filter((m) => emotionFromProbabilities(m.crops[name]!, emotionRuleFor('emotion-mini')) === m.label.emotion);
        return [name, `${top} (${pct(top / labelled.length)})`, sent.length, pct(sent.length ? right.length / sent.length : 0)];
      }),
    ),
    '',
    'Per face (label -> measured):',
    '',
    table(
      ['face', 'gender', 'score', 'age range', 'age', 'expression', 'top class: fr_expression', 'mini-Xception'],
      measured.map((m) => {
        const top = (model: EmotionModelId) => {
          const [e, p] = topEmotion(m.probabilities[model]);
          return `${e} ${p.toFixed(2)}`;
        };
        return [`${m.label.file} ${m.label.note}`, m.label.gender, m.genderScore.toFixed(2), `${m.label.age[0]}-${m.label.age[1]}`, m.age.toFixed(0), m.label.emotion ?? '-', top('fr-expression'), top('emotion-mini')];
      }),
    ),
    '',
  );
  if (missing.length) lines.push(`Not found by the detector: ${missing.map((l) => `${l.file} ${l.note}`).join('; ')}.`, '');
  return lines.join('\n');
}
