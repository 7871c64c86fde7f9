/**
 * Camera pictures for head office: every `snapshot_interval_s`, the newest frame of each connected camera as a
 * JPEG about 640 pixels wide (sharp), uploaded with PUT /api/agent/cameras/{camera}/snapshot. A camera that has just
 * connected gets one at once, so a manager who adds a camera sees it within seconds.
 */
import type { Logger } from 'pino';
import type { CameraConfig } from '../../shared/agent-api.js';
import type { CaptureManager } from '../capture/manager.js';
import { AgentHttpError, type AgentApi } from './http.js';
import { pictureJpeg } from './picture.js';

export const PICTURE_WIDTH = 640;

export interface SnapshotOptions {
  api: AgentApi;
  capture: CaptureManager;
  log: Logger;
  /** Only frames at most this old are uploaded; default 15 s. */
  maxAgeMs?: number;
  /** A camera list changed: `not_found` for a camera. */
  onUnknownCamera?: () => void;
}

export class Snapshots {
  private readonly opts: SnapshotOptions;
  private readonly busy = new Set<string>();
  private readonly soon = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  private counters = { uploaded: 0, failed: 0 };

  constructor(options: SnapshotOptions) {
    this.opts = options;
  }

  get stats(): { uploaded: number; failed: number } {
    return { ...this.counters };
  }

  /** One picture of every connected camera in `cameras`. */
  async uploadAll(cameras: CameraConfig[]): Promise<void> {
    for (const camera of cameras) {
      if (this.stopped) return;
      if (camera.enabled) await this.upload(camera);
    }
  }

  /** A picture of this camera in about `delayMs` (once its first frames are in). */
  uploadSoon(camera: CameraConfig, delayMs = 1000): void {
    if (this.stopped || this.soon.has(camera.id)) return;
    const timer = setTimeout(() => {
      this.soon.delete(camera.id);
      void this.upload(camera);
    }, delayMs);
    timer.unref();
    this.soon.set(camera.id, timer);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.soon.values()) clearTimeout(t);
    this.soon.clear();
  }

  /** Uploads the camera's newest frame; false when there is none or the upload failed. */
  async upload(camera: CameraConfig): Promise<boolean> {
    if (this.stopped || this.busy.has(camera.id)) return false;
    const worker = this.opts.capture.worker(camera.id);
    const frame = worker?.state.connected ? worker.latest() : undefined;
    if (!frame || Date.now() - frame.at.getTime() > (this.opts.maxAgeMs ?? 15_000)) return false;
    this.busy.add(camera.id);
    try {
      const jpeg = await pictureJpeg(frame, { width: PICTURE_WIDTH, quality: 80 });
      await this.opts.api.putSnapshot(camera.id, jpeg);
      this.counters.uploaded++;
      this.opts.log.debug({ camera: camera.camera_id, bytes: jpeg.length }, 'snapshot uploaded');
      return true;
    } catch (err) {
      this.counters.failed++;
      if (err instanceof AgentHttpError && err.code === 'not_found') this.opts.onUnknownCamera?.();
      this.opts.log.debug({ camera: camera.camera_id, err: (err as Error).message }, 'snapshot not uploaded');
      return false;
    } finally {
      this.busy.delete(camera.id);
    }
  }
}
