import type { Config } from '../config.js';
import { isOnline, type ShopRow } from './service.js';

export type StepStatus = 'pass' | 'warn' | 'fail' | 'unknown';

export interface Step {
  name: string;
  status: StepStatus;
  detail: string;
  advice?: string;
}

/** What the check needs to know about each present camera. */
export interface CameraState {
  cameraId: string;
  label: string;
  enabled: boolean;
  connected: boolean | null;
  connectionReason: string | null;
  /** A door camera that is connected but not counting (server/cameras/counting.ts): why; null or absent otherwise. */
  countingProblem?: string | null;
}

export const STEP_NAMES = [
  "The shop's PC is online",
  'Recognition is running',
  'Cameras are connected',
  'Cameras can recognise faces',
  'Visits are reaching head office',
] as const;

/** Queued visits older than this, with nothing arriving, mean delivery is stuck. */
const STUCK_AFTER_MS = 10 * 60_000;

type Outcome = Omit<Step, 'name'>;

function ago(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 90) return `${s} seconds ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} minutes ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} hours ago`;
  return `${Math.round(h / 24)} days ago`;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

function online(shop: ShopRow, config: Config, now: number): Outcome {
  if (!shop.enrolledAt) {
    return { status: 'fail', detail: 'No shop PC has been enrolled for this shop yet.', advice: 'Create an enrolment code for this shop and enter it on the shop PC.' };
  }
  if (!shop.lastHeartbeatAt) {
    return {
      status: 'fail',
      detail: 'The shop PC was enrolled but has never reported.',
      advice: 'Check that the shop PC is switched on and can reach head office (the message broker port too).',
    };
  }
  if (!isOnline(shop, config, now)) {
    return {
      status: 'fail',
      detail: `The shop PC was last heard from ${ago(shop.lastHeartbeatAt, now)}.`,
      advice: 'Check that the shop PC is switched on, the Footfall service is running and the network is up.',
    };
  }
  return { status: 'pass', detail: `Last heard from ${ago(shop.lastHeartbeatAt, now)}${shop.agentVersion ? ` (agent ${shop.agentVersion})` : ''}.` };
}

function recognition(shop: ShopRow): Outcome {
  if (shop.recognitionRunning && shop.recognitionModel) {
    return { status: 'pass', detail: `Recognition is running with model ${shop.recognitionModel}.` };
  }
  const why = shop.recognitionProblem ? ` The shop PC says: ${shop.recognitionProblem}.` : '';
  return {
    status: 'fail',
    detail: `Recognition is not running on the shop PC.${why}`,
    advice: 'Restart the Footfall service on the shop PC; if it still does not start, reinstall the recognition model.',
  };
}

function connected(cams: CameraState[]): Outcome {
  const enabled = cams.filter((c) => c.enabled);
  const disabled = cams.length - enabled.length;
  const off = disabled > 0 ? ` ${plural(disabled, 'camera')} switched off.` : '';
  if (enabled.length === 0) {
    return {
      status: 'fail',
      detail: cams.length === 0 ? 'This shop has no cameras.' : `Every camera of this shop is switched off.`,
      advice: cams.length === 0 ? 'Add the shop’s cameras.' : 'Switch at least one camera on.',
    };
  }
  const pending = enabled.filter((c) => c.connected === null);
  const down = enabled.filter((c) => c.connected === false);
  if (down.length > 0) {
    const names = down.map((c) => `${c.label || c.cameraId}${c.connectionReason ? ` (${c.connectionReason.replace(/_/g, ' ')})` : ''}`).join(', ');
    return {
      status: 'fail',
      detail: `${plural(down.length, 'camera')} of ${enabled.length} not connecting: ${names}.${off}`,
      advice: 'Check the camera has power and network, and that its address, port, path, user name and password are right. Run a connection check on it.',
    };
  }
  if (pending.length > 0) {
    return {
      status: 'fail',
      detail: `The shop PC has not set up ${pending.map((c) => c.label || c.cameraId).join(', ')} yet.${off}`,
      advice: 'New cameras are picked up within a minute while the shop PC is online. If this persists, restart the Footfall service on the shop PC.',
    };
  }
  // A door camera that counts nobody while the shop's other cameras see people fails like one that does not connect.
  const silent = enabled.filter((c) => c.connected && c.countingProblem);
  if (silent.length > 0) {
    return {
      status: 'fail',
      detail: `${plural(silent.length, 'camera')} connected but not counting entries: ${silent.map((c) => `${c.label || c.cameraId} (${c.countingProblem})`).join(' ')}${off}`,
      advice: 'Look at the camera live: check it still sees the door and that its counting line lies across where people walk. The console shows each door camera’s counting health.',
    };
  }
  return { status: 'pass', detail: `All ${plural(enabled.length, 'camera')} connected.${off}` };
}

