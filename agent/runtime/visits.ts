/**
 * Visits from the recognition pipeline to the durable queue (agent/queue), which the Publisher drains to
 * `<prefix>up/visit` with QoS 1.
 *
 * When head office stores face images (`images: local`), the face crop is uploaded first (POST /api/agent/faces)
 * and the visit names the returned `face_image_id`. The upload is best effort and short: a visit is never held back
 * or lost because head office is unreachable; it is queued without the picture (the count and the identity are what
 * matters). A 501 `images_disabled` stops face uploads for good. In count-only mode (the camera list's `recognition`
 * is `off`, docs/privacy.md) a visit goes out with neither embedding nor photo: a count, with attributes.
 */
import type { Logger } from 'pino';
import { LIMITS } from '../../shared/agent-api.js';
import { VisitMessage, encodeEmbedding } from '../../shared/messages.js';
import { UP } from '../../shared/topics.js';
import type { DurableQueue } from '../queue/queue.js';
import type { Visit } from '../vision/types.js';
import { AgentHttpError, type AgentApi } from './http.js';

export interface VisitSinkOptions {
  queue: DurableQueue;
  api: AgentApi;
  log: Logger;
  /** `ff/<company>/<shop>/`. */
  topicPrefix: string;
  images: 'off' | 'local';
  /** Face upload timeout; default 3 s. */
  faceTimeoutMs?: number;
}

/** The wire form of a visit (shared/messages.ts). */
export function visitMessage(visit: Visit, faceImageId?: string, countOnly = false): VisitMessage {
  const msg: VisitMessage = {
    visit_id: visit.visit_id,
    occurred_at: visit.occurred_at,
    camera_id: visit.camera_id,
    quality: Math.min(1, Math.max(0, visit.quality)),
    passed_gate: visit.passed_gate,
    track: { id: visit.track.id, first_seen_at: visit.track.first_seen_at, last_seen_at: visit.track.last_seen_at, frames: visit.track.frames },
  };
  if (visit.embedding && visit.recognition_model && !countOnly) {
    msg.embedding = encodeEmbedding(visit.embedding);
    msg.recognition_model = visit.recognition_model;
  }
  if (visit.attributes) {
    const { gender, age, emotion } = visit.attributes;
    const attributes: NonNullable<VisitMessage['attributes']> = {};
    if (gender !== undefined) attributes.gender = gender;
    if (age !== undefined) attributes.age = age;
    if (emotion !== undefined) attributes.emotion = emotion;
    if (Object.keys(attributes).length > 0) msg.attributes = attributes;
  }
  if (faceImageId) msg.face_image_id = faceImageId;
  return msg;
}

export class VisitSink {
  private readonly opts: VisitSinkOptions;
  private readonly topic: string;
  private facesOff: boolean;
  private readonly pending = new Set<Promise<void>>();
  private counters = { queued: 0, invalid: 0, faces: 0 };
  /** The company's recognition mode from the camera list (docs/privacy.md); `off`: no embedding, no face photo. */
  private recognition: 'all' | 'consented' | 'off' = 'all';

  constructor(options: VisitSinkOptions) {
    this.opts = options;
    this.topic = options.topicPrefix + UP.visit;
    this.facesOff = options.images !== 'local';
  }

  /** Head office's recognition mode (the camera list's `recognition`); from the next visit on. */
  setRecognition(mode: 'all' | 'consented' | 'off'): void {
    if (mode === this.recognition) return;
    this.recognition = mode;
    this.opts.log.info({ recognition: mode }, mode === 'off' ? 'count-only: visits go out without face embeddings or photos' : 'recognition mode changed');
  }

  get countOnly(): boolean {
    return this.recognition === 'off';
  }

  get stats(): { queued: number; invalid: number; faces: number } {
    return { ...this.counters };
  }

  /** Queues a visit (after its face upload, if any). Resolves once it is on disk. */
  submit(visit: Visit): Promise<void> {
    const p = this.store(visit).catch((err: unknown) => this.opts.log.error({ err, visit_id: visit.visit_id }, 'visit not queued'));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
    return p;
  }

  /** Resolves when every submitted visit is on disk. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private async store(visit: Visit): Promise<void> {
    const countOnly = this.countOnly;
    const faceImageId = countOnly ? undefined : await this.uploadFace(visit);
    const parsed = VisitMessage.safeParse(visitMessage(visit, faceImageId, countOnly));
    if (!parsed.success) {
      this.counters.invalid++;
      this.opts.log.error({ visit_id: visit.visit_id, issues: parsed.error.issues.slice(0, 3) }, 'visit does not match the contract; not sent');
      return;
    }
    if (!this.opts.queue.open) throw new Error('the queue is closed');
    this.opts.queue.enqueue(this.topic, JSON.stringify(parsed.data));
    this.counters.queued++;
    this.opts.log.debug({ visit_id: visit.visit_id, camera: visit.camera_id, identified: parsed.data.embedding !== undefined, face_image: faceImageId !== undefined }, 'visit queued');
  }

  private async uploadFace(visit: Visit): Promise<string | undefined> {
    if (this.facesOff || !visit.face_jpeg || visit.face_jpeg.length > LIMITS.faceBytes) return undefined;
    try {
      const { face_image_id } = await this.opts.api.uploadFace(visit.face_jpeg, this.opts.faceTimeoutMs ?? 3000);
      this.counters.faces++;
      return face_image_id;
    } catch (err) {
      if (err instanceof AgentHttpError && err.code === 'images_disabled') {
        this.facesOff = true;
        this.opts.log.info('head office stores no face images: face uploads stopped');
      } else {
        this.opts.log.debug({ err: (err as Error).message }, 'face image not uploaded; visit sent without it');
      }
      return undefined;
    }
  }
}
