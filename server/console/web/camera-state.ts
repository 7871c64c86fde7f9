import { plural } from './dom.js';
import type { Camera, Shop } from './types.js';

/**
 * "Cameras up" from the same per-camera state the camera cards show (docs/console.md): a camera is up only while its
 * own card says "connected". The shop PC's heartbeat count is not used: it lags the cameras' own reports, and a
 * card saying "not connecting" beside "2 of 2 up" is two truths. While the shop PC is offline nothing is known to be
 * up; before any camera exists or any report came, the words say so (never "0 of 0").
 */
export function camerasUp(s: Shop, cameras: readonly Camera[]): { text: string; cls: string } {
  if (cameras.length === 0) return { text: 'no cameras yet', cls: 'unknown' };
  if (!s.last_heartbeat_at) return { text: `${plural(cameras.length, 'camera')} added, not reported yet`, cls: 'unknown' };
  if (!s.online) return { text: 'unknown: the shop PC is offline', cls: 'unknown' };
  const on = cameras.filter((c) => c.enabled);
  const off = cameras.length - on.length;
  const offWords = off > 0 ? ` (${off} switched off)` : '';
  if (on.length === 0) return { text: `none: every camera is switched off`, cls: 'unknown' };
  const up = on.filter((c) => c.connected === true).length;
  const waiting = on.filter((c) => c.connected === null).length;
  const waitWords = waiting > 0 ? `, ${waiting} not set up yet` : '';
  return { text: `${up} of ${on.length} up${waitWords}${offWords}`, cls: up < on.length ? (up + waiting < on.length ? 'bad' : 'warn') : 'good' };
}
