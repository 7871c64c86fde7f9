/**
 * The person detector on real pictures: the registry group photos (people counted by eye, agent/fixtures/
 * registry-photos.ts) and pictures with nobody in them; and its model files checked as they are loaded.
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../capture/ppm.js';
import { ensureTestPhotos, TEST_PHOTOS } from '../fixtures/registry-photos.js';
import { DEFAULT_BODY_MODEL_SET, bodyModelSpec } from '../models/catalogue.js';
import { BODY_MANIFEST_FILE } from '../models/fetch-bodies.js';
import { ensureTestBodyModels, testModelsDir } from '../models/test-cache.js';
import { BODY_DEFAULTS, loadBodyDetector } from './detector.js';
import { testBodyDetector } from './test-detector.js';
import type { BodyDetector } from './types.js';

const SETUP_TIMEOUT = 300_000;
let detector: BodyDetector;
let photos: string[];
const temps: string[] = [];

beforeAll(async () => {
  [detector, { files: photos }] = await Promise.all([testBodyDetector(), ensureTestPhotos()]);
}, SETUP_TIMEOUT);

afterAll(async () => {
  await detector?.close();
  await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
});

async function picture(file: string, width: number): Promise<RawImage> {
  const { data, info } = await sharp(file).resize(width).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data };
}

/** A picture with nobody in it: `kind` noise (random pixels, fixed seed) or flat grey. */
function empty(kind: 'noise' | 'grey', width = 640, height = 360): RawImage {
  const data = Buffer.alloc(width * height * 3, 128);
  if (kind === 'noise') {
    let s = 12345;
    for (let i = 0; i < data.length; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      data[i] = s >>> 24;
    }
  }
  return { width, height, data };
}

/** Each registry photo, at 640 px and full size: about the right number of people, sane boxes, best first. */
async function expectPhotoCounts(d: BodyDetector, minScore: number): Promise<void> {
    let total = 0;
    let found = 0;
    for (const [i, p] of TEST_PHOTOS.entries()) {
      for (const width of [640, p.width]) {
        const boxes = await d.detect(await picture(photos[i]!, width));
        expect(Math.abs(boxes.length - p.faces), `${p.file} at ${width} px: ${boxes.length} people, truth ${p.faces}`).toBeLessThanOrEqual(1);
        total += p.faces;
        found += boxes.length;
        for (const b of boxes) {
          expect(b.x).toBeGreaterThanOrEqual(0);
          expect(b.y).toBeGreaterThanOrEqual(0);
          expect(b.x + b.w).toBeLessThanOrEqual(1);
          expect(b.y + b.h).toBeLessThanOrEqual(1);
          // A person in a group photo is a tall box, not a sliver.
          expect(b.w).toBeGreaterThan(0.05);
          expect(b.h).toBeGreaterThan(0.3);
          expect(b.score).toBeGreaterThanOrEqual(minScore);
          expect(b.score).toBeLessThanOrEqual(1);
        }
        // Best first, and no two boxes are the same person twice (NMS).
        expect(boxes.map((b) => b.score)).toEqual([...boxes.map((b) => b.score)].sort((a, b) => b - a));
      }
    }
    // 22 people in the six photos, twice: all but a few found.
    expect(found).toBeGreaterThanOrEqual(total - 3);
    expect(found).toBeLessThanOrEqual(total);
}

