/**
 * The face pipeline on real photos with the real models: detection counts,
 * same person / different people at the match threshold, the quality gate,
 * attributes. Registry photos always; ../shared/faces when present.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAME_PERSON, TEST_PHOTOS, ensureTestPhotos } from '../fixtures/registry-photos.js';
import { ensureTestModels, testModelsDir } from '../models/test-cache.js';
import { DEFAULT_MATCH_THRESHOLD, cosine } from './analyzer.js';
import { ATTRIBUTE_CONFIDENCE } from './attributes.js';
import type { ObservedFace } from './analyzer.js';
import { createVisionEngine } from './engine.js';
import type { VisionEngine } from './engine.js';
import { personOf, sharedFacesDir } from './fixtures.js';
import { cropRgb } from './image.js';
import { loadImage } from './io.js';
import { qualityOf } from './quality.js';
import type { RgbImage } from './types.js';

let engine: VisionEngine;
let photosDir: string;
const photoFaces = new Map<string, ObservedFace[]>();

/** Faces of a registry photo ordered left to right. */
function leftToRight(file: string): ObservedFace[] {
  return [...photoFaces.get(file)!].sort((a, b) => a.box.x1 + a.box.x2 - (b.box.x1 + b.box.x2));
}

function facePosition(file: string, position: string): ObservedFace {
  const faces = leftToRight(file);
  const index = { left: 0, second: 1, middle: (faces.length - 1) / 2, third: 2, right: faces.length - 1 }[position];
  const face = index !== undefined && Number.isInteger(index) ? faces[index] : undefined;
  if (!face) throw new Error(`no "${position}" face in ${file}`);
  return face;
}

beforeAll(async () => {
  await ensureTestModels();
  photosDir = (await ensureTestPhotos()).dir;
  engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 0, intraOpThreads: 1 });
  for (const p of TEST_PHOTOS) photoFaces.set(p.file, (await engine.analyze(await loadImage(join(photosDir, p.file)))).faces);
});

afterAll(async () => {
  await engine?.close();
});

describe('registry photos', () => {
  it('detects exactly the faces a person counts on each group photo', () => {
    for (const p of TEST_PHOTOS) {
      const faces = photoFaces.get(p.file)!;
      expect({ file: p.file, faces: faces.length }).toEqual({ file: p.file, faces: p.faces });
      for (const f of faces) expect(f.score).toBeGreaterThan(0.9);
    }
  });

  it('scores the same woman in two photos above the threshold and different people in one photo below it', async () => {
    for (const [a, b] of SAME_PERSON) {
      const ea = await engine.embed(facePosition(a.file, a.face).aligned);
      const eb = await engine.embed(facePosition(b.file, b.face).aligned);
      expect(cosine(ea, eb)).toBeGreaterThanOrEqual(DEFAULT_MATCH_THRESHOLD);
    }
    // Faces in one photo are different people.
    let worst = -1;
    for (const p of TEST_PHOTOS) {
      const es = await Promise.all(photoFaces.get(p.file)!.map((f) => engine.embed(f.aligned)));
      for (let i = 0; i < es.length; i++) for (let j = i + 1; j < es.length; j++) worst = Math.max(worst, cosine(es[i]!, es[j]!));
    }
    expect(worst).toBeLessThan(DEFAULT_MATCH_THRESHOLD);
  });

  it('embeddings are 512-d and L2-normalised, and every registry face passes the gate', async () => {
    const e = await engine.embed(photoFaces.get('sample3.jpg')![0]!.aligned);
    expect(e).toHaveLength(512);
    expect(Math.hypot(...e)).toBeCloseTo(1, 5);
    for (const faces of photoFaces.values()) for (const f of faces) expect(f.passesGate).toBe(true);
  });

  it('scores every registry woman on the female side with FaceRes, calls most of them "female" and none "male"', async () => {
    let femaleSide = 0;
    let female = 0;
    let male = 0;
    let total = 0;
    for (const faces of photoFaces.values()) {
      for (const f of faces) {
        const a = await engine.attributes(f.context, f.regions, { expression: false });
        expect(a.raw!.genderModel).toBe('faceres');
        total++;
        if (a.raw!.genderScore! < 0.5) femaleSide++;
        if (a.gender === 'female') female++;
        if (a.gender === 'male') male++;
        if (a.gender !== undefined) expect(a.raw!.genderScore).toBeLessThanOrEqual(ATTRIBUTE_CONFIDENCE.genderFaceres.femaleAtMost!);
        expect(a.age).toBeGreaterThan(12);
        expect(a.age).toBeLessThan(60);
      }
    }
    // Measured here: all 22 below 0.29, 19 of them at or below the "female" bound 0.2 (chosen on held-out real
    // photos: npm run bench -- attributes-real, docs/recognition.md).
    expect(femaleSide).toBe(total);
    expect(female / total).toBeGreaterThanOrEqual(0.75);
    expect(male).toBe(0);
  });

  it('finds a smile on the bar photo (FER-2013 "happy")', async () => {
    const f = facePosition('sample3.jpg', 'middle');
    expect((await engine.attributes(f.context, f.regions, { ageGender: false })).emotion).toBe('happy');
  });
});

