import { endianness } from 'node:os';
import { z } from 'zod';

/**
 * MQTT payloads between head office and a shop PC (docs/agent-protocol.md). Every payload is one UTF-8 JSON
 * object. Receivers ignore fields they do not know (the schemas strip them), so either side may add optional fields
 * without breaking the other; a required field is never added without a new topic.
 */

/** RFC 3339 with an offset (head office always sends UTC `...Z`). */
export const Timestamp = z.iso.datetime({ offset: true });

/** A camera's `camera_id`: the engine name that lands on every visit; unique within a shop; never a uuid. */
export const cameraIdPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const CameraId = z
  .string()
  .regex(cameraIdPattern, 'must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit')
  .refine((v) => !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v), 'must not look like a uuid');

const count = z.number().int().min(0).max(1_000_000_000);
const fraction = z.number().min(0).max(1);

// ---------------------------------------------------------------------------------------------------------------
// Up: the shop PC publishes.

/**
 * One door camera's body counting over the last few minutes (heartbeat `doors`, additive; docs/body-counting.md
 * "Counting health"): frame counts of agent/runtime/doors.ts over the `window_s` seconds before the heartbeat.
 * `skipped` frames are the ones dropped because the detector was still busy: `skipped / (skipped + analysed)` is the
 * share of frames the detector could not keep up with. `paced` (kept to door_fps) and `held` (no motion) are by design.
 */
export const DoorStats = z.object({
  camera_id: z.string().min(1).max(64),
  /** Seconds the counts cover (up to five minutes; less just after counting started). */
  window_s: z.number().min(0).max(86_400),
  frames: count,
  paced: count,
  held: count,
  skipped: count,
  analysed: count,
  /** Crossings counted in the window. */
  in: count,
  out: count,
});
export type DoorStats = z.infer<typeof DoorStats>;

/** `<prefix>up/heartbeat`, every heartbeat_interval_s (QoS 0). Three missed heartbeats make the shop offline. */
export const Heartbeat = z
  .object({
    /** The shop PC's clock when it sent this; informational (head office stamps its own receive time). */
    sent_at: Timestamp,
    agent_version: z.string().max(64),
    /** Name of the recognition model in use; empty while none is loaded. */
    recognition_model: z.string().max(128),
    /** Whether the recognition pipeline is processing frames right now. */
    recognition_running: z.boolean(),
    /** When not running: why, in a few words a person can read ("model file missing"). */
    recognition_problem: z.string().max(300).optional(),
    /**
     * Additive (docs/body-counting.md): why entries and exits are not being counted while some camera has a counting
     * line (the person model missing, the detector failing). Absent: counting runs, or no camera has a line.
     */
    door_counting_problem: z.string().max(300).optional(),
    /** Enabled cameras whose stream is open right now / enabled cameras the shop PC knows. */
    cameras_up: count,
    cameras_total: count,
    /** Footfall (visits) waiting on the shop PC's disk to be delivered. */
    queued: count,
    /** Visits lost to queue overflow since enrolment; never decreases. Non-zero means reports are wrong. */
    dropped: count,
    /**
     * Share of faces seen over the last hour that were too poor to use, for the worst camera (not the average).
     * null: no faces seen in that hour.
     */
    fraction_below_gate: fraction.nullable(),
    /** camera_id of the camera that fraction_below_gate is about. */
    worst_camera_id: z.string().max(64).optional(),
    /** Additive: each camera counting at a line, its counting over the last few minutes (absent: none counts yet). */
    doors: z.array(DoorStats).max(256).optional(),
  })
  .refine((h) => h.cameras_up <= h.cameras_total, { message: 'cameras_up must not exceed cameras_total', path: ['cameras_up'] });
export type Heartbeat = z.infer<typeof Heartbeat>;

