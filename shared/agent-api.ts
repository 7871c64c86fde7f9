import { z } from 'zod';
import { CameraId, CheckKind, Timestamp } from './messages.js';

/**
 * The shop PC's HTTP routes (docs/agent-protocol.md): exactly these ten, all under /api/agent. Every route but
 * enrolment takes `Authorization: Bearer <shop-PC token>` (`ffs_...`) and refuses a user's session; user routes
 * refuse shop-PC tokens. JSON unless the route says `image/jpeg`. Responses to JSON requests are JSON; failures are
 * the error envelope in ./errors.ts.
 */
export const AGENT_ROUTES = {
  enrol: 'POST /api/agent/enrol',
  me: 'GET /api/agent/me',
  cameras: 'GET /api/agent/cameras',
  cameraStates: 'POST /api/agent/cameras/state',
  snapshot: 'PUT /api/agent/cameras/{camera}/snapshot',
  face: 'POST /api/agent/faces',
  claimCheck: 'POST /api/agent/checks/claim',
  answerCheck: 'POST /api/agent/checks/{check}/answer',
  liveDemands: 'GET /api/agent/live',
  liveFrame: 'POST /api/agent/live/{camera}/frames',
} as const;

/** Upload limits (bytes). Larger bodies answer 413 payload_too_large. */
export const LIMITS = {
  snapshotBytes: 2 * 1024 * 1024,
  faceBytes: 512 * 1024,
  frameBytes: 512 * 1024,
  /** Decoded size of the optional JPEG in a check answer. */
  checkImageBytes: 512 * 1024,
  /** Cameras in one state report. */
  stateReports: 256,
} as const;

/** An enrolment (installation) code: four groups of six upper-case letters and digits. Dashes, spaces, case ignored. */
export const ENROLMENT_CODE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export function normaliseEnrolmentCode(input: string): string {
  return input.replace(/[\s-]/g, '').toUpperCase();
}
export const enrolmentCodePattern = /^[A-Z0-9]{6}-[A-Z0-9]{6}-[A-Z0-9]{6}-[A-Z0-9]{6}$/;

// ---------------------------------------------------------------------------------------------------------------
// 1. POST /api/agent/enrol (no Authorization): exchange a single-use code for this shop PC's token and broker login.

export const EnrolRequest = z.object({
  code: z.string().min(1).max(64),
  /** The PC's host name, for the audit log and GET /api/sites. */
  hostname: z.string().max(255).optional(),
  agent_version: z.string().max(64).optional(),
});
export type EnrolRequest = z.infer<typeof EnrolRequest>;

export const Timing = z.object({
  /** Publish a heartbeat this often. Three missed ones make the shop offline. */
  heartbeat_interval_s: z.number().int().positive(),
  /** Pull GET /api/agent/cameras at least this often (and at once on cameras_changed). */
  camera_sync_s: z.number().int().positive(),
  /** Upload each connected camera's snapshot about this often. */
  snapshot_interval_s: z.number().int().positive(),
  /** Live demands are renewed this often and last live_demand_ttl_s. */
  live_renew_s: z.number().int().positive(),
  live_demand_ttl_s: z.number().int().positive(),
  /** A check not answered this long after it was requested is given up (the answer is then refused). */
  check_release_s: z.number().int().positive(),
});
export type Timing = z.infer<typeof Timing>;

export const Site = z.object({
  id: z.uuid(),
  slug: z.string(),
  name: z.string(),
  /** IANA zone of the shop. */
  timezone: z.string(),
});

export const BrokerLogin = z.object({
  /** null: the same host name as head office's HTTP address. */
  host: z.string().nullable(),
  port: z.number().int(),
  /** true: connect with TLS (mqtts). Absent: plain MQTT (the embedded broker). Added with the external broker. */
  tls: z.boolean().optional(),
  username: z.string(),
  /** MQTT client id to use (one connection per shop; a second one with the same id replaces the first). */
  client_id: z.string(),
  /** `ff/<company>/<shop>/`: publish under `up/`, subscribe to `down/#`. */
  topic_prefix: z.string(),
});

export const AgentIdentity = z.object({
  site: Site,
  company: z.object({ slug: z.string(), name: z.string() }),
  broker: BrokerLogin,
  timing: Timing,
  /** `local`: head office stores face images (upload them with POST /api/agent/faces); `off`: never upload any. */
  images: z.enum(['off', 'local']),
});
export type AgentIdentity = z.infer<typeof AgentIdentity>;

export const EnrolResponse = AgentIdentity.extend({
  /** The shop PC's own token (`ffs_...`). Shown once; store it. Re-enrolment or shop deletion revokes it. */
  token: z.string().startsWith('ffs_'),
  broker: BrokerLogin.extend({
    /** The broker secret. Shown once; each enrolment issues a new one and ends the old one. */
    password: z.string(),
  }),
});
export type EnrolResponse = z.infer<typeof EnrolResponse>;

