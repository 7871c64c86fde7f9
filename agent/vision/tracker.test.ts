import { describe, expect, expectTypeOf, it } from 'vitest';
import type { FrameConsumer } from '../capture/frame.js';
import type { AttributeParts, ContextRegions, FoundFace, FrameAnalysis, FrameScan, ObservedFace } from './analyzer.js';
import { resolveAnalyzerConfig } from './analyzer.js';
import type { EngineStats, VisionEngine } from './engine.js';
import { cropRgb } from './image.js';
import type { FrameRegion } from './image.js';
import { FramePipeline, consensus } from './pipeline.js';
import { GateWindow } from './quality.js';
import { DEFAULT_TRACKER, FaceTracker } from './tracker.js';
import type { Box, FaceAttributes, FivePoints, RgbImage, Visit } from './types.js';

function box(cx: number, cy: number, s = 60): Box {
  return { x1: cx - s / 2, y1: cy - s / 2, x2: cx + s / 2, y2: cy + s / 2 };
}

function tracker(): FaceTracker<{ n: number }> {
  let id = 0;
  return new FaceTracker(DEFAULT_TRACKER, () => ({ n: 0 }), () => `t${++id}`);
}

describe('FaceTracker', () => {
  it('follows one person walking across the frame as one track, through missed detections', () => {
    const t = tracker();
    const ids = new Set<string>();
    const ended: string[] = [];
    for (let i = 0; i < 40; i++) {
      const at = i * 200;
      // 5 fps, 25 px per frame (more than the IoU can bridge at times), missed on frames 12-14.
      const boxes = i >= 12 && i <= 14 ? [] : [box(40 + 25 * i, 180 + 2 * i, 60 + i)];
      const r = t.update(at, boxes);
      r.assigned.forEach((tr) => ids.add(tr.id));
      ended.push(...r.ended.map((e) => e.id));
    }
    expect(ids.size).toBe(1);
    expect(ended).toEqual([]);
    expect(t.update(40 * 200 + DEFAULT_TRACKER.maxLostMs + 1, []).ended.map((e) => e.frames)).toEqual([37]);
  });

  it('keeps two people crossing each other apart', () => {
    const t = tracker();
    const byTrack = new Map<string, number[]>();
    for (let i = 0; i < 30; i++) {
      const a = box(50 + 20 * i, 150);
      const b = box(630 - 20 * i, 200);
      const r = t.update(i * 200, [a, b]);
      r.assigned.forEach((tr, k) => byTrack.set(tr.id, [...(byTrack.get(tr.id) ?? []), k]));
    }
    expect(byTrack.size).toBe(2);
    // Each track kept the same person (detection index) throughout.
    for (const ks of byTrack.values()) expect(new Set(ks).size).toBe(1);
  });

  it('starts a new track when a face reappears after the lost-track tolerance, or far away', () => {
    const t = tracker();
    const first = t.update(0, [box(100, 100)]).assigned[0]!.id;
    const later = t.update(DEFAULT_TRACKER.maxLostMs + 400, [box(100, 100)]);
    expect(later.ended.map((e) => e.id)).toEqual([first]);
    expect(later.assigned[0]!.id).not.toBe(first);
    const far = t.update(DEFAULT_TRACKER.maxLostMs + 600, [box(500, 300)]);
    expect(far.assigned[0]!.id).not.toBe(later.assigned[0]!.id);
  });
});