describe('scan (what the pipeline asks of every frame) and embedFace', () => {
  it('finds the same faces with the same quality as analyze, and embeds them from their crop region bit for bit', async () => {
    const photo = await loadImage(join(photosDir, 'sample3.jpg'));
    const [analysed, scanned] = [(await engine.analyze(photo)).faces, (await engine.scan(photo)).faces];
    expect(scanned.length).toBeGreaterThan(1);
    expect(scanned).toEqual(analysed.map(({ aligned: _a, context: _c, ...found }) => found));
    for (const f of analysed) {
      // The quality was computed on the sharpness window alone; the whole aligned crop gives the same value.
      expect(qualityOf(f.landmarks, f.aligned, f.score, engine.config.quality).quality).toBe(f.quality);
      expect(Array.from(await engine.embedFace(cropRgb(photo, f.crop), f.landmarks))).toEqual(Array.from(await engine.embed(f.aligned)));
    }
  });
});

describe('quality gate', () => {
  async function faceCrop(blur?: number, faceWidth?: number): Promise<RgbImage> {
    const f = facePosition('sample3.jpg', 'middle');
    const w = f.box.x2 - f.box.x1;
    const h = f.box.y2 - f.box.y1;
    // The face with half a face of margin around it (the photo has room on every side of this face).
    const left = Math.max(0, Math.round(f.box.x1 - w / 2));
    const top = Math.max(0, Math.round(f.box.y1 - h / 2));
    const width = Math.round(2 * w);
    let s = sharp(join(photosDir, 'sample3.jpg')).extract({ left, top, width, height: Math.round(2 * h) });
    if (faceWidth) s = sharp(await s.toBuffer()).resize(Math.round((width * faceWidth) / w));
    if (blur) s = sharp(await s.toBuffer()).blur(blur);
    const { data, info } = await s.removeAlpha().raw().toBuffer({ resolveWithObject: true });
    return { width: info.width, height: info.height, data: new Uint8Array(data) };
  }

  it('passes the sharp face it is cut from (control)', async () => {
    const { faces } = await engine.analyze(await faceCrop());
    expect(faces).toHaveLength(1);
    expect(faces[0]!.passesGate).toBe(true);
    expect(faces[0]!.quality).toBeGreaterThan(0.8);
  });

  it('rejects a tiny face (face ~20 px wide)', async () => {
    const { faces } = await engine.analyze(await faceCrop(undefined, 20));
    expect(faces.length).toBeGreaterThan(0);
    expect(faces[0]!.qualityParts.eyeDistance).toBeLessThan(10);
    expect(faces[0]!.passesGate).toBe(false);
  });

  it('rejects a blurred face', async () => {
    const { faces } = await engine.analyze(await faceCrop(5));
    expect(faces.length).toBeGreaterThan(0);
    expect(faces[0]!.qualityParts.laplacianVariance).toBeLessThan(15);
    expect(faces[0]!.passesGate).toBe(false);
  });
});

