/**
 * The gallery's prefilter on real faces (`npm run bench -- prefilter-real`): how close, in Hamming distance of the
 * sign codes (server/identity/signcode.ts), a person's other photo is against real other people, on 512 bits (the
 * whole code: the `candidates` cut-off) and on the first 256 (the first pass's cut-off, server/identity/gallery.ts).
 *
 * The impostors are real: the adults of FairFace (Kärkkäinen & Joo, CC BY 4.0) as packaged in the `fairface/` folder
 * of github.com/thlaiquid-ai/demographic-test-images (BENCH_FAIRFACE_DIR, required). Same-person pairs come from the
 * `tests/unit/dataset` folder of github.com/serengil/deepface (MIT; its master.csv "Yes" rows; BENCH_DEEPFACE_DIR)
 * and, when present, ../shared/faces (photos of one person; the stage clip's faces that score >= 0.40 against the
 * stage person's photo). Nothing is copied into the repository.
 *
 * For a pair (probe p, same person t) the probe's distances to the real impostors give a mean and a spread; the
 * pair's z = (mean - d(p, t)) / spread, and the expected rank of t in a gallery of N other people is N x the normal
 * tail beyond z (the nearest real impostor is printed too: with ~350 of them, the tail itself is not observed).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { createVisionEngine } from '../agent/vision/engine.js';
import { loadImage } from '../agent/vision/io.js';
import { CODE_BYTES, SignCoder } from '../server/identity/signcode.js';
import { hamming } from '../server/identity/erasure.js';
import { dot, unitCopy } from '../server/identity/vector.js';
import { AGE_GROUPS, type Truth } from './fairface.js';
import { progress, table } from './util.js';

interface Face {
  unit: Float32Array;
  code: Uint8Array;
}
interface Pair {
  source: string;
  name: string;
  probe: Face;
  target: Face;
}

const coder = new SignCoder();
/** Hamming distance of the first `bytes` bytes of two codes. */
const distance = (a: Uint8Array, b: Uint8Array, bytes: number): number => hamming(a.subarray(0, bytes), b.subarray(0, bytes));
/** The upper tail of the standard normal beyond z (Abramowitz & Stegun 26.2.17, |error| < 7.5e-8). */
const tail = (z: number): number => {
  const t = 1 / (1 + 0.2316419 * Math.abs(z));
  const p = 0.3989423 * Math.exp((-z * z) / 2) * t * (0.3193815 + t * (-0.3565638 + t * (1.781478 + t * (-1.821256 + t * 1.330274))));
  return z > 0 ? p : 1 - p;
};