/**
 * Additive (docs/agent-protocol.md): `<prefix>up/goodbye` (QoS 1, not retained). The shop PC publishes it on a clean
 * stop just before it disconnects (`reason: stopping`), and sets it at connect as its MQTT last will
 * (`reason: connection_lost`), which the broker publishes when the connection is lost without a DISCONNECT. Either
 * way head office marks the shop offline at once; the next heartbeat marks it online again.
 */
export const Goodbye = z.object({
  reason: z.enum(['stopping', 'connection_lost']),
  /** The shop PC's clock when it sent this; absent in the last will (set at connect, sent by the broker later). */
  sent_at: Timestamp.optional(),
});
export type Goodbye = z.infer<typeof Goodbye>;

/** A face embedding: 512 float32 values, little-endian, base64 (2,048 bytes, 2,732 characters). */
export const EMBEDDING_DIMS = 512;
export const EMBEDDING_BYTES = EMBEDDING_DIMS * 4;
const LITTLE_ENDIAN = endianness() === 'LE';
/**
 * Base64 with its padding, as Buffer (and every encoder) writes it: checked by decoding and encoding again, which gives
 * back the same text only when it is. The decoder skips what is not base64 and takes `-` and `_` for `+` and `/`, so
 * this refuses characters outside the alphabet, padding in the middle, missing or extra padding, and pad bits that are
 * not zero (RFC 4648 3.5 lets a decoder refuse those). 1.6-2.5 us on 2,732 characters against 4-6 us for the pattern
 * `^[A-Za-z0-9+/]*={0,2}$` it replaced, which took ~3 % of head office's ingest thread (a `perf` profile at 800 visits
 * a second: docs/benchmarks.md, "Where head office's CPU goes at 2,000 shop PCs, by thread").
 */
const isBase64 = (s: string): boolean => s.length % 4 === 0 && Buffer.from(s, 'base64').toString('base64') === s;
export const Embedding = z
  .string()
  .refine(isBase64, 'must be base64')
  .refine((s) => Math.floor((s.length * 3) / 4) - (s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0) === EMBEDDING_BYTES, {
    message: `must encode ${EMBEDDING_DIMS} float32 values (${EMBEDDING_BYTES} bytes)`,
  });

export function encodeEmbedding(values: ArrayLike<number>): string {
  if (values.length !== EMBEDDING_DIMS) throw new Error(`an embedding has ${EMBEDDING_DIMS} values, not ${values.length}`);
  const buf = Buffer.alloc(EMBEDDING_BYTES);
  for (let i = 0; i < EMBEDDING_DIMS; i++) buf.writeFloatLE(values[i]!, i * 4);
  return buf.toString('base64');
}

export function decodeEmbedding(text: string): Float32Array {
  const buf = Buffer.from(text, 'base64');
  if (buf.length !== EMBEDDING_BYTES) throw new Error(`an embedding is ${EMBEDDING_BYTES} bytes, not ${buf.length}`);
  // One copy of the bytes where the machine is little-endian (x64, arm64) instead of 512 readFloatLE calls.
  if (LITTLE_ENDIAN) return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + EMBEDDING_BYTES));
  const out = new Float32Array(EMBEDDING_DIMS);
  for (let i = 0; i < EMBEDDING_DIMS; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** The id head office gave an uploaded face image (POST /api/agent/faces). */
export const FaceImageId = z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'must be the id returned by POST /api/agent/faces');

/**
 * `<prefix>up/visit` (QoS 1): one person passing a camera. The shop PC keeps it on disk until the broker's PUBACK
 * and re-sends it after a reconnect; head office de-duplicates on visit_id. Ingest belongs to the visits issue.
 */