const shared = sharedFacesDir();
if (!shared) console.log('recognition.test: ../shared/faces is absent; its same-person / different-people checks are skipped');

describe.skipIf(!shared)('../shared/faces', () => {
  it('scores every same-person pair above the threshold and every pair of different people below it', async () => {
    const files = readdirSync(shared!).filter((f) => /\.(jpe?g|png)$/i.test(f) && !f.startsWith('group-'));
    const rows: { file: string; person: string; e: Float32Array }[] = [];
    for (const file of files) {
      const { faces } = await engine.analyze(await loadImage(join(shared!, file)));
      expect(faces.length, file).toBeGreaterThan(0);
      rows.push({ file, person: personOf(file), e: await engine.embed(faces[0]!.aligned) });
    }
    const same: string[] = [];
    const different: string[] = [];
    let sameCount = 0;
    for (let i = 0; i < rows.length; i++) {
      for (let j = i + 1; j < rows.length; j++) {
        const a = rows[i]!;
        const b = rows[j]!;
        const c = cosine(a.e, b.e);
        if (a.person === b.person) {
          sameCount++;
          if (c < DEFAULT_MATCH_THRESHOLD) same.push(`${a.file} ~ ${b.file}: ${c.toFixed(3)}`);
        } else if (c >= DEFAULT_MATCH_THRESHOLD) different.push(`${a.file} ~ ${b.file}: ${c.toFixed(3)}`);
      }
    }
    expect(sameCount).toBeGreaterThan(10);
    expect(same, 'same person below the threshold').toEqual([]);
    expect(different, 'different people above the threshold').toEqual([]);
  });

  it('scores the men on the male side and calls most of them "male", and the well-known woman "female"', async () => {
    let male = 0;
    for (const file of ['obama-1.jpg', 'biden-1.jpg', 'kit-harington-1.jpg', 'alex-lacamoire-1.jpg']) {
      const { faces } = await engine.analyze(await loadImage(join(shared!, file)));
      const a = await engine.attributes(faces[0]!.context, faces[0]!.regions, { expression: false });
      expect({ file, maleSide: a.raw!.genderScore! > 0.5, female: a.gender === 'female' }).toEqual({ file, maleSide: true, female: false });
      if (a.gender === 'male') male++;
    }
    // Measured: 0.92-0.99; obama-1 (0.919) is just under the "male" bound 0.93 and gets none.
    expect(male).toBeGreaterThanOrEqual(3);
    for (const file of ['rose-leslie-1.jpg', 'rose-leslie-2.jpg']) {
      const { faces } = await engine.analyze(await loadImage(join(shared!, file)));
      const a = await engine.attributes(faces[0]!.context, faces[0]!.regions, { expression: false });
      expect({ file, gender: a.gender }).toEqual({ file, gender: 'female' });
    }
  });

  it('finds both faces of a group photo and matches them to their single photos', async () => {
    const { faces } = await engine.analyze(await loadImage(join(shared!, 'group-obama-and-biden.jpg')));
    const es = await Promise.all(faces.map((f) => engine.embed(f.aligned)));
    for (const file of ['obama-1.jpg', 'biden-1.jpg']) {
      const ref = await engine.embed((await engine.analyze(await loadImage(join(shared!, file)))).faces[0]!.aligned);
      const best = Math.max(...es.map((e) => cosine(e, ref)));
      expect({ file, match: best >= DEFAULT_MATCH_THRESHOLD }).toEqual({ file, match: true });
    }
  });
});