// 2. GET /api/agent/me -> AgentIdentity (the enrolment answer without the token and the broker password).

// ---------------------------------------------------------------------------------------------------------------
// 3. GET /api/agent/cameras: the shop's camera list, with tombstones of removed ones.

/** A point in frame coordinates: 0..1 from the left and from the top of the (rotated) picture. */
export const FramePoint = z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]);
export type FramePoint = z.infer<typeof FramePoint>;

/**
 * The door's counting line, drawn by the installer on the camera's snapshot: a body crossing from the outside to the
 * inside is an entry, the other way an exit. `inside` names the side of the line, walking from `a` to `b`, that is
 * the shop: `left` or `right` (as seen on the picture, with y growing downwards).
 */
export const CountingLine = z
  .object({
    a: FramePoint,
    b: FramePoint,
    inside: z.enum(['left', 'right']),
  })
  .refine((l) => Math.hypot(l.a[0] - l.b[0], l.a[1] - l.b[1]) >= 0.05, {
    message: 'the line must be at least 5 % of the picture long',
    path: ['b'],
  });
export type CountingLine = z.infer<typeof CountingLine>;

export const CameraRole = z.enum(['faces', 'door', 'both'], { error: 'must be "faces" (recognise faces), "door" (count entries and exits only) or "both"' });
export type CameraRole = z.infer<typeof CameraRole>;

export const Tuning = z.object({
  /** Frames per second the detector looks at. */
  detect_fps: z.number().int().min(1).max(30),
  /** Smallest face (pixels between the eyes' outer corners ~ face width) worth detecting. */
  min_face_px: z.number().int().min(16).max(1024),
  /** Clockwise rotation to apply to the picture before detection (a camera mounted on its side). */
  rotate: z.union([z.literal(0), z.literal(90), z.literal(180), z.literal(270)]),
  /**
   * The counting line (additive; docs/body-counting.md). Absent or null: this camera counts no entries or exits.
   * With a line, the shop PC detects bodies on this camera and reports crossings (`up/crossing`).
   */
  line: CountingLine.nullable().optional(),
  /**
   * What the camera is for (additive; docs/shops-and-cameras.md "Camera roles"): `faces` recognises faces (visitors)
   * and counts no entries; `door` counts entries and exits at its line and runs no face pipeline at all (no
   * visitors); `both` does both. Absent: `door` when the camera has a line, else `faces` (see cameraRole).
   */
  role: CameraRole.optional(),
});
export type Tuning = z.infer<typeof Tuning>;

/**
 * A camera's role as the shop PC and head office apply it. An absent role means `door` with a counting line (a camera
 * placed to count a door or a walkway sees small, poor faces that would each become a visitor) and `faces` without.
 */
export function cameraRole(tuning: Pick<Tuning, 'role' | 'line'>): CameraRole {
  return tuning.role ?? (tuning.line ? 'door' : 'faces');
}
/** Whether the camera's faces become visits (roles `faces` and `both`). */
export const recognisesFaces = (tuning: Pick<Tuning, 'role' | 'line'>): boolean => cameraRole(tuning) !== 'door';
/** The line the camera counts at: its line when its role is `door` or `both`, else null (a `faces` camera's line is kept, unused). */
export const countingLineOf = (tuning: Pick<Tuning, 'role' | 'line'>): CountingLine | null => (cameraRole(tuning) === 'faces' ? null : (tuning.line ?? null));
export const DEFAULT_TUNING: Tuning = { detect_fps: 8, min_face_px: 64, rotate: 0 };

export const CameraConfig = z.object({
  id: z.uuid(),
  camera_id: z.string(),
  label: z.string(),
  host: z.string(),
  port: z.number().int(),
  /** Stream path (RTSP), camera-model specific; may be empty. */
  path: z.string(),
  username: z.string(),
  /** The camera's password in clear (empty: none). Only shop PCs ever receive it. */
  password: z.string(),
  /** Decode at most this wide (pixels). */
  max_width: z.number().int(),
  tuning: Tuning,
  /** Disabled: keep the configuration, open no stream, report nothing. */
  enabled: z.boolean(),
  /** Bumped on every edit: reopen the stream when it changes. */
  revision: z.number().int(),
  updated_at: Timestamp,
});
export type CameraConfig = z.infer<typeof CameraConfig>;

export const RemovedCamera = z.object({ id: z.uuid(), camera_id: z.string(), removed_at: Timestamp });

