import { z } from 'zod';
import { Tuning } from '../../shared/agent-api.js';
import { ImageObject, routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

/** The spec's Check object (./presenter.ts presentCheck): always present, state `absent` when never checked. */
export const CheckObject = z
  .object({
    id: Uuid.optional(),
    kind: z.enum(['', 'connection', 'placement']),
    state: z.enum(['absent', 'requested', 'done', 'timed_out']),
    seconds: z.number().int().nullable().optional().meta({ description: 'Placement checks: how long the shop PC watches' }),
    requested_at: Timestamp.optional(),
    ok: z.boolean(),
    verdict: z.string().meta({ description: 'good, marginal, poor, no_faces, unreachable, auth_failed, no_stream, not_set_up, failed, no_answer; empty while requested or never checked' }),
    headline: z.string().meta({ description: 'Shown verbatim to the person next to the camera' }),
    advice: z.array(z.string()),
    detail: z.object({ faces: z.number().int(), fraction_below_gate: z.number().nullable() }),
    image: ImageObject,
    release_at: Timestamp.optional().meta({ description: 'While requested: when the check is released if the shop PC does not answer' }),
    released_at: Timestamp.optional(),
    answered_at: Timestamp.nullable().optional(),
  })
  .meta({ id: 'Check' });

/** Counting health of a door camera (./counting.ts), additive on the Camera. */
export const CountingHealthObject = z
  .object({
    role: z.enum(['door', 'both']).meta({ description: 'The camera role as applied (tuning.role, an absent one resolved)' }),
    state: z.enum(['counting', 'not_counting', 'no_line', 'off', 'unknown']).meta({
      description:
        '`counting`; `not_counting`: the camera is not connected, the shop PC reports counting not running, or it counted nobody in the last hour while the shop\'s other cameras saw people (a visit arrived, or another door camera counted); `no_line`: role counts a door but no line is drawn; `off`: camera switched off; `unknown`: the shop PC is offline or has not set the camera up',
    }),
    problem: z.string().nullable().meta({ description: 'What to look at, in words a person reads; null when all is well' }),
    counted_last_hour: z.number().int().meta({ description: 'Entries plus exits at this camera in the last 60 minutes' }),
    entries_last_hour: z.number().int(),
    exits_last_hour: z.number().int(),
    last_crossing_at: Timestamp.nullable().meta({ description: 'The last crossing this camera counted, ever; null: none' }),
    detector_keeps_up: z.boolean().nullable().meta({ description: 'The person detector dropped at most 10 % of the frames it should have looked at in the shop PC\'s last report (last ~5 minutes); null: no fresh report, or no frame reached the detector' }),
    frames_dropped_share: z.number().min(0).max(1).nullable().meta({ description: 'skipped / (skipped + analysed) over that report' }),
    stats: z
      .object({
        window_s: z.number().meta({ description: 'Seconds the counts cover (up to 300)' }),
        frames: z.number().int().meta({ description: 'Frames received from capture' }),
        paced: z.number().int().meta({ description: 'Left out to keep to door_fps (by design)' }),
        held: z.number().int().meta({ description: 'Held back by motion gating: nothing moved (by design)' }),
        skipped: z.number().int().meta({ description: 'Dropped because the detector was still busy' }),
        analysed: z.number().int().meta({ description: 'Looked at by the person detector' }),
        in: z.number().int(),
        out: z.number().int(),
      })
      .nullable()
      .meta({ description: "The shop PC's last report on this camera's counting (heartbeat `doors`); null: none yet" }),
    stats_at: Timestamp.nullable(),
  })
  .meta({ id: 'CountingHealth' });

/** The spec's Camera (./presenter.ts presentCamera). The password never leaves head office except to the shop PC. */
export const Camera = z
  .object({
    id: Uuid,
    site_id: Uuid,
    site: z.string(),
    site_slug: z.string(),
    camera_id: z.string(),
    label: z.string(),
    host: z.string(),
    port: z.number().int(),
    path: z.string(),
    username: z.string(),
    has_password: z.boolean(),
    max_width: z.number().int(),
    tuning: Tuning,
    enabled: z.boolean(),
    revision: z.number().int(),
    connected: z.boolean().nullable(),
    connection_reason: z.string().nullable(),
    last_seen_at: Timestamp.nullable(),
    snapshot: z.union([
      z.object({ available: z.literal(true), url: z.string(), auth: z.literal(true) }),
      z.object({ available: z.literal(false), url: z.string(), auth: z.literal(true), reason: z.string() }),
    ]),
    snapshot_at: Timestamp.nullable(),
    check: CheckObject,
    counting: CountingHealthObject.nullable().meta({ description: 'Additive. Cameras whose role counts a door (`door`, `both`): counting health; null for a `faces` camera. docs/shops-and-cameras.md' }),
  })
  .meta({ id: 'Camera' });

const camera = { id: 'Camera id (uuid) or an unambiguous camera_id' };

export const camerasDocs = routeDocs({
  'GET /api/cameras': { summary: 'Cameras of the company', responses: { 200: { description: 'Every camera with its state and last check', json: z.array(Camera) } } },
  'POST /api/sites/{site}/cameras': {
    summary: 'Add a camera to a shop',
    params: { site: 'Shop slug or id' },
    responses: { 201: { description: 'Added; the shop PC is told', json: Camera }, 409: 'The camera_id is taken in this shop', 503: '`no_encryption_key`: cannot store a camera password' },
  },
  'PATCH /api/cameras/{id}': {
    summary: 'Change a camera',
    description: '`camera_id` cannot change. An empty password removes it.',
    params: camera,
    responses: { 200: { description: 'The camera as changed', json: Camera }, 503: '`no_encryption_key`: cannot store a camera password' },
  },
  'DELETE /api/cameras/{id}': {
    summary: 'Remove a camera',
    params: camera,
    responses: { 200: { description: 'Removed (a tombstone the shop PC pulls)', json: z.object({ deleted: Uuid, camera_id: z.string(), site_id: Uuid }) } },
  },
  'POST /api/cameras/{id}/check': {
    summary: 'Run a connection or placement check',
    description: 'The shop PC claims the job; poll GET /api/cameras for the verdict.',
    params: camera,
    responses: { 202: { description: 'Requested', json: CheckObject }, 409: 'A check of this camera is still open' },
  },
  'GET /api/cameras/{id}/snapshot.jpg': {
    summary: 'The latest picture from the camera',
    params: camera,
    responses: { 200: { description: 'The picture', media: 'image/jpeg', headers: { 'Last-Modified': 'When the shop PC sent it' } }, 404: '`no_image`: no picture yet; `not_found`: no such camera' },
  },
  'GET /api/cameras/{id}/live': {
    summary: 'Live view (server-sent events)',
    description:
      'Asks the shop PC for frames and relays them. `waiting` comes at once (additive data: `{connected, connection_reason}`, the camera\'s last reported state, so a viewer of a camera known to be down can say why at once), then `frame` events (base64 JPEG, 640 pixels wide, about 13 a second); `: keep-alive` comments every 15 s. One view lasts at most FOOTFALL_LIVE_VIEW_MAX_S (five minutes): then `end`; reconnect to continue. Closing the connection stops the upload within seconds.',
    params: camera,
    responses: {
      200: {
        description: 'An event stream',
        events: {
          waiting: { description: 'The shop PC has been asked; data `{}`', data: z.object({}) },
          frame: { description: 'A base64 JPEG (the data line is the base64 text, not JSON)' },
          end: { description: 'The view is over', data: z.object({ reason: z.enum(['max_duration', 'shutdown']) }) },
        },
      },
    },
  },
  'GET /api/sites/{site}/live': {
    summary: "Live view of every switched-on camera of a shop, in one stream (server-sent events)",
    description:
      'The live grid: one connection for all the cameras (a browser opens at most six to a host over HTTP/1.1). Like GET /api/cameras/{id}/live, with `waiting` naming the cameras carried (at most 25, in camera_id order within the shop; each with its `connected` and `connection_reason`) and `frame` data a JSON object `{camera, camera_id, jpeg}` (jpeg: base64). 404 when the shop is unknown or has no shop PC address.',
    params: { site: 'Shop slug or id' },
    responses: {
      200: {
        description: 'An event stream',
        events: {
          waiting: { description: 'Each camera\'s shop PC has been asked', data: z.object({ cameras: z.array(z.object({ camera: Uuid, camera_id: z.string() })) }) },
          frame: { description: 'A frame of one camera', data: z.object({ camera: Uuid, camera_id: z.string(), jpeg: z.string().meta({ description: 'base64 JPEG, 640 pixels wide' }) }) },
          end: { description: 'The view is over', data: z.object({ reason: z.enum(['max_duration', 'shutdown']) }) },
        },
      },
    },
  },
});