describe('the default person detector (MoveNet MultiPose: backbone on onnxruntime, the rest on TF.js WebAssembly)', () => {
  it('names its model', () => {
    expect(detector.name).toMatch(/^movenet-multipose \(@vladmandic\/human-models@3\.0\.4, onnxruntime \+ tfjs-wasm\)$/);
  });

  it('finds the same people, to the fourth decimal, as the whole graph on TF.js, in photos and in door bands of every shape', async () => {
    const whole = await testBodyDetector({ engine: 'tfjs' });
    try {
      expect(whole.name).toMatch(/, tfjs-wasm\)$/);
      const banded = await testBodyDetector({ fit: 'shape' });
      const wholeBanded = await testBodyDetector({ fit: 'shape', engine: 'tfjs' });
      try {
        let people = 0;
        // Every other photo: half the run's time for the same kinds of picture (groups, a crowd, one person).
        for (const [i, p] of [...TEST_PHOTOS.entries()].filter(([k]) => k % 2 === 1)) {
          const full = await picture(photos[i]!, 640);
          // A wide band and a tall one, as door counting crops around its line (the `shape` fit keeps their shape).
          const wide = { width: 640, height: 200, data: full.data.subarray(0, 640 * 200 * 3) };
          const tall = await picture(photos[i]!, 300);
          for (const [d, ref, image] of [[detector, whole, full], [banded, wholeBanded, wide], [banded, wholeBanded, tall]] as const) {
            const [got, want] = [await d.detect(image), await ref.detect(image)];
            expect(got.length, `${p.file} ${image.width}x${image.height}`).toBe(want.length);
            got.forEach((b, k) => {
              for (const key of ['x', 'y', 'w', 'h', 'score'] as const) expect(b[key]).toBeCloseTo(want[k]![key], 4);
            });
            people += got.length;
          }
        }
        expect(people).toBeGreaterThan(20);
      } finally {
        await Promise.all([banded.close(), wholeBanded.close()]);
      }
    } finally {
      await whole.close();
    }
  });

  it('finds about the right number of people in each registry group photo, at 640 px and at full size', async () => {
    await expectPhotoCounts(detector, BODY_DEFAULTS['movenet-multipose'].minScore);
  });

  it('places each person where they are: the three women of sample3 side by side, left to right', async () => {
    const boxes = await detector.detect(await picture(photos[2]!, 640));
    expect(boxes).toHaveLength(3);
    const centres = boxes.map((b) => b.x + b.w / 2).sort((a, b) => a - b);
    expect(centres[0]).toBeLessThan(0.4);
    expect(centres[1]).toBeGreaterThan(0.3);
    expect(centres[1]).toBeLessThan(0.7);
    expect(centres[2]).toBeGreaterThan(0.6);
  });

  it('finds nobody in noise, in a flat grey picture or in a tiny one', async () => {
    expect(await detector.detect(empty('noise'))).toEqual([]);
    expect(await detector.detect(empty('grey'))).toEqual([]);
    expect(await detector.detect(empty('noise', 8, 4))).toEqual([]);
  });

  it('keeps no tensors from one call to the next (memory stays bounded)', async () => {
    const { tf } = await import('./tfjs.js');
    const image = await picture(photos[5]!, 640);
    await detector.detect(image);
    const before = tf.memory().numTensors;
    for (let i = 0; i < 3; i++) await detector.detect(image);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('refuses a buffer too short for its size', async () => {
    await expect(detector.detect({ width: 640, height: 360, data: Buffer.alloc(100) })).rejects.toThrow(/Not an RGB24 picture/);
  });
});

describe('the other candidates, by name', () => {
  // CenterNet's scores sit lower on these photos than on the door scenes its default (0.35) was chosen on: at 0.35
  // it finds two of the four women of sample4; at 0.25 every photo is within one.
  it('CenterNet at score 0.25 finds about the right number of people in each registry group photo, and nobody in noise', async () => {
    const centernet = await testBodyDetector({ model: 'centernet', minScore: 0.25 });
    try {
      expect(centernet.name).toMatch(/^centernet \(/);
      await expectPhotoCounts(centernet, 0.25);
      expect(await centernet.detect(empty('noise'))).toEqual([]);
    } finally {
      await centernet.close();
    }
  }, SETUP_TIMEOUT);
});

describe('MoveNet at another input size', () => {
  it('runs at 320x320 (named so), finding the people of sample6 within one, and refuses a size that is not a multiple of 32', async () => {
    const big = await testBodyDetector({ inputSize: 320 });
    try {
      expect(big.name).toMatch(/^movenet-multipose@320 \(/);
      const found = await big.detect(await picture(photos[5]!, 640));
      expect(Math.abs(found.length - TEST_PHOTOS[5]!.faces)).toBeLessThanOrEqual(1);
    } finally {
      await big.close();
    }
    await expect(testBodyDetector({ inputSize: 300 })).rejects.toThrow(/input size 300 is not a multiple of 32/);
    await expect(testBodyDetector({ model: 'centernet', inputSize: 320 })).rejects.toThrow(/"centernet" has a fixed input size/);
  });
});

describe('loading the detector', () => {
  it('says to run `footfall models fetch` when the folder has no body models', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'footfall-bodies-'));
    temps.push(dir);
    await expect(loadBodyDetector(dir)).rejects.toThrow(new RegExp(`No person detector model installed in .*${BODY_MANIFEST_FILE} is missing.*footfall models fetch --dir`));
  });

  it('refuses a damaged weights file, naming it, and loads once the pinned file is back', async () => {
    await ensureTestBodyModels();
    const dir = await mkdtemp(join(tmpdir(), 'footfall-bodies-'));
    temps.push(dir);
    const m = bodyModelSpec(DEFAULT_BODY_MODEL_SET, DEFAULT_BODY_MODEL_SET.defaultModel);
    for (const f of [BODY_MANIFEST_FILE, m.graph.file, m.weights.file]) await copyFile(join(testModelsDir(), f), join(dir, f));
    await writeFile(join(dir, m.weights.file), Buffer.alloc(1000));
    await expect(loadBodyDetector(dir)).rejects.toThrow(new RegExp(`${m.weights.file} has sha256 .* not the pinned`));
    await copyFile(join(testModelsDir(), m.weights.file), join(dir, m.weights.file));
    const d = await loadBodyDetector(dir);
    expect(await d.detect(empty('grey'))).toEqual([]);
    await d.close();
    await expect(d.detect(empty('grey'))).rejects.toThrow(/closed/);
  });

  it('says which model is missing when asked for one the folder does not have', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'footfall-bodies-'));
    temps.push(dir);
    await copyFile(join(testModelsDir(), BODY_MANIFEST_FILE), join(dir, BODY_MANIFEST_FILE));
    await expect(loadBodyDetector(dir, { model: 'centernet' })).rejects.toThrow(/centernet\.json is missing/);
  });
});
