/**
 * Visits out of passes (agent/vision/pipeline.ts): the averaged embedding of a pass's best gated faces, its
 * attributes, the best face's JPEG, and the closing sighting of an identified pass reported at the time cap.
 */
import { v7 as uuidv7 } from 'uuid';
import { genderFromScore, genderRuleFor } from './attributes.js';
import { averageEmbeddings, consensus } from './embeddings.js';
import type { VisionEngine } from './engine.js';
import { encodeJpeg } from './io.js';
import { wireSegments } from './passes.js';
import type { CameraState, FaceKeep, Pass, PassSnapshot } from './passes.js';
import type { PipelineConfig } from './pipeline-config.js';
import type { FaceAttributes, Visit } from './types.js';

/**
 * How many of a visit's faces (the best by quality) its gender and age are taken from: one. The gender model costs
 * ~150 ms of CPU a call (three faces: ~0.45 s a visit, the largest share of a visit's CPU at a busy door), and its
 * rule was measured one face per photo (held-out FairFace, docs/recognition.md); averaging more was not measured.
 */
export const ATTRIBUTE_FACES = 1;

export class VisitMaker {
  constructor(
    private readonly engine: VisionEngine,
    private readonly config: PipelineConfig,
    private readonly fail: (err: unknown) => void,
    /** Adds the time spent encoding face JPEGs (ms). */
    private readonly timeFaceImages: (ms: number) => void,
    /** Count-only (docs/privacy.md): no embedding, no face JPEG. */
    private readonly countOnly: () => boolean = () => false,
  ) {}

  /** Calls to the embedding model for visits since start (faces embedded already for a link check are not embedded again). */
  embedCalls = 0;

  /** The visit of a pass as it was when reported. A model call that fails leaves its part out: a visit is footfall first. */
  async make(cam: CameraState, track: PassSnapshot, endedBy: Visit['track']['ended_by'], candidates: FaceKeep[], best: FaceKeep): Promise<Visit> {
    const cfg = this.config;
    let embedding: Float32Array | undefined;
    let embedded = 0;
    const countOnly = this.countOnly();
    if (candidates.length > 0 && !countOnly) {
      try {
        const embeddings = await Promise.all(candidates.map((k) => this.embedding(k)));
        cam.stats.embeddings += embeddings.length;
        embedded = embeddings.length;
        embedding = averageEmbeddings(consensus(embeddings, cfg.embedConsensus));
      } catch (err) {
        this.fail(err);
      }
    }
    let attributes: FaceAttributes | undefined;
    if (best.quality >= cfg.attributesMinQuality) {
      try {
        attributes = await this.attributes(candidates.length > 0 ? candidates : [best], best);
      } catch (err) {
        this.fail(err);
      }
    }
    let faceJpeg: Buffer | undefined;
    if (cfg.faceImages && !countOnly) {
      const t0 = performance.now();
      try {
        faceJpeg = await encodeJpeg(best.region, best.regions.image);
      } catch (err) {
        this.fail(err);
      }
      this.timeFaceImages(performance.now() - t0);
    }
    const visit: Visit = {
      // Time-ordered (UUIDv7): head office's index of the visit ids it has seen takes each new one at its end instead
      // of at a random page (docs/decisions.md, "Visit, crossing and customer ids are UUIDv7").
      visit_id: uuidv7(),
      occurred_at: new Date(track.firstAt).toISOString(),
      camera_id: cam.id,
      quality: best.quality,
      passed_gate: best.passed,
      track: {
        id: track.id,
        first_seen_at: new Date(track.firstAt).toISOString(),
        last_seen_at: new Date(track.lastAt).toISOString(),
        frames: track.frames,
        faces_passed: track.facesPassed,
        faces_embedded: embedded,
        ended_by: endedBy,
      },
      pass: { tracks: track.links, segments: wireSegments(track.segments) },
    };
    if (embedding) {
      visit.embedding = embedding;
      visit.recognition_model = this.engine.modelSet;
    }
    if (attributes) visit.attributes = attributes;
    if (faceJpeg) visit.face_jpeg = faceJpeg;
    return visit;
  }