describe('GateWindow', () => {
  it('gives the share of faces below the gate over a rolling window', () => {
    const w = new GateWindow(10_000, 1_000);
    expect(w.fraction(0)).toBeNull();
    for (let i = 0; i < 10; i++) w.add(i * 100, i < 3);
    expect(w.fraction(1_000)).toBeCloseTo(0.3);
    for (let i = 0; i < 10; i++) w.add(20_000 + i * 100, false);
    expect(w.fraction(20_500)).toBe(0);
    expect(w.counts(40_000)).toEqual({ seen: 0, below: 0 });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// FramePipeline with a scripted engine: the frame's first pixel says which synthetic faces it holds.

const DIM = 512;
function unit(seed: number): Float32Array {
  const v = new Float32Array(DIM);
  let x = seed * 9301 + 49297;
  for (let i = 0; i < DIM; i++) {
    x = (x * 9301 + 49297) % 233280;
    v[i] = x / 233280 - 0.5;
  }
  const n = Math.hypot(...v);
  return v.map((y) => y / n);
}

interface ScriptedFace {
  person: number;
  box: Box;
  quality: number;
}

class ScriptedEngine implements VisionEngine {
  readonly modelSet = 'scripted';
  readonly workers = 0;
  readonly config = resolveAnalyzerConfig();
  embeds = 0;
  attributeCalls = 0;
  delayMs = 0;
  failEmbed = false;
  constructor(private readonly script: Map<number, ScriptedFace[]>) {}

  /** The scripted faces of a frame (its number is in its first two bytes). */
  private found(img: RgbImage): FoundFace[] {
    const frame = img.data[0]! + 256 * img.data[1]!;
    // Each person's face sits in its own place: the crop region starts at x = person, and so does its first landmark.
    return (this.script.get(frame) ?? []).map((f): FoundFace => ({
      box: f.box,
      score: 0.99,
      landmarks: [[f.person, 0], [1, 0], [0.5, 0.5], [0, 1], [1, 1]],
      quality: f.quality,
      qualityParts: { eyeDistance: 30, size: 1, laplacianVariance: 100, sharpness: 1, yaw: 0, roll: 0, pose: 1, detector: 1 },
      passesGate: f.quality >= this.config.quality.gate,
      crop: { x: f.person, y: 0, w: 4, h: 4 },
      regions: { ssr: { x: 0, y: 0, w: 4, h: 4 }, expression: { x: 0, y: 0, w: 4, h: 4 }, image: { x: 0, y: 0, w: 4, h: 4 } },
    }));
  }

  async scan(img: RgbImage): Promise<FrameScan> {
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    return { faces: this.found(img), input: img.data };
  }
  async analyze(img: RgbImage): Promise<FrameAnalysis> {
    const scan = await this.scan(img);
    const faces = scan.faces.map((f): ObservedFace => ({ ...f, aligned: { width: 2, height: 2, data: new Uint8Array(12).fill(f.crop.x) }, context: cropRgb(img, f.crop) }));
    return { faces, input: img.data };
  }
  async embed(aligned: RgbImage): Promise<Float32Array> {
    if (this.failEmbed) throw new Error('vision worker exited with code 1');
    this.embeds++;
    return unit(aligned.data[0]!);
  }
  async embedFace(region: FrameRegion, landmarks: FivePoints): Promise<Float32Array> {
    if (this.failEmbed) throw new Error('vision worker exited with code 1');
    expect(region.x).toBe(landmarks[0][0]); // the pipeline cut out this face's own region
    this.embeds++;
    return unit(landmarks[0][0]);
  }
  async attributes(context: RgbImage, _regions: ContextRegions, parts: AttributeParts = {}): Promise<FaceAttributes> {
    this.attributeCalls++;
    return {
      ...(parts.ageGender !== false ? { gender: 'female', age: 30, raw: { genderScore: 0.03, age: 30 } } : {}),
      ...(parts.expression !== false ? { emotion: (context as FrameRegion).x === 1 ? 'happy' : 'neutral' } : {}),
    };
  }
  async stats(): Promise<EngineStats> {
    return { models: {}, stages: { detectPrep: 0, detect: 0, landmarks: 0, align: 0, quality: 0, embed: 0, attributes: 0 } };
  }
  async close(): Promise<void> {}
}

function frameBuffer(n: number): Buffer {
  const b = Buffer.alloc(8 * 4 * 3);
  b[0] = n % 256;
  b[1] = Math.floor(n / 256);
  return b;
}

async function feed(p: FramePipeline, frames: number, cameraId = 'door', drain = true): Promise<void> {
  for (let i = 0; i < frames; i++) {
    p.consume({ cameraId, width: 8, height: 4, data: frameBuffer(i), at: new Date(Date.UTC(2026, 0, 1) + i * 200) });
    if (drain) await p.drain();
  }
}

describe('FramePipeline (scripted engine)', () => {
  it('is a capture frame consumer', () => {
    expectTypeOf<FramePipeline['consume']>().toExtend<FrameConsumer>();
  });

  it('emits one visit per person pass with the mean of a few best faces, not one per frame', async () => {
    const script = new Map<number, ScriptedFace[]>();
    // Person 1 walks through frames 0-19 (quality rising then falling), person 2 frames 30-34 below the gate.
    for (let i = 0; i < 20; i++) script.set(i, [{ person: 1, box: box(50 + 20 * i, 100), quality: 0.55 + 0.4 * Math.sin((i / 19) * Math.PI) }]);
    for (let i = 30; i < 35; i++) script.set(i, [{ person: 2, box: box(300, 200), quality: 0.25 }]);
    const engine = new ScriptedEngine(script);
    const p = new FramePipeline({ engine, config: { faceImages: false } });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 50);
    await p.flush();
    expect(visits).toHaveLength(2);
    const [a, b] = visits.sort((x, y) => x.occurred_at.localeCompare(y.occurred_at)) as [Visit, Visit];
    expect(a.passed_gate).toBe(true);
    expect(a.track.frames).toBe(20);
    expect(a.track.faces_embedded).toBe(3);
    expect(a.embedding).toBeInstanceOf(Float32Array);
    expect(Math.hypot(...a.embedding!)).toBeCloseTo(1, 5);
    unit(1).forEach((x, i) => expect(a.embedding![i]).toBeCloseTo(x, 6));
    expect(a.recognition_model).toBe('scripted');
    expect(a.quality).toBeGreaterThan(0.9);
    expect(a.attributes).toEqual({ gender: 'female', age: 30, emotion: 'happy' });
    expect(a.occurred_at).toBe('2026-01-01T00:00:00.000Z');
    expect(a.track.last_seen_at).toBe('2026-01-01T00:00:03.800Z');
    // A pass whose faces never passed the gate is still footfall: a visit without identity.
    expect(b.passed_gate).toBe(false);
    expect(b.embedding).toBeUndefined();
    expect(b.recognition_model).toBeUndefined();
    expect(b.quality).toBe(0.25);
    expect(b.attributes).toBeUndefined(); // below attributesMinQuality (0.3)
    const s = p.stats();
    // Three faces embedded for the identity; person 2 came 1.2 s after person 1 was last seen, elsewhere: one
    // short-term embedding each to tell whether it is person 1 again (it is not: two visits). Person 1's face
    // compared then is her best, one of the three: embedded once, so the model ran 3 + 2 - 1 times.
    expect(s.embeddings).toBe(3);
    expect(s.link_embeddings).toBe(2);
    expect(s.links_face + s.links_position).toBe(0);
    expect(engine.embeds).toBe(3 + 2 - 1);
    expect(p.embeddingCalls).toBe(3 + 2 - 1);
    expect(s.frames_processed).toBe(50);
    expect(s.visits).toBe(2);
    expect(s.cameras.door!.fraction_below_gate).toBeCloseTo(5 / 25);
    expect(s.fraction_below_gate).toBeCloseTo(5 / 25);
    expect(s.worst_camera_id).toBe('door');
    await p.close();
  });

  it('reports a long stay once, at the cap, and not again when it ends', async () => {
    const script = new Map<number, ScriptedFace[]>();
    for (let i = 0; i < 60; i++) script.set(i, [{ person: 3, box: box(200, 150), quality: 0.9 }]);
    const p = new FramePipeline({ engine: new ScriptedEngine(script), config: { capMs: 5_000, faceImages: false } });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 70);
    await p.flush();
    // The visit at the cap, then (the pass identified) one closing sighting with the same embedding spanning the
    // whole pass, for head office to extend the stay to its end: not a second visit.
    expect(visits).toHaveLength(2);
    const [cap, closing] = visits as [Visit, Visit];
    expect(cap.track.ended_by).toBe('cap');
    expect(cap.track.frames).toBe(26); // frames 0..25: 25 * 200 ms = the 5 s cap
    expect(cap.track.last_seen_at).toBe('2026-01-01T00:00:05.000Z');
    expect(closing.pass?.closes).toBe(cap.visit_id);
    // Visit ids are UUIDv7, made in time order (head office's index of seen ids appends them).
    for (const v of [cap, closing]) expect(v.visit_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(closing.visit_id > cap.visit_id).toBe(true);
    expect(closing.embedding).toEqual(cap.embedding);
    expect(closing.recognition_model).toBe(cap.recognition_model);
    expect(closing).toMatchObject({ occurred_at: cap.occurred_at, track: { id: cap.track.id, first_seen_at: cap.occurred_at, last_seen_at: '2026-01-01T00:00:11.800Z', frames: 60 } });
    expect(closing.attributes).toBeUndefined();
    expect(p.stats()).toMatchObject({ visits: 1, closing_sightings: 1 });
    await p.close();
  });

  it('sends no closing sighting for an unidentified pass reported at the cap (it would count again)', async () => {
    const script = new Map<number, ScriptedFace[]>();
    for (let i = 0; i < 60; i++) script.set(i, [{ person: 3, box: box(200, 150), quality: 0.3 }]);
    const p = new FramePipeline({ engine: new ScriptedEngine(script), config: { capMs: 5_000, faceImages: false } });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 70);
    await p.flush();
    expect(visits).toHaveLength(1);
    expect(visits[0]!.embedding).toBeUndefined();
    expect(p.stats().closing_sightings).toBe(0);
    await p.close();
  });

  it('links the tracks of one person who is hidden, turns away and comes back elsewhere into one pass: one visit', async () => {
    const script = new Map<number, ScriptedFace[]>();
    // Person 1: seen (0-9), hidden 1.8 s (longer than the tracker's 1.2 s), back a little to the right (19-29), blurred
    // below the gate (30-34), turned away 2 s, back at the other end of the counter (45-55): a position link, then a
    // face link (the short-term embedding).
    for (let i = 0; i <= 9; i++) script.set(i, [{ person: 1, box: box(100, 100), quality: 0.9 }]);
    for (let i = 19; i <= 29; i++) script.set(i, [{ person: 1, box: box(115, 100), quality: 0.8 }]);
    for (let i = 30; i <= 34; i++) script.set(i, [{ person: 1, box: box(115, 100), quality: 0.25 }]);
    for (let i = 45; i <= 55; i++) script.set(i, [{ person: 1, box: box(400, 100), quality: 0.85 }]);
    const engine = new ScriptedEngine(script);
    const p = new FramePipeline({ engine, config: { faceImages: false } });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 80);
    await p.flush();
    expect(visits).toHaveLength(1);
    const v = visits[0]!;
    expect(v.pass?.tracks).toBe(3);
    expect(v.pass?.segments.map((g) => g.link)).toEqual([undefined, 'position', 'face']);
    expect(v.track.frames).toBe(10 + 16 + 11);
    expect(v.occurred_at).toBe('2026-01-01T00:00:00.000Z');
    expect(v.track.last_seen_at).toBe('2026-01-01T00:00:11.000Z');
    expect(v.track.ended_by).toBe('lost');
    unit(1).forEach((x, i) => expect(v.embedding![i]).toBeCloseTo(x, 6));
    const s = p.stats();
    expect([s.links_position, s.links_face, s.links_vetoed]).toEqual([1, 1, 0]);
    // Identity embeddings: the 3 best gated faces. Short-term ones: the position link's two faces (both gated,
    // compared to rule out two people), then the new track's face for the face link (the pass's last face is
    // the one already embedded: made once).
    expect(s.embeddings).toBe(3);
    expect(s.link_embeddings).toBe(3);
    // The first track's best face (compared for the position link) is one of the three: the model ran 3 + 3 - 1 times.
    expect(engine.embeds).toBe(3 + 3 - 1);
    await p.close();
  });

  it('does not link a second person who arrives where the first just left, nor a face back after the link window', async () => {
    const script = new Map<number, ScriptedFace[]>();
    for (let i = 0; i <= 9; i++) script.set(i, [{ person: 1, box: box(100, 100), quality: 0.9 }]);
    // Person 2 at the same place 1.6 s later: linked by position at first, undone by the faces (both gated).
    for (let i = 18; i <= 27; i++) script.set(i, [{ person: 2, box: box(100, 100), quality: 0.9 }]);
    // Person 2 again 4 s later (longer than the 3 s window): a new pass.
    for (let i = 48; i <= 57; i++) script.set(i, [{ person: 2, box: box(100, 100), quality: 0.9 }]);
    const p = new FramePipeline({ engine: new ScriptedEngine(script), config: { faceImages: false } });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 80);
    await p.flush();
    visits.sort((a, b) => a.occurred_at.localeCompare(b.occurred_at));
    expect(visits.map((v) => v.occurred_at)).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:03.600Z', '2026-01-01T00:00:09.600Z']);
    expect(visits.map((v) => v.pass?.tracks)).toEqual([1, 1, 1]);
    unit(1).forEach((x, i) => expect(visits[0]!.embedding![i]).toBeCloseTo(x, 6));
    unit(2).forEach((x, i) => expect(visits[1]!.embedding![i]).toBeCloseTo(x, 6));
    const s = p.stats();
    expect([s.links_position, s.links_face, s.links_vetoed]).toEqual([0, 0, 1]);
    await p.close();
  });

  it('makes one visit per track with linking off (windowMs 0)', async () => {
    const script = new Map<number, ScriptedFace[]>();
    for (let i = 0; i <= 9; i++) script.set(i, [{ person: 1, box: box(100, 100), quality: 0.9 }]);
    for (let i = 19; i <= 29; i++) script.set(i, [{ person: 1, box: box(115, 100), quality: 0.9 }]);
    const p = new FramePipeline({ engine: new ScriptedEngine(script), config: { faceImages: false, link: { windowMs: 0 } } });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 40);
    await p.flush();
    expect(visits).toHaveLength(2);
    expect(p.stats().link_embeddings).toBe(0);
    await p.close();
  });

  it('drops frames instead of queueing them when analysis falls behind', async () => {
    const engine = new ScriptedEngine(new Map());
    engine.delayMs = 30;
    const p = new FramePipeline({ engine });
    await feed(p, 20, 'busy', false);
    await p.flush();
    const s = p.stats();
    expect(s.frames_received).toBe(20);
    // One in analysis, one waiting (the newest); the 18 in between were dropped.
    expect(s.frames_processed).toBe(2);
    expect(s.frames_dropped).toBe(18);
    expect(s.fraction_below_gate).toBeNull();
    await p.close();
  });

  it('drops tracks seen in a single frame as noise and attaches a JPEG of the best face', async () => {
    const script = new Map<number, ScriptedFace[]>([
      [0, [{ person: 4, box: box(100, 100), quality: 0.9 }]],
      [10, [{ person: 5, box: box(100, 100), quality: 0.8 }]],
      [11, [{ person: 5, box: box(102, 100), quality: 0.85 }]],
    ]);
    const p = new FramePipeline({ engine: new ScriptedEngine(script) });
    const visits: Visit[] = [];
    p.on('visit', (v) => visits.push(v));
    await feed(p, 20);
    await p.flush();
    expect(visits).toHaveLength(1);
    expect(visits[0]!.track.frames).toBe(2);
    expect(p.stats().tracks_discarded).toBe(1);
    const jpeg = visits[0]!.face_jpeg!;
    expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    await p.close();
  });

  it('still counts the visit when embedding fails, and reports the error', async () => {
    const script = new Map<number, ScriptedFace[]>([
      [0, [{ person: 6, box: box(100, 100), quality: 0.9 }]],
      [1, [{ person: 6, box: box(104, 100), quality: 0.9 }]],
    ]);
    const engine = new ScriptedEngine(script);
    engine.failEmbed = true;
    const p = new FramePipeline({ engine, config: { faceImages: false } });
    const visits: Visit[] = [];
    const errors: Error[] = [];
    p.on('visit', (v) => visits.push(v));
    p.on('error', (e) => errors.push(e));
    await feed(p, 10);
    await p.flush();
    expect(visits).toHaveLength(1);
    expect(visits[0]!.passed_gate).toBe(true);
    expect(visits[0]!.embedding).toBeUndefined();
    expect(visits[0]!.track.faces_embedded).toBe(0);
    expect(visits[0]!.attributes?.emotion).toBe('neutral');
    expect(errors.map((e) => e.message)).toEqual(['vision worker exited with code 1']);
    await p.close();
  });

  it('leaves out of the average an embedding that disagrees with the others (the tracker switched people)', () => {
    const a = unit(1);
    const a2 = unit(1).map((x, i) => x + (i % 7 === 0 ? 0.01 : 0));
    const b = unit(2);
    expect(consensus([a, a2, b], 0.3)).toEqual([a, a2]);
    expect(consensus([a, b], 0.3)).toEqual([a]);
    expect(consensus([a], 0.3)).toEqual([a]);
  });
});
