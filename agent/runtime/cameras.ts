/**
 * The camera list: pulled from head office (GET /api/agent/cameras) at start, after every broker (re)connection, on
 * every `cameras_changed` notice and at least every `camera_sync_s`; applied to the CaptureManager as the desired
 * state (a revision bump restarts only that camera, tombstones and disabled cameras stop); each camera's state
 * reported (POST /api/agent/cameras/state) when it changes and every `camera_sync_s`.
 *
 * The last list is kept in `<data dir>/cameras.json` (0600: it holds camera passwords), so a shop PC that restarts
 * while head office is unreachable still counts visitors with the cameras it had.
 */
import type { Logger } from 'pino';
import { CameraList, LIMITS, type CameraConfig, type CameraStateReport } from '../../shared/agent-api.js';
import type { CameraSpec, CameraStatus, CaptureManager } from '../capture/manager.js';
import { giveToFolderOwner, readIfExists, writePrivateFile } from './files.js';
import { AgentHttpError, type AgentApi } from './http.js';

export interface CameraSyncOptions {
  api: AgentApi;
  capture: CaptureManager;
  log: Logger;
  /** Where the last list is kept; undefined: not kept. */
  cacheFile?: string;
  /**
   * The shop's id (`site.id`), kept with the list: a list kept for another shop (the PC was enrolled again for
   * another one) is not started, its cameras are not on this shop's network.
   */
  site?: string;
  /** A removed camera's `camera_id` that no present camera carries any more (recognition forgets it). */
  onForget?: (cameraId: string) => void;
  /** A list was applied (from head office or the kept file): body counting loads its detector when a camera has a line. */
  onApplied?: (cameras: CameraConfig[], list: CameraList) => void;
  /** A camera's stream opened (a snapshot is due). */
  onConnected?: (camera: CameraConfig) => void;
  /** Wait after a state change before reporting, so that changes of several cameras go in one request. */
  reportDelayMs?: number;
}

export function cameraSpec(c: CameraConfig): CameraSpec {
  return {
    id: c.id,
    camera_id: c.camera_id,
    host: c.host,
    port: c.port,
    path: c.path,
    username: c.username,
    password: c.password,
    max_width: c.max_width,
    enabled: c.enabled,
    revision: c.revision,
    fps: c.tuning.detect_fps,
    rotate: c.tuning.rotate,
  };
}

/** What decides whether the list changed: ids, revisions, enabled flags and tombstones (the revision covers edits). */
function digestOf(list: CameraList): string {
  return JSON.stringify([list.cameras.map((c) => [c.id, c.revision, c.enabled]).sort(), list.removed.map((r) => r.id).sort(), list.recognition ?? 'all']);
}

export class CameraSync {
  private readonly opts: CameraSyncOptions;
  private readonly log: Logger;
  private current: CameraList | undefined;
  private digest = '';
  private pulling: Promise<boolean> | undefined;
  private pullAgain = false;
  private readonly reported = new Map<string, string>();
  private reportTimer: NodeJS.Timeout | undefined;
  private reporting: Promise<void> | undefined;
  private reportAgain = false;
  private stopped = false;
  private lastPullProblem: string | undefined;
  /** The list started from disk was written by an older agent, without the shop's id. */
  private keptWithoutSite = false;
  private counters = { pulls: 0, applied: 0, reports: 0 };
  private readonly onState = (status: CameraStatus) => this.stateChanged(status);

  constructor(options: CameraSyncOptions) {
    this.opts = options;
    this.log = options.log;
    options.capture.on('state', this.onState);
  }

  get stats(): { pulls: number; applied: number; reports: number } {
    return { ...this.counters };
  }

  /** Present cameras (enabled or not) of the latest list. */
  cameras(): CameraConfig[] {
    return this.current?.cameras ?? [];
  }

  /** A present camera by uuid or camera_id. */
  find(ref: string): CameraConfig | undefined {
    return this.cameras().find((c) => c.id === ref.toLowerCase() || c.camera_id === ref);
  }

  /** Enabled cameras with an open stream / enabled cameras. */
  counts(): { up: number; total: number } {
    const enabled = this.cameras().filter((c) => c.enabled);
    const up = enabled.filter((c) => this.opts.capture.worker(c.id)?.state.connected).length;
    return { up, total: enabled.length };
  }