  /**
   * A face's embedding: the one made already for a link check when there is one (the same crop region and landmarks,
   * so the same vector; docs/decisions.md, "Faces at a real door"), else a model call, kept on the face for later
   * link checks.
   */
  private async embedding(face: FaceKeep): Promise<Float32Array> {
    const made = await face.embedding;
    if (made) return made;
    this.embedCalls++;
    const call = this.engine.embedFace(face.region, face.landmarks);
    face.embedding = call.then(
      (e) => e,
      () => undefined,
    );
    return call;
  }

  /**
   * An identified pass reported at the cap has ended: one more sighting of the same person (the cap visit's
   * embedding, so head office matches the same customer) spanning the whole pass, so that head office extends the
   * stay to the person's last sighting (its dwell). Head office makes no arrival of it: a sighting within the stay
   * extends it (docs/visits-and-customers.md). Unidentified passes send none (it would count as another person).
   */
  closing(cam: CameraState, pass: Pass, capVisit: Visit): Visit {
    const visit: Visit = {
      visit_id: uuidv7(),
      occurred_at: new Date(pass.firstAt).toISOString(),
      camera_id: cam.id,
      quality: capVisit.quality,
      passed_gate: capVisit.passed_gate,
      track: {
        id: pass.id,
        first_seen_at: new Date(pass.firstAt).toISOString(),
        last_seen_at: new Date(pass.lastAt).toISOString(),
        frames: pass.tracks.reduce((n, t) => n + t.frames, 0),
        faces_passed: pass.tracks.reduce((n, t) => n + t.data.facesPassed, 0),
        faces_embedded: 0,
        ended_by: 'lost',
      },
      pass: { tracks: pass.tracks.length, segments: wireSegments(pass.segments), closes: capVisit.visit_id },
    };
    if (capVisit.embedding && capVisit.recognition_model) {
      visit.embedding = capVisit.embedding;
      visit.recognition_model = capVisit.recognition_model;
    }
    return visit;
  }

  /**
   * Age and gender from the ATTRIBUTE_FACES best of `faces` (the embedded ones, or the best face alone), averaged
   * when more than one; the gender model (~150 ms of CPU) runs on those only. Expression (the mini model ~2.5 ms,
   * fr_expression.onnx ~60 ms) runs once, on the best face.
   */
  private async attributes(faces: FaceKeep[], best: FaceKeep): Promise<FaceAttributes> {
    const some = [...faces].sort((a, b) => b.quality - a.quality).slice(0, ATTRIBUTE_FACES);
    // Usually the one face is the best face: then one call (one crop sent to the worker) gives all three.
    const together = some.length === 1 && some[0] === best;
    const [expr, ...rest] = await Promise.all([
      this.engine.attributes(best.region, best.regions, together ? {} : { ageGender: false }),
      ...(together ? [] : some.map((f) => this.engine.attributes(f.region, f.regions, { expression: false }))),
    ]);
    const ag = together ? [expr!] : rest;
    const mean = (xs: (number | undefined)[]): number | undefined => {
      const v = xs.filter((x): x is number => x !== undefined);
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : undefined;
    };
    const genderScore = mean(ag.map((a) => a.raw?.genderScore));
    const age = mean(ag.map((a) => a.raw?.age));
    const attributes: FaceAttributes = {};
    const model = ag.find((a) => a.raw?.genderModel)?.raw?.genderModel;
    const gender = genderScore === undefined ? undefined : genderFromScore(genderScore, genderRuleFor(model));
    if (gender) attributes.gender = gender;
    if (age !== undefined) attributes.age = Math.round(Math.min(130, Math.max(0, age)) * 10) / 10;
    if (expr?.emotion) attributes.emotion = expr.emotion;
    return attributes;
  }
}