export async function run(): Promise<string | undefined> {
  const fairDir = process.env.BENCH_FAIRFACE_DIR;
  if (!fairDir || !fs.existsSync(path.join(fairDir, 'ground_truth.json'))) {
    progress('BENCH_FAIRFACE_DIR is not set to a folder with ground_truth.json (the fairface/ folder of github.com/thlaiquid-ai/demographic-test-images): skipped');
    return undefined;
  }
  await ensureTestModels();
  const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 1, intraOpThreads: 1 });
  /** Every face of an image, largest first, as unit embeddings with their codes. */
  const facesOf = async (file: string): Promise<Face[]> => {
    const { faces } = await engine.analyze(await loadImage(file));
    const out: Face[] = [];
    for (const f of faces) {
      const unit = unitCopy(await engine.embed(f.aligned));
      const code = new Uint8Array(CODE_BYTES);
      coder.encode(unit, 0, code, 0);
      out.push({ unit, code });
    }
    return out;
  };
  const impostors: Face[] = [];
  const pairs: Pair[] = [];
  try {
    const truths = JSON.parse(fs.readFileSync(path.join(fairDir, 'ground_truth.json'), 'utf8')) as Truth[];
    for (const t of truths) {
      if ((AGE_GROUPS[t.age]?.[0] ?? 0) < 20) continue;
      const f = (await facesOf(path.join(fairDir, t.filename)))[0];
      if (f) impostors.push(f);
    }
    const deepDir = process.env.BENCH_DEEPFACE_DIR;
    if (deepDir && fs.existsSync(path.join(deepDir, 'master.csv'))) {
      const cache = new Map<string, Face | undefined>();
      const face = async (name: string) => {
        if (!cache.has(name)) cache.set(name, (await facesOf(path.join(deepDir, name)))[0]);
        return cache.get(name);
      };
      for (const line of fs.readFileSync(path.join(deepDir, 'master.csv'), 'utf8').split(/\r?\n/).slice(1)) {
        const [x, y, decision] = line.split(',');
        if (decision !== 'Yes' || !x || !y) continue;
        const [a, b] = [await face(x), await face(y)];
        if (a && b) pairs.push({ source: 'deepface test set', name: `${x} / ${y}`, probe: a, target: b });
      }
    } else progress('BENCH_DEEPFACE_DIR is not set to the tests/unit/dataset folder of github.com/serengil/deepface: its pairs are left out');
    const shared = path.resolve('../shared/faces');
    if (process.env.FOOTFALL_SHARED_FACES !== 'off' && fs.existsSync(shared)) {
      const photos: { who: string; name: string; face: Face }[] = [];
      for (const name of fs.readdirSync(shared).filter((n) => /\.(jpg|png)$/.test(n) && !n.startsWith('group-')).sort()) {
        const f = (await facesOf(path.join(shared, name)))[0];
        if (f) photos.push({ who: name.replace(/-(\d+|240p|partial)\.(jpg|png)$/, ''), name, face: f });
      }
      for (let i = 0; i < photos.length; i++) {
        for (let j = i + 1; j < photos.length; j++) {
          if (photos[i]!.who === photos[j]!.who) pairs.push({ source: '../shared photos', name: `${photos[i]!.name} / ${photos[j]!.name}`, probe: photos[i]!.face, target: photos[j]!.face });
        }
      }
      const stage = photos.find((p) => p.who === 'lin-manuel-miranda');
      const clip = path.join(shared, 'short-hamilton-clip.mp4');
      if (stage && fs.existsSync(clip)) {
        const frames = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-prefilter-'));
        try {
          const r = spawnSync('ffmpeg', ['-loglevel', 'error', '-i', clip, '-vf', 'fps=3', path.join(frames, 'f%03d.png')]);
          if (r.status !== 0) progress('ffmpeg could not read the stage clip: its frames are left out');
          for (const name of fs.readdirSync(frames).sort()) {
            for (const f of await facesOf(path.join(frames, name))) {
              if (dot(f.unit, stage.face.unit) >= 0.4) pairs.push({ source: '../shared stage clip', name: `frame ${name} / ${stage.name}`, probe: f, target: stage.face });
            }
          }
        } finally {
          fs.rmSync(frames, { recursive: true, force: true });
        }
      }
    } else progress('../shared/faces is absent (or FOOTFALL_SHARED_FACES=off): its pairs are left out');
  } finally {
    await engine.close();
  }
  if (pairs.length === 0) {
    progress('no same-person pairs: set BENCH_DEEPFACE_DIR or put ../shared/faces beside the repository');
    return undefined;
  }
  progress(`${impostors.length} real impostors (FairFace adults), ${pairs.length} same-person pairs`);

  const measure = (p: Pair, bytes: number) => {
    const d = distance(p.probe.code, p.target.code, bytes);
    const ds = impostors.map((f) => distance(p.probe.code, f.code, bytes));
    const mean = ds.reduce((a, b) => a + b, 0) / ds.length;
    const sd = Math.sqrt(ds.reduce((a, b) => a + (b - mean) ** 2, 0) / ds.length);
    return { d, mean, sd, z: (mean - d) / sd, nearest: Math.min(...ds), asClose: ds.filter((x) => x <= d).length };
  };
  const rows = pairs.map((p) => ({ p, cos: dot(p.probe.unit, p.target.unit), full: measure(p, CODE_BYTES), half: measure(p, CODE_BYTES / 2) })).sort((a, b) => a.cos - b.cos);
  const rank = (z: number, n: number) => (n * tail(z)).toFixed(z > 6 ? 0 : 2);
  const worst = (k: 'full' | 'half') => rows.reduce((w, r) => (r[k].z < w[k].z ? r : w));
  const summary = (['full', 'half'] as const).map((k) => {
    const w = worst(k);
    const bits = k === 'full' ? 512 : 256;
    return [
      `${bits} bits`,
      `${w[k].z.toFixed(2)} (${w.p.source}, cosine ${w.cos.toFixed(3)})`,
      rank(w[k].z, 20_000),
      rank(w[k].z, 100_000),
      String(rows.filter((r) => r[k].asClose > 0).length),
      k === 'full' ? 'the 50 candidates' : 'the first pass keeps 1,000 of 20,000 (5,000 of 100,000)',
    ];
  });
  const hardest = rows.filter((r) => r.cos < 0.6);
  return [
    '## Gallery prefilter on real faces',
    '',
    `Impostors: ${impostors.length} real adults (FairFace, CC BY 4.0). Same-person pairs: ${pairs.length} (${[...new Set(pairs.map((p) => p.source))].join(', ')}), cosine ${rows[0]!.cos.toFixed(3)} .. ${rows.at(-1)!.cos.toFixed(3)}.`,
    'z: how many of the probe\'s impostor spreads its same-person photo lies closer than the impostors\' mean; expected rank: N x the normal tail beyond z.',
    '',
    table(['code', 'worst z (pair)', 'expected rank at 20,000', 'at 100,000', 'pairs with a real impostor as close', 'against'], summary),
    '',
    'The pairs under cosine 0.6 (the hardest):',
    '',
    table(
      ['source', 'pair', 'cosine', '512 bits: distance / nearest impostor / z', '256 bits: distance / nearest impostor / z'],
      hardest.map((r) => [r.p.source, r.p.name, r.cos.toFixed(3), `${r.full.d} / ${r.full.nearest} / ${r.full.z.toFixed(2)}`, `${r.half.d} / ${r.half.nearest} / ${r.half.z.toFixed(2)}`]),
    ),
    '',
  ].join('\n');
}