export const CameraList = z.object({
  cameras: z.array(CameraConfig),
  /** Removed cameras: stop them, forget their state, delete what is queued for them only after delivering it. */
  removed: z.array(RemovedCamera),
  synced_at: Timestamp,
  /**
   * The company's recognition mode (docs/privacy.md). `off`: count only, send no embedding and no face photo. Absent
   * (an older head office): `all`.
   */
  recognition: z.enum(['all', 'consented', 'off']).optional(),
});
export type CameraList = z.infer<typeof CameraList>;

// ---------------------------------------------------------------------------------------------------------------
// 4. POST /api/agent/cameras/state: whether each camera's stream opens.

/** A reason word: lower-case letters, digits, underscores. Known: see CAMERA_REASONS. */
export const ReasonWord = z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'must be one lower-case word (letters, digits, underscores)');
export const CAMERA_REASONS = ['ok', 'connecting', 'unreachable', 'auth_failed', 'no_stream', 'timeout', 'decode_error', 'disabled'] as const;

export const CameraStateReport = z.object({
  cameras: z
    .array(
      z.object({
        /** Camera uuid or camera_id. */
        camera: z.string().min(1).max(64),
        connected: z.boolean(),
        reason: ReasonWord.optional(),
      }),
    )
    .min(1)
    .max(LIMITS.stateReports),
});
export type CameraStateReport = z.infer<typeof CameraStateReport>;

export const CameraStateResult = z.object({
  updated: z.number().int(),
  /** Cameras named in the report that this shop does not have (removed, or never existed): pull the list again. */
  unknown: z.array(z.string()),
});

// 5. PUT /api/agent/cameras/{camera}/snapshot, body image/jpeg -> { snapshot_at }.
export const SnapshotStored = z.object({ snapshot_at: Timestamp });

// 6. POST /api/agent/faces, body image/jpeg -> 201 { face_image_id } (501 images_disabled when images are off).
export const FaceStored = z.object({ face_image_id: z.string() });

// ---------------------------------------------------------------------------------------------------------------
// 7. POST /api/agent/checks/claim (no body): the oldest open check of this shop, now claimed; job null when none.

export const CheckJob = z.object({
  check_id: z.uuid(),
  camera: z.uuid(),
  camera_id: z.string(),
  kind: CheckKind,
  /** Placement: watch for this long while a person walks through the frame. Connection: null. */
  seconds: z.number().int().nullable(),
  requested_at: Timestamp,
  release_at: Timestamp,
});
export type CheckJob = z.infer<typeof CheckJob>;
export const ClaimResult = z.object({ job: CheckJob.nullable() });

// 8. POST /api/agent/checks/{check}/answer.

/**
 * `good` is the only pass. marginal: 20-50% of faces too poor (half the visitors silently discarded), poor: 50% or
 * more, no_faces: nobody seen during a placement check; unreachable / auth_failed / no_stream: the stream would
 * not open; not_set_up: this shop PC does not have the camera yet; failed: anything else (say why in `reason`).
 */
export const Verdict = z.enum(['good', 'marginal', 'poor', 'no_faces', 'unreachable', 'auth_failed', 'no_stream', 'not_set_up', 'failed']);
export type Verdict = z.infer<typeof Verdict>;

export const CheckAnswer = z.object({
  verdict: Verdict,
  detail: z
    .object({
      faces: z.number().int().min(0).max(1_000_000),
      fraction_below_gate: z.number().min(0).max(1).nullable(),
    })
    .default({ faces: 0, fraction_below_gate: null }),
  /** A few words on what went wrong, shown to the person next to the camera. */
  reason: z.string().max(300).optional(),
  /** A JPEG of what the camera saw, base64; becomes the camera's snapshot. */
  image: z.base64().max(Math.ceil(LIMITS.checkImageBytes / 3) * 4).optional(),
});
export type CheckAnswer = z.infer<typeof CheckAnswer>;
export const CheckAnswered = z.object({ state: z.literal('done'), ok: z.boolean(), verdict: Verdict });

// ---------------------------------------------------------------------------------------------------------------
// 9. GET /api/agent/live: the cameras someone watches right now (the polling twin of the MQTT live demand).

export const LiveDemands = z.object({
  cameras: z.array(z.object({ camera: z.uuid(), camera_id: z.string(), until: Timestamp })),
});
export type LiveDemands = z.infer<typeof LiveDemands>;

// 10. POST /api/agent/live/{camera}/frames, body image/jpeg (640 wide, ~13 fps) -> whether anyone still watches.
export const LiveFrameResult = z.object({
  /** false: nobody watches this camera; stop uploading now. */
  watching: z.boolean(),
  until: Timestamp.nullable(),
});
export type LiveFrameResult = z.infer<typeof LiveFrameResult>;

export { CameraId };
