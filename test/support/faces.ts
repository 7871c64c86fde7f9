import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { InlineEngine } from '../../agent/vision/engine.js';
import { encodeJpeg, loadImage } from '../../agent/vision/io.js';
import { SAME_PERSON, ensureTestPhotos } from '../../agent/fixtures/registry-photos.js';
import { ensureTestModels, testModelsDir } from '../../agent/models/test-cache.js';
import { encodeEmbedding, type VisitMessage } from '../../shared/messages.js';

/**
 * Real faces for head-office tests: embeddings computed from the registry test photos with the agent's own vision
 * code (agent/vision: detection, landmarks, alignment, fr_feature), so that match thresholds mean what they mean in
 * production. Computed once per test process (about 2 s).
 */
export interface RealFace {
  /** `<photo>#<position>`, positions left to right. */
  name: string;
  embedding: Float32Array;
  quality: number;
  passedGate: boolean;
  /** The face crop as the shop PC uploads it (POST /api/agent/faces). */
  jpeg: Buffer;
}

export interface RealFaces {
  /** The manifest's model set: the visit's recognition_model. */
  model: string;
  /** The same person in two photos (SAME_PERSON: sample1 right, sample3 middle). */
  same: [RealFace, RealFace];
  /** Different people: each below 0.2 cosine to the pair and to each other. */
  others: RealFace[];
  all: RealFace[];
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    s += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return s / Math.sqrt(na * nb);
}

const POSITIONS: Record<number, string[]> = { 3: ['left', 'middle', 'right'] };

let pending: Promise<RealFaces> | undefined;

export function realFaces(): Promise<RealFaces> {
  pending ??= compute().catch((err: unknown) => {
    pending = undefined;
    throw err;
  });
  return pending;
}

async function compute(): Promise<RealFaces> {
  await ensureTestModels();
  const { dir } = await ensureTestPhotos();
  const engine = await InlineEngine.create({ modelsDir: testModelsDir() });
  try {
    const all: RealFace[] = [];
    for (const file of ['sample1.jpg', 'sample3.jpg', 'sample5.jpg', 'sample6.jpg']) {
      const img = await loadImage(join(dir, file));
      const faces = [...(await engine.analyze(img)).faces].sort((a, b) => a.box.x1 - b.box.x1);
      for (let i = 0; i < faces.length; i++) {
        const f = faces[i]!;
        all.push({
          name: `${file}#${i}`,
          embedding: await engine.embed(f.aligned),
          quality: Math.round(f.quality * 1000) / 1000,
          passedGate: f.passesGate,
          jpeg: await encodeJpeg(f.context, f.regions.image),
        });
      }
    }
    const pick = (p: { file: string; face: string }) => {
      const n = all.filter((f) => f.name.startsWith(`${p.file}#`)).length;
      const index = (POSITIONS[n] ?? []).indexOf(p.face);
      const face = all.find((f) => f.name === `${p.file}#${index}`);
      if (!face) throw new Error(`test face ${p.file} ${p.face} not found`);
      return face;
    };
    const [a, b] = SAME_PERSON[0]!;
    const same: [RealFace, RealFace] = [pick(a), pick(b)];
    const others: RealFace[] = [];
    for (const f of all) {
      if (same.includes(f) || !f.passedGate) continue;
      if ([...same, ...others].every((g) => cosine(f.embedding, g.embedding) < 0.2)) others.push(f);
    }
    if (others.length < 4) throw new Error(`only ${others.length} clearly different test faces`);
    return { model: engine.modelSet, same, others, all };
  } finally {
    await engine.close();
  }
}

/** A visit message for a face (or footfall without one), as a shop PC publishes it. */
export function visitOf(faces: Pick<RealFaces, 'model'>, face: RealFace | undefined, over: Partial<VisitMessage> = {}): VisitMessage {
  // The track's pass is at occurred_at (given or now): a visit is a stay from the pass's first to its last sighting.
  const now = over.occurred_at ?? new Date().toISOString();
  return {
    visit_id: randomUUID(),
    occurred_at: now,
    camera_id: 'entrance',
    ...(face
      ? { embedding: encodeEmbedding(face.embedding), recognition_model: faces.model, quality: face.quality, passed_gate: face.passedGate }
      : { quality: 0.2, passed_gate: false }),
    attributes: { gender: 'female', age: 30, emotion: 'happy' },
    track: { id: `t-${Math.floor(Math.random() * 1e6)}`, first_seen_at: now, last_seen_at: now, frames: 12 },
    ...over,
  };
}