export const VisitMessage = z
  .object({
    /** Made by the shop PC (uuid v4 or v7), stable across re-sends. */
    visit_id: z.uuid(),
    occurred_at: Timestamp,
    camera_id: CameraId,
    /** Absent: footfall counted without identifying anyone (below the gate, or recognition off). */
    embedding: Embedding.optional(),
    /** Model that produced the embedding; required with an embedding (different models never compare). */
    recognition_model: z.string().min(1).max(128).optional(),
    /** Face quality 0 to 1. */
    quality: fraction,
    /** Whether the face was good enough to identify (quality above the shop PC's gate). */
    passed_gate: z.boolean(),
    attributes: z
      .object({
        gender: z.string().max(32).optional(),
        age: z.number().min(0).max(130).optional(),
        emotion: z.string().max(32).optional(),
      })
      .optional(),
    /** Uploaded first with POST /api/agent/faces; only when the deployment stores images. */
    face_image_id: FaceImageId.optional(),
    /** The tracker's view of the pass. */
    track: z
      .object({
        id: z.string().min(1).max(64),
        first_seen_at: Timestamp,
        last_seen_at: Timestamp,
        frames: count,
      })
      .optional(),
  })
  .refine((v) => v.embedding === undefined || v.recognition_model !== undefined, {
    message: 'recognition_model is required with an embedding',
    path: ['recognition_model'],
  });
export type VisitMessage = z.infer<typeof VisitMessage>;

/**
 * `<prefix>up/crossing` (QoS 1): one body crossing a camera's counting line (docs/body-counting.md). Kept on the
 * shop PC's disk until the PUBACK like a visit; head office de-duplicates on crossing_id. Counted whether or not
 * recognition runs: a person whose face is never seen is still an entry.
 */
export const CrossingMessage = z.object({
  /** Made by the shop PC (uuid v4 or v7), stable across re-sends. */
  crossing_id: z.uuid(),
  occurred_at: Timestamp,
  camera_id: CameraId,
  /** `in`: from the outside side of the line to the inside side (an entry); `out`: an exit. */
  direction: z.enum(['in', 'out']),
  /** The body tracker's id for the person who crossed (informational). */
  track_id: z.string().min(1).max(64).optional(),
});
export type CrossingMessage = z.infer<typeof CrossingMessage>;

// ---------------------------------------------------------------------------------------------------------------
// Down: head office publishes. One `kind` per topic; a shop PC subscribed to `<prefix>down/#` can switch on it.

/** `<prefix>down/cameras` (QoS 1, retained): the camera list changed; pull GET /api/agent/cameras now. */
export const CamerasChanged = z.object({
  kind: z.literal('cameras_changed'),
  at: Timestamp,
});
export type CamerasChanged = z.infer<typeof CamerasChanged>;

export const CheckKind = z.enum(['connection', 'placement']);
export type CheckKind = z.infer<typeof CheckKind>;

/** `<prefix>down/check` (QoS 1): a check was requested; claim it with POST /api/agent/checks/claim. */
export const CheckRequested = z.object({
  kind: z.literal('check_requested'),
  check_id: z.uuid(),
  /** Camera uuid. */
  camera: z.uuid(),
  camera_id: z.string(),
  check_kind: CheckKind,
  /** Placement only: how long to watch. */
  seconds: z.number().int().positive().nullable(),
  /** After this, head office gives up on the check and refuses the answer. */
  release_at: Timestamp,
  at: Timestamp,
});
export type CheckRequested = z.infer<typeof CheckRequested>;

/**
 * `<prefix>down/live` (QoS 0): live-view demand. `watch` true: upload frames of this camera until `until` (renewed
 * every few seconds while someone watches). `watch` false: nobody watches any more; stop now.
 */
export const LiveDemand = z.object({
  kind: z.literal('live'),
  camera: z.uuid(),
  camera_id: z.string(),
  watch: z.boolean(),
  until: Timestamp,
  at: Timestamp,
});
export type LiveDemand = z.infer<typeof LiveDemand>;

export const DownMessage = z.discriminatedUnion('kind', [CamerasChanged, CheckRequested, LiveDemand]);
export type DownMessage = z.infer<typeof DownMessage>;

/** Live view timing: head office renews a demand every LIVE_RENEW_S seconds; each lasts LIVE_DEMAND_TTL_S. */
export const LIVE_RENEW_S = 3;
export const LIVE_DEMAND_TTL_S = 10;