function faces(shop: ShopRow): Outcome {
  const f = shop.fractionBelowGate;
  const which = shop.worstCameraId ? ` on camera ${shop.worstCameraId}` : '';
  if (f === null) {
    return { status: 'warn', detail: 'No faces have been seen in the last hour, so face quality is not known yet.', advice: 'Run a placement check while someone walks past each camera.' };
  }
  const pct = Math.round(f * 100);
  if (f < 0.2) return { status: 'pass', detail: `${pct}% of faces are too poor to use${which} (under 20% is good).` };
  if (f < 0.5) {
    return {
      status: 'fail',
      detail: `${pct}% of faces are too poor to use${which}: marginal, so many visitors are silently not recognised.`,
      advice: 'Move or tilt the camera so faces are seen from the front, larger and better lit; then run a placement check.',
    };
  }
  return {
    status: 'fail',
    detail: `${pct}% of faces are too poor to use${which}: the camera needs moving.`,
    advice: 'Place the camera at head height facing the entrance, with light on the faces; then run a placement check.',
  };
}

function delivery(shop: ShopRow, now: number): Outcome {
  if (shop.dropped > 0) {
    return {
      status: 'fail',
      detail: `The shop PC lost ${plural(shop.dropped, 'visit')} because its queue overflowed; reports are short by that much.`,
      advice: 'Keep the shop PC connected to head office; if it is offline for long, check its disk space.',
    };
  }
  const last = shop.lastEventAt;
  if (shop.queued > 0 && (!last || now - Date.parse(last) > STUCK_AFTER_MS)) {
    return {
      status: 'fail',
      detail: `${plural(shop.queued, 'visit')} waiting on the shop PC ${last ? `and none has arrived since ${ago(last, now)}` : 'and none has ever arrived'}.`,
      advice: 'Check that the shop PC can reach the head-office message broker.',
    };
  }
  if (!last) return { status: 'warn', detail: 'No visits have reached head office yet.', advice: 'Visits appear once someone passes a connected camera.' };
  return { status: 'pass', detail: `The last visit arrived ${ago(last, now)}${shop.queued > 0 ? `; ${plural(shop.queued, 'visit')} in the queue` : ''}.` };
}

/**
 * The shop check: five steps in the spec's order. Checking stops at the first `fail`; later steps are `unknown`.
 * `warn` means passed with something to look at. `ok` is true when no step failed (so none is unknown either).
 */
export function checkShop(shop: ShopRow, cams: CameraState[], config: Config, now = Date.now()): { ok: boolean; steps: Step[] } {
  const runs: (() => Outcome)[] = [() => online(shop, config, now), () => recognition(shop), () => connected(cams), () => faces(shop), () => delivery(shop, now)];
  const steps: Step[] = [];
  let failed = false;
  runs.forEach((run, i) => {
    const name = STEP_NAMES[i]!;
    if (failed) {
      steps.push({ name, status: 'unknown', detail: 'Not checked: an earlier step failed.' });
      return;
    }
    const outcome = run();
    steps.push({ name, ...outcome });
    if (outcome.status === 'fail') failed = true;
  });
  return { ok: !failed, steps };
}
