/**
 * Live view (docs/agent-protocol.md 2.6): while head office says someone watches a camera, upload its pictures as
 * JPEGs about 640 pixels wide at about 13 a second with POST /api/agent/live/{camera}/frames, one request at a time
 * on a kept-alive connection; never upload otherwise.
 *
 * Frames come from the camera's running worker: `CameraWorker.watchLive` restarts its ffmpeg at the live rate while
 * at least one listener is registered (about a second without pictures), hands the recognition consumer only its
 * detect rate meanwhile, and goes back to the detect rate when the last listener leaves. So watching costs nothing
 * while nobody watches, and no second connection to the camera is opened (some cameras allow only a few).
 *
 * A camera's upload stops when a frame's answer says `watching: false`, when a `live` notice says `watch: false`,
 * or when its demand expires (`until`, counted on this PC's monotonic clock from the notice's own `until - at`, so
 * neither clock skew between the PCs nor a correction of this PC's clock matters). While the broker is unreachable, GET /api/agent/live is polled instead of
 * waiting for notices.
 */
import type { Logger } from 'pino';
import type { LiveDemand } from '../../shared/messages.js';
import type { Frame } from '../capture/frame.js';
import type { CaptureManager } from '../capture/manager.js';
import { AgentHttpError, type AgentApi } from './http.js';
import { pictureJpeg } from './picture.js';

export interface LiveRelayOptions {
  api: AgentApi;
  capture: CaptureManager;
  log: Logger;
  /** Pictures a second; default 13. */
  fps?: number;
  /** Picture width; default 640. */
  width?: number;
  /** How long a demand lasts when the notice does not say; default 10 s. */
  demandTtlMs?: number;
}

interface Session {
  camera: string;
  cameraId: string;
  /** This PC's monotonic clock (ms, `now()`): stop when this passes without a renewal. */
  until: number;
  stopped: boolean;
  /** Why it was stopped from outside (a notice, shutdown). */
  why?: string;
  wake: () => void;
  done: Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
/**
 * Milliseconds on a clock that only moves forward: an NTP correction of the wall clock must neither keep an upload
 * going (nor its pacing asleep) for as long as the clock was turned back, nor end it early.
 */
const now = () => performance.now();

export class LiveRelay {
  private readonly opts: LiveRelayOptions;
  private readonly log: Logger;
  private readonly sessions = new Map<string, Session>();
  private closed = false;
  private counters = { uploads: 0, bytes: 0, sessions: 0, failures: 0 };

  constructor(options: LiveRelayOptions) {
    this.opts = options;
    this.log = options.log;
  }

  get stats(): { uploads: number; bytes: number; sessions: number; failures: number; active: string[] } {
    return { ...this.counters, active: [...this.sessions.values()].map((s) => s.cameraId) };
  }

  /** A `live` notice from head office. */
  onDemand(d: LiveDemand): void {
    if (!d.watch) {
      this.end(d.camera, 'nobody watches any more');
      return;
    }
    const ttl = Date.parse(d.until) - Date.parse(d.at);
    this.demand(d.camera, d.camera_id, Number.isFinite(ttl) && ttl > 0 ? ttl : this.ttl);
  }

  /** The polling twin of the notices (GET /api/agent/live), for when the broker is unreachable. */
  async poll(): Promise<void> {
    if (this.closed) return;
    try {
      const { cameras } = await this.opts.api.liveDemands();
      for (const c of cameras) this.demand(c.camera, c.camera_id, this.ttl);
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'live demands not polled');
    }
  }

  /** Stops every upload; resolves when they have. */
  async close(): Promise<void> {
    this.closed = true;
    const done = [...this.sessions.values()].map((s) => {
      s.why ??= 'the agent stops';
      s.stopped = true;
      s.wake();
      return s.done;
    });
    await Promise.allSettled(done);
  }

  private get ttl(): number {
    return this.opts.demandTtlMs ?? 10_000;
  }

  private demand(camera: string, cameraId: string, ttlMs: number): void {
    if (this.closed) return;
    const until = now() + Math.min(ttlMs, 60_000);
    const existing = this.sessions.get(camera);
    if (existing && !existing.stopped) {
      existing.until = Math.max(existing.until, until);
      return;
    }
    const worker = this.opts.capture.worker(camera);
    if (!worker) {
      this.log.debug({ camera: cameraId }, 'live view asked for a camera that is not running here');
      return;
    }
    let wake: () => void = () => {};
    const session: Session = { camera, cameraId, until, stopped: false, wake: () => wake(), done: Promise.resolve() };
    let latest: Frame | undefined;
    const unsubscribe = worker.watchLive((frame) => {
      latest = frame;
      session.wake();
    });
    const nextFrame = async (after: Frame | undefined): Promise<Frame | undefined> => {
      while (!session.stopped && now() < session.until) {
        if (latest && latest !== after) return latest;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 500);
          timer.unref();
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return undefined;
    };
    this.sessions.set(camera, session);
    this.counters.sessions++;
    this.log.info({ camera: cameraId }, 'live view: uploading');
    session.done = this.upload(session, nextFrame).finally(() => {
      unsubscribe();
      session.stopped = true;
      if (this.sessions.get(camera) === session) this.sessions.delete(camera);
    });
  }

  private end(camera: string, why: string): void {
    const session = this.sessions.get(camera);
    if (!session || session.stopped) return;
    session.why = why;
    session.stopped = true;
    session.wake();
  }

  private async upload(session: Session, nextFrame: (after: Frame | undefined) => Promise<Frame | undefined>): Promise<void> {
    const interval = 1000 / (this.opts.fps ?? 13);
    const width = this.opts.width ?? 640;
    // The next picture is encoded while the previous one is on the wire (one request at a time, as the protocol asks).
    const encodeAfter = async (after: Frame | undefined) => {
      const frame = await nextFrame(after);
      return frame ? { frame, jpeg: await pictureJpeg(frame, { width, quality: 70 }) } : undefined;
    };
    let lastSentAt = 0;
    let why: string | undefined;
    let pending = encodeAfter(undefined);
    try {
      while (!session.stopped) {
        const next = await pending.catch((err: unknown) => {
          this.log.warn({ camera: session.cameraId, err: (err as Error).message }, 'live picture not encoded');
          return undefined;
        });
        if (!next) break;
        const wait = lastSentAt + interval - now();
        if (wait > 0) await sleep(wait);
        if (session.stopped || now() >= session.until) break;
        lastSentAt = now();
        const sent = this.opts.api.liveFrame(session.camera, next.jpeg);
        pending = encodeAfter(next.frame);
        try {
          const answer = await sent;
          this.counters.uploads++;
          this.counters.bytes += next.jpeg.length;
          if (!answer.watching) {
            why = 'head office says nobody watches';
            break;
          }
          // Someone watches right now: that renews the demand, whatever happened to the notices.
          session.until = Math.max(session.until, now() + this.ttl);
        } catch (err) {
          this.counters.failures++;
          if (err instanceof AgentHttpError && (err.code === 'not_found' || err.status === 401)) {
            why = err.message;
            break;
          }
          this.log.debug({ camera: session.cameraId, err: (err as Error).message }, 'live frame not uploaded');
          await sleep(500);
        }
      }
    } finally {
      session.stopped = true;
      session.wake();
      await pending.catch(() => undefined);
    }
    this.log.info({ camera: session.cameraId, why: session.why ?? why ?? 'the demand expired', uploads: this.counters.uploads }, 'live view: stopped');
  }
}
