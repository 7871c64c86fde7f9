/**
 * Gender and age on held-out real photos (`npm run bench -- attributes-real`): the shop PC's attribute models, as
 * the agent runs them (detector, the largest face, SSR-Net on its 1.4x box), on a labelled set of real photos that
 * none of the models or thresholds was tuned on: the 540 FairFace photos of thlaiquid-ai/demographic-test-images
 * (FairFace, Kärkkäinen & Joo, WACV 2021; CC BY 4.0; 448x448 JPEG, 30 per gender and age group 0-2 .. 70+, many
 * ethnicities, in-the-wild light and pose; labels: FairFace's own annotators' gender and age group). The photos are
 * not in the repo (25 MB): fetch that GitHub repository and point BENCH_FAIRFACE_DIR at its `fairface/` folder
 * (the one holding ground_truth.json); without it the benchmark says so and leaves its section as it was.
 *
 * The odd-numbered photos are the tuning half (the agent's gender rule, ATTRIBUTE_CONFIDENCE, was chosen on them);
 * the even-numbered ones are held out, and the rule is reported on them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { genderBand, genderFromScore, genderRuleFor, type GenderRule } from '../agent/vision/attributes.js';
import { createVisionEngine } from '../agent/vision/engine.js';
import { loadImage } from '../agent/vision/io.js';
import type { GenderModel } from '../agent/vision/types.js';
import { AGE_GROUPS, genderAuc, type Truth } from './fairface.js';
import { pct, progress, table } from './util.js';


interface Measured {
  truth: Truth;
  half: 'tuning' | 'held out';
  genderScore: number;
  age: number;
}

/** The gender score a face is ranked by (1 = male). */
const score = (m: Measured): number => m.genderScore;


function ageError(m: Measured): number {
  const [lo, hi] = AGE_GROUPS[m.truth.age] ?? [0, 130];
  return m.age < lo ? lo - m.age : m.age > hi ? m.age - hi : 0;
}

/**
 * The rule sending the most tuning faces with >= 99 % right there (a margin over the 97 % goal: a rule fitted to
 * exactly 97 % on ~130 faces fell to 91-94 % on the held-out half); the female bound on a 0.05 grid, the male one on
 * a 0.01 grid (men's scores crowd just below 1), so that no bound sits on a single face.
 */
function chooseRule(tuning: Measured[]): GenderRule {
  let best: { sent: number; rule: GenderRule } | undefined;
  for (let f = 0; f <= 9; f++) {
    for (let m = 51; m <= 100; m++) {
      const rule = { femaleAtMost: Math.round(f * 5) / 100, maleAtLeast: m / 100 };
      const said = tuning.map((x) => ({ x, g: genderFromScore(x.genderScore, rule) })).filter((y) => y.g !== undefined);
      const right = said.filter((y) => (y.g === 'male') === (y.x.truth.gender === 'Male')).length;
      if (said.length > 0 && right / said.length >= 0.99 && (!best || said.length > best.sent)) best = { sent: said.length, rule };
    }
  }
  return best?.rule ?? { femaleAtMost: -1 };
}

function rows(set: Measured[], rules: [string, GenderRule][]): (string | number)[][] {
  return rules.map(([name, rule]) => {
    const said = set.map((m) => ({ m, g: genderFromScore(m.genderScore, rule) })).filter((x) => x.g !== undefined);
    const right = said.filter((x) => (x.g === 'male') === (x.m.truth.gender === 'Male'));
    const per = (g: 'male' | 'female') => {
      const s = said.filter((x) => x.g === g);
      return s.length ? `${pct(s.filter((x) => (g === 'male') === (x.m.truth.gender === 'Male')).length / s.length)} of ${s.length}` : '-';
    };
    return [name, `${pct(said.length / set.length)} (${said.length} of ${set.length})`, said.length ? pct(right.length / said.length) : '-', per('female'), per('male')];
  });
}


