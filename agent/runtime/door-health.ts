/**
 * Counting health for the heartbeat (`doors`, docs/body-counting.md "Counting health"): DoorCounting keeps
 * cumulative frame counts per camera; this turns them into counts over the last few minutes, so head office can
 * tell whether the detector keeps up with each door camera now rather than since the shop PC started.
 */
import type { DoorStats } from '../../shared/messages.js';
import type { DoorCameraStats } from './doors.js';

/** How far back each report reaches. */
export const DOOR_WINDOW_MS = 5 * 60_000;

const FIELDS = ['frames', 'paced', 'held', 'skipped', 'analysed', 'in', 'out'] as const;
type Counts = Pick<DoorCameraStats, (typeof FIELDS)[number]>;
interface Sample {
  at: number;
  counts: Counts;
}

export class DoorWindow {
  private readonly samples = new Map<string, Sample[]>();

  constructor(private readonly windowMs = DOOR_WINDOW_MS) {}

  /**
   * Takes the cumulative counts now and answers each camera's counts since its oldest sample within the window. A
   * camera seen for the first time (or whose counts went back: counting started again) is reported from the next call.
   */
  report(stats: Record<string, DoorCameraStats>, now = Date.now()): DoorStats[] {
    const out: DoorStats[] = [];
    for (const id of [...this.samples.keys()]) if (!(id in stats)) this.samples.delete(id);
    for (const [cameraId, s] of Object.entries(stats)) {
      const counts = Object.fromEntries(FIELDS.map((f) => [f, s[f]])) as Counts;
      let list = this.samples.get(cameraId) ?? [];
      if (list.length > 0 && FIELDS.some((f) => counts[f] < list[list.length - 1]!.counts[f])) list = [];
      // Keep the newest sample at or before the window's start as the base, and those after it.
      while (list.length > 1 && list[1]!.at <= now - this.windowMs) list.shift();
      const base = list[0];
      list.push({ at: now, counts });
      this.samples.set(cameraId, list);
      if (!base || now <= base.at) continue;
      const d = Object.fromEntries(FIELDS.map((f) => [f, counts[f] - base.counts[f]])) as Counts;
      out.push({ camera_id: cameraId.slice(0, 64), window_s: Math.round((now - base.at) / 100) / 10, ...d });
    }
    return out.slice(0, 256);
  }
}
