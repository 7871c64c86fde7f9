import type { Logger } from 'pino';
import { LIVE_DEMAND_TTL_S, LIVE_RENEW_S } from '../../shared/messages.js';
import type { Broker } from '../broker/broker.js';
import { notifyShop, type ShopAddress } from '../shops/notices.js';
import { LiveRelay } from './live-relay.js';

/** One watcher of a camera (an SSE response). */
export interface Viewer {
  /** A base64 JPEG. */
  frame(base64: string): void;
  /** The hub is shutting down: end the stream. */
  end(): void;
}

export interface LiveTarget {
  cameraUuid: string;
  cameraId: string;
  shopId: string;
  address: ShopAddress;
}

interface Watched {
  target: LiveTarget;
  viewers: Set<Viewer>;
  until: number;
  timer: NodeJS.Timeout;
}

/**
 * Live view relay. While a camera has at least one viewer, head office publishes a live demand to its shop PC every
 * LIVE_RENEW_S seconds (each good for LIVE_DEMAND_TTL_S); the shop PC uploads frames, and each upload is fanned out to
 * the viewers and answers whether anyone still watches. When the last viewer leaves, a `watch: false` demand is
 * published and the next upload is answered `watching: false`, so the upload stops within seconds either way.
 */
export class LiveHub {
  private readonly watched = new Map<string, Watched>();
  /** With an external broker: the other head-office processes' viewers (./live-relay.ts). */
  private relay: LiveRelay | undefined;

  constructor(
    private readonly broker: Broker,
    private readonly log: Logger,
  ) {}

  /** Several head-office processes on one external broker: demands and frames go through it to the others too. */
  async relayAcrossProcesses(): Promise<void> {
    const relay = new LiveRelay(this.broker, this.log, (camera, b64) => this.fanOut(this.watched.get(camera), b64));
    await relay.start();
    this.relay = relay;
  }

  /** Starts watching; returns the function that stops (idempotent). */
  watch(target: LiveTarget, viewer: Viewer): () => void {
    let w = this.watched.get(target.cameraUuid);
    if (!w) {
      const created: Watched = { target, viewers: new Set(), until: 0, timer: setInterval(() => this.demand(created, true), LIVE_RENEW_S * 1000) };
      created.timer.unref();
      this.watched.set(target.cameraUuid, created);
      w = created;
      this.demand(created, true);
    }
    const watched = w;
    watched.viewers.add(viewer);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      watched.viewers.delete(viewer);
      if (watched.viewers.size === 0 && this.watched.get(target.cameraUuid) === watched) {
        clearInterval(watched.timer);
        this.watched.delete(target.cameraUuid);
        this.demand(watched, false);
      }
    };
  }

  /**
   * A frame from the shop PC: relayed to every viewer of the camera here, and through the broker to the other
   * processes that have one. The answer says whether anyone, on any process, still watches.
   */
  frame(cameraUuid: string, jpeg: Buffer): { watching: boolean; until: string | null } {
    const w = this.watched.get(cameraUuid);
    const now = Date.now();
    const elsewhere = this.relay?.remoteUntil(cameraUuid, now) ?? 0;
    if (!w && elsewhere === 0) return { watching: false, until: null };
    const b64 = jpeg.toString('base64');
    this.fanOut(w, b64);
    if (elsewhere > 0) this.relay!.forward(cameraUuid, b64);
    return { watching: true, until: new Date(Math.max(w?.until ?? 0, elsewhere)).toISOString() };
  }

  private fanOut(w: Watched | undefined, b64: string): void {
    if (w) for (const v of w.viewers) v.frame(b64);
  }

  /** Cameras of a shop that someone watches now (here, or on another process). */
  demandsOf(shopId: string): { camera: string; camera_id: string; until: string }[] {
    const until = new Map<string, { camera_id: string; until: number }>();
    for (const w of this.watched.values()) if (w.target.shopId === shopId) until.set(w.target.cameraUuid, { camera_id: w.target.cameraId, until: w.until });
    for (const d of this.relay?.demandsOf(shopId) ?? []) {
      const here = until.get(d.camera);
      if (!here || d.until > here.until) until.set(d.camera, { camera_id: d.camera_id, until: d.until });
    }
    return [...until].map(([camera, d]) => ({ camera, camera_id: d.camera_id, until: new Date(d.until).toISOString() }));
  }

  viewers(cameraUuid: string): number {
    return this.watched.get(cameraUuid)?.viewers.size ?? 0;
  }

  /** Viewers of every camera together (metrics). */
  get totalViewers(): number {
    let n = 0;
    for (const w of this.watched.values()) n += w.viewers.size;
    return n;
  }

  /** Shutdown: ends every stream. */
  close(): void {
    void this.relay?.close();
    this.relay = undefined;
    for (const w of this.watched.values()) {
      clearInterval(w.timer);
      for (const v of w.viewers) v.end();
    }
    this.watched.clear();
  }

  private demand(w: Watched, watch: boolean): void {
    const now = Date.now();
    w.until = watch ? now + LIVE_DEMAND_TTL_S * 1000 : now;
    const t = w.target;
    this.relay?.demand(t, watch, LIVE_DEMAND_TTL_S * 1000);
    notifyShop(this.broker, this.log, t.address, 'live', {
      kind: 'live',
      camera: t.cameraUuid,
      camera_id: t.cameraId,
      watch,
      until: new Date(w.until).toISOString(),
      at: new Date(now).toISOString(),
    });
  }
}