  /** Starts the cameras of the list kept on disk (head office may be unreachable right now). */
  async loadCache(): Promise<boolean> {
    if (!this.opts.cacheFile) return false;
    try {
      // Left by an earlier run as root in the service's data folder: the service's again (it could not read it).
      await giveToFolderOwner(this.opts.cacheFile).catch((err: unknown) => this.log.warn({ err, file: this.opts.cacheFile }, 'kept camera list not given to the data folder owner'));
      const text = await readIfExists(this.opts.cacheFile);
      if (text === undefined) return false;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        // Not the parser's message: it quotes the text around the fault, which may be a camera's password.
        json = undefined;
      }
      const parsed = CameraList.safeParse(json);
      if (!parsed.success) {
        this.log.warn({ file: this.opts.cacheFile }, 'kept camera list is unreadable; waiting for head office');
        return false;
      }
      // A file without the shop's id is an older agent's: this shop's, written again with the id at the next pull.
      const site = (json as { site_id?: unknown }).site_id;
      if (this.opts.site && site !== undefined && site !== this.opts.site) {
        this.log.info({ file: this.opts.cacheFile }, "kept camera list is another shop's (this PC was enrolled again); waiting for head office");
        return false;
      }
      this.keptWithoutSite = this.opts.site !== undefined && site === undefined;
      // Head office answered first: its list is newer.
      if (this.current) return false;
      this.log.info({ cameras: parsed.data.cameras.length, synced_at: parsed.data.synced_at }, 'starting the cameras of the last known list');
      await this.apply(parsed.data, false);
      return true;
    } catch (err) {
      this.log.warn({ err, file: this.opts.cacheFile }, 'kept camera list not read');
      return false;
    }
  }

  /** Pulls and applies the list; concurrent calls share one pull (and one more runs if asked for meanwhile). */
  pull(): Promise<boolean> {
    if (this.pulling) {
      this.pullAgain = true;
      return this.pulling;
    }
    const run = async (): Promise<boolean> => {
      let ok = false;
      do {
        this.pullAgain = false;
        ok = await this.pullOnce();
      } while (this.pullAgain && !this.stopped);
      return ok;
    };
    this.pulling = run().finally(() => {
      this.pulling = undefined;
    });
    return this.pulling;
  }

  /** Reports every enabled camera's state (the periodic report). */
  reportAll(): Promise<void> {
    this.reported.clear();
    return this.flushReports();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.reportTimer);
    this.opts.capture.off('state', this.onState);
  }

  private async pullOnce(): Promise<boolean> {
    if (this.stopped) return false;
    let list: CameraList;
    try {
      list = await this.opts.api.cameras();
      this.counters.pulls++;
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      if (problem !== this.lastPullProblem) {
        const unauthorized = err instanceof AgentHttpError && err.status === 401;
        if (unauthorized) this.log.error({ problem }, 'head office no longer accepts this shop PC: enrol it again with a new code (footfall enrol --force ...)');
        else this.log.warn({ problem }, 'camera list not pulled; keeping the current cameras');
      }
      this.lastPullProblem = problem;
      return false;
    }
    if (this.lastPullProblem) this.log.info('camera list pulled again');
    this.lastPullProblem = undefined;
    if (this.stopped) return false;
    await this.apply(list, true);
    return true;
  }

  private async apply(list: CameraList, fromHeadOffice: boolean): Promise<void> {
    const digest = digestOf(list);
    const changed = digest !== this.digest;
    const previous = this.current;
    this.current = list;
    this.digest = digest;
    // The manager compares every setting itself; applying an unchanged list is a no-op.
    const result = await this.opts.capture.apply(list.cameras.map(cameraSpec));
    if (result.started.length || result.restarted.length || result.stopped.length) this.counters.applied++;
    // Forget what was reported about cameras no longer running (disabled, removed).
    const running = new Set(list.cameras.filter((c) => c.enabled).map((c) => c.id));
    for (const id of [...this.reported.keys()]) if (!running.has(id)) this.reported.delete(id);
    if (previous) {
      const present = new Set(list.cameras.map((c) => c.camera_id));
      const gone = new Set(previous.cameras.filter((c) => !present.has(c.camera_id)).map((c) => c.camera_id));
      for (const cameraId of gone) this.opts.onForget?.(cameraId);
    }
    if (changed) {
      this.log.info(
        { cameras: list.cameras.length, enabled: running.size, removed: list.removed.length, ...result },
        fromHeadOffice ? 'camera list applied' : 'kept camera list applied',
      );
    }
    if (fromHeadOffice && this.opts.cacheFile && (changed || this.keptWithoutSite)) {
      this.keptWithoutSite = false;
      const kept = this.opts.site ? { site_id: this.opts.site, ...list } : list;
      await writePrivateFile(this.opts.cacheFile, JSON.stringify(kept)).catch((err: unknown) => this.log.warn({ err }, 'camera list not kept on disk'));
    }
    if (running.size > 0) this.scheduleReport();
    this.opts.onApplied?.(list.cameras, list);
  }

  private stateChanged(status: CameraStatus): void {
    if (this.stopped) return;
    if (status.state.connected) {
      const camera = this.cameras().find((c) => c.id === status.id);
      if (camera) this.opts.onConnected?.(camera);
    }
    this.scheduleReport();
  }

  private scheduleReport(): void {
    if (this.reportTimer || this.stopped) return;
    this.reportTimer = setTimeout(() => {
      this.reportTimer = undefined;
      void this.flushReports();
    }, this.opts.reportDelayMs ?? 200);
    this.reportTimer.unref();
  }

  /** Sends the states that differ from what head office last accepted. */
  private flushReports(): Promise<void> {
    if (this.reporting) {
      this.reportAgain = true;
      return this.reporting;
    }
    const run = async () => {
      do {
        this.reportAgain = false;
        await this.reportOnce();
      } while (this.reportAgain && !this.stopped);
    };
    this.reporting = run().finally(() => {
      this.reporting = undefined;
    });
    return this.reporting;
  }

  private async reportOnce(): Promise<void> {
    const entries: { camera: string; connected: boolean; reason: string; key: string }[] = [];
    for (const camera of this.cameras()) {
      if (!camera.enabled) continue;
      const state = this.opts.capture.worker(camera.id)?.state;
      if (!state) continue;
      const key = `${state.connected}|${state.code}`;
      if (this.reported.get(camera.id) === key) continue;
      entries.push({ camera: camera.id, connected: state.connected, reason: state.code, key });
    }
    for (let i = 0; i < entries.length && !this.stopped; i += LIMITS.stateReports) {
      const chunk = entries.slice(i, i + LIMITS.stateReports);
      const report: CameraStateReport = { cameras: chunk.map(({ camera, connected, reason }) => ({ camera, connected, reason })) };
      try {
        const answer = await this.opts.api.reportStates(report);
        this.counters.reports++;
        for (const e of chunk) if (!answer.unknown.includes(e.camera)) this.reported.set(e.camera, e.key);
        if (answer.unknown.length > 0) void this.pull();
      } catch (err) {
        // Left unreported: the next change or the periodic report sends them again.
        this.log.debug({ err: (err as Error).message }, 'camera states not reported');
        return;
      }
    }
  }
}
