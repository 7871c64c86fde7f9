import { cameraRole, type Verdict } from '../../shared/agent-api.js';
import type { CountingHealth } from './counting.js';
import { stateOf } from './checks.js';
import type { CameraView, CheckRow } from './service.js';

export const snapshotUrl = (cameraUuid: string) => `/api/cameras/${cameraUuid}/snapshot.jpg`;

type Wording = { headline: string; advice: string[] };

const pct = (f: number | null) => (f === null ? '' : ` (${Math.round(f * 100)}% of faces)`);

/** What the person next to the camera reads, per verdict. Displayed verbatim by the apps. */
function wording(check: CheckRow): Wording {
  const verdict = check.verdict as Verdict;
  const placement = check.kind === 'placement';
  switch (verdict) {
    case 'good':
      return placement
        ? {
            headline: `The camera sees faces well${check.fractionBelowGate === null ? '' : ` (only ${Math.round(check.fractionBelowGate * 100)}% of faces too poor to use)`}.`,
            advice: [],
          }
        : { headline: 'The shop PC opens this camera’s stream.', advice: ['Run a placement check while someone walks in, to check that faces are seen well.'] };
    case 'marginal':
      return {
        headline: `Many faces are too small, blurred or turned away${pct(check.fractionBelowGate)}: about half the visitors are not recognised.`,
        advice: ['Tilt the camera so faces are seen from the front.', 'Move it closer to where people walk, or zoom in.', 'Add light on the faces; avoid a bright window behind people.'],
      };
    case 'poor':
      return {
        headline: `Most faces are unusable${pct(check.fractionBelowGate)}: this camera needs moving.`,
        advice: ['Mount the camera at about head height, facing the entrance.', 'Make sure faces fill more of the picture (move closer or zoom in).', 'Add light on the faces; avoid a bright window behind people.'],
      };
    case 'no_faces':
      return {
        headline: 'Nobody was seen during the check.',
        advice: ['Run the check again while someone walks through the entrance towards the camera.', 'Check that the camera points at the entrance.'],
      };
    case 'unreachable':
      return {
        headline: 'The shop PC cannot reach this camera.',
        advice: ['Check that the camera has power and its network cable is in.', 'Check the camera’s address (host) and port.'],
      };
    case 'auth_failed':
      return { headline: 'The camera refused the user name or password.', advice: ['Check the user name and password set on the camera, then enter them again here.'] };
    case 'no_stream':
      return {
        headline: 'The camera answered but sent no usable video.',
        advice: ['Check the stream path for this camera model.', 'Set the camera to stream H.264.'],
      };
    case 'not_set_up':
      return {
        headline: 'The shop PC has not set this camera up yet.',
        advice: ['Wait a minute and check again: the shop PC picks up new cameras within a minute while it is online.'],
      };
    default:
      return { headline: 'The check could not be completed.', advice: ['Try again in a minute.'] };
  }
}

/** The spec's Check object; always present (state `absent` when never checked). */
export function presentCheck(view: CameraView, now = Date.now()) {
  const check = view.check;
  const state = stateOf(check, now);
  const image = imageOf(view, check);
  if (!check) {
    return {
      kind: '',
      state,
      ok: false,
      verdict: '',
      headline: 'This camera has not been checked yet.',
      advice: ['Run a connection check, then a placement check while someone walks in.'],
      detail: { faces: 0, fraction_below_gate: null },
      image,
    };
  }
  const base = {
    id: check.id,
    kind: check.kind,
    state,
    ...(check.kind === 'placement' ? { seconds: check.seconds } : {}),
    requested_at: check.requestedAt,
  };
  if (state === 'requested') {
    return {
      ...base,
      ok: false,
      verdict: '',
      headline:
        check.kind === 'placement'
          ? `Checking: walk through the entrance towards the camera for the next ${check.seconds} seconds.`
          : 'Checking: waiting for the shop PC to open the camera’s stream.',
      advice: [],
      detail: { faces: 0, fraction_below_gate: null },
      image,
      release_at: check.releaseAt,
    };
  }
  if (state === 'timed_out') {
    return {
      ...base,
      ok: false,
      verdict: 'no_answer',
      headline: 'The shop PC did not answer the check in time.',
      advice: ['Check that the shop PC is online (see the shop check), then run the check again.'],
      detail: { faces: 0, fraction_below_gate: null },
      image,
      released_at: check.releaseAt,
    };
  }
  const words = wording(check);
  return {
    ...base,
    ok: check.verdict === 'good',
    verdict: check.verdict ?? 'failed',
    headline: words.headline,
    advice: check.reason ? [...words.advice, `The shop PC says: ${check.reason}`] : words.advice,
    detail: { faces: check.faces ?? 0, fraction_below_gate: check.fractionBelowGate },
    image,
    answered_at: check.answeredAt,
  };
}

function imageOf(view: CameraView, check: CheckRow | null) {
  if (check?.hasImage && view.camera.snapshotAt) return { available: true, url: snapshotUrl(view.camera.id), auth: true };
  return { available: false, reason: check?.state === 'done' ? 'The shop PC sent no picture with this check.' : 'No picture yet.' };
}

/** The spec's Camera. The password never leaves head office except to the shop PC. */
export function presentCamera(view: CameraView, now = Date.now(), counting: ReadonlyMap<string, CountingHealth> = new Map()) {
  const c = view.camera;
  return {
    id: c.id,
    site_id: view.shop.id,
    site: view.shop.name,
    site_slug: view.shop.slug,
    camera_id: c.cameraId,
    label: c.label,
    host: c.host,
    port: c.port,
    path: c.path,
    username: c.username,
    has_password: c.password !== null,
    max_width: c.maxWidth,
    // The role as applied (an absent one resolved: docs/shops-and-cameras.md "Camera roles").
    tuning: { ...c.tuning, role: cameraRole(c.tuning) },
    enabled: c.enabled,
    revision: c.revision,
    connected: c.connected,
    connection_reason: c.connectionReason,
    last_seen_at: c.lastSeenAt,
    snapshot: c.snapshotAt
      ? { available: true, url: snapshotUrl(c.id), auth: true }
      : { available: false, url: snapshotUrl(c.id), auth: true, reason: 'The shop PC has not sent a picture from this camera yet.' },
    snapshot_at: c.snapshotAt,
    check: presentCheck(view, now),
    /** Door cameras (role `door` or `both`): counting health; null for a `faces` camera. */
    counting: counting.get(c.id) ?? null,
  };
}