export async function run(): Promise<string | undefined> {
  const dir = process.env.BENCH_FAIRFACE_DIR;
  if (!dir || !fs.existsSync(path.join(dir, 'ground_truth.json'))) {
    progress('BENCH_FAIRFACE_DIR is not set to a folder with ground_truth.json (the fairface/ folder of github.com/thlaiquid-ai/demographic-test-images): skipped');
    return undefined;
  }
  await ensureTestModels();
  const truths = JSON.parse(fs.readFileSync(path.join(dir, 'ground_truth.json'), 'utf8')) as Truth[];
  const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 1, intraOpThreads: 1 });
  const measured: Measured[] = [];
  let missed = 0;
  let model: GenderModel | undefined;
  try {
    for (const truth of truths) {
      const img = await loadImage(path.join(dir, truth.filename));
      const { faces } = await engine.analyze(img);
      const face = faces[0];
      if (!face) {
        missed++;
        continue;
      }
      const a = await engine.attributes(face.context, face.regions, { expression: false });
      const n = Number(/(\d+)/.exec(truth.filename)?.[1] ?? 0);
      measured.push({ truth, half: n % 2 === 1 ? 'tuning' : 'held out', genderScore: a.raw!.genderScore!, age: a.raw!.age! });
      model = a.raw!.genderModel ?? model;
    }
  } finally {
    await engine.close();
  }
  progress(`${measured.length} faces measured, ${missed} photos without a face found, gender from ${model ?? '?'}`);
  if (process.env.BENCH_DUMP) fs.writeFileSync(process.env.BENCH_DUMP, JSON.stringify(measured));
  const tuning = measured.filter((m) => m.half === 'tuning');
  const held = measured.filter((m) => m.half === 'held out');
  const adults = (s: Measured[]) => s.filter((m) => (AGE_GROUPS[m.truth.age]?.[0] ?? 0) >= 20);
  const used = genderRuleFor(model);
  const name = (r: GenderRule) => `female ≤ ${r.femaleAtMost ?? '-'} / male ${r.maleAtLeast === undefined ? 'never' : `≥ ${r.maleAtLeast}`}`;
  const chosen = chooseRule(tuning);
  const rules: [string, GenderRule][] = [
    ['0.5 cut', genderBand(0)],
    ['female ≤ 0.40 / male ≥ 0.60 (the old rule)', genderBand(0.1)],
    ['female ≤ 0.20 / male ≥ 0.80', genderBand(0.3)],
    ['female ≤ 0.10 / male ≥ 0.95', { femaleAtMost: 0.1, maleAtLeast: 0.95 }],
    ['female ≤ 0.05 / male ≥ 1.00', { femaleAtMost: 0.05, maleAtLeast: 1.0 }],
    [`${name(chosen)} (chosen on the tuning half: most faces sent with ≥ 99 % right there)`, chosen],
    [`${name(used)} (used for ${model ?? '?'})`, used],
  ];
  const head = ['rule', 'faces given a gender', 'right where sent', '"female" right', '"male" right'];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const arows = (['0-2', '3-9', '10-19', '20-29', '30-39', '40-49', '50-59', '60-69', '70+'] as const).map((g) => {
    const s = held.filter((m) => m.truth.age === g);
    const e = s.map(ageError);
    return [g, s.length, pct(e.filter((x) => x === 0).length / s.length), pct(e.filter((x) => x <= 10).length / s.length), median(s.map((m) => m.age)).toFixed(0)];
  });
  const allErr = held.map(ageError);
  return [
    '## Gender and age on held-out real photos (FairFace)',
    '',
    `${measured.length} faces found in ${truths.length} FairFace photos (thlaiquid-ai/demographic-test-images, CC BY 4.0: 30 per gender and age group, many ethnicities; labels FairFace's annotators'), ` +
      `the largest face of each, through the agent's own models and crops. Tuning half: the ${tuning.length} odd-numbered photos; held out: the ${held.length} even-numbered ones. ` +
      `Gender score AUC (men above women): ${genderAuc(tuning, score).toFixed(2)} tuning, ${genderAuc(held, score).toFixed(2)} held out, ${genderAuc(adults(held), score).toFixed(2)} held-out adults (20+). ` +
      `Median score: women ${median(measured.filter((m) => m.truth.gender === 'Female').map((m) => m.genderScore)).toFixed(2)}, men ${median(measured.filter((m) => m.truth.gender === 'Male').map((m) => m.genderScore)).toFixed(2)} (1 = male).`,
    '',
    'Gender, tuning half:',
    '',
    table(head, rows(tuning, rules)),
    '',
    'Gender, held out (the figure that counts):',
    '',
    table(head, rows(held, rules)),
    '',
    'Gender, held out, adults (20+) only:',
    '',
    table(head, rows(adults(held), rules)),
    '',
    `Age, held out (${model === 'faceres' ? 'FaceRes' : 'SSR-Net'} years against the labelled group; all ages: ${pct(allErr.filter((x) => x === 0).length / held.length)} inside the group, ${pct(allErr.filter((x) => x <= 10).length / held.length)} within 10 years of it):`,
    '',
    table(['labelled group', 'n', 'inside the group', 'within 10 years of it', 'median estimate'], arows),
  ].join('\n');
}
