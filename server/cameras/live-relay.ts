import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Broker, HeldMessage } from '../broker/broker.js';
import type { LiveTarget } from './live.js';

/**
 * Live view across head-office processes (docs/scale-out.md, "Live view across processes"), with an external broker:
 * the process that holds a viewer's stream announces its demand on the broker besides telling the shop PC, and the
 * process whose HTTP endpoint a frame upload reaches (any, behind a round-robin proxy) hands the frame on through the
 * broker when another process watches that camera. Every process listens (not shared) to RELAY_PREFIX. Topics under
 * `ff/_head-office/` (no company slug starts with `_`) are head office's alone: the broker's rules give shop PCs only
 * their own shop's topics. The embedded broker serves one process and needs none of this.
 */
export const RELAY_PREFIX = 'ff/_head-office/live/';
const DEMAND_TOPIC = `${RELAY_PREFIX}demand`;
const FRAME_TOPIC = `${RELAY_PREFIX}frame/`;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const Demand = z.object({
  from: z.string().min(1).max(64),
  camera: z.string().min(1).max(64),
  camera_id: z.string().max(200),
  shop_id: z.string().min(1).max(64),
  watch: z.boolean(),
  /** How long the demand lasts from when it is received: relative, so the machines' clocks need not agree. */
  ttl_ms: z.number().int().nonnegative().max(600_000),
});

interface RemoteDemand {
  cameraId: string;
  shopId: string;
  until: number;
}

export class LiveRelay {
  /** This process, as its messages name it (its own come back to it and are ignored). */
  readonly id = randomUUID();
  /** Camera uuid -> process id -> that process's demand. */
  private readonly remote = new Map<string, Map<string, RemoteDemand>>();
  private unlisten?: () => Promise<void>;

  constructor(
    private readonly broker: Broker,
    private readonly log: Logger,
    /** A frame another process received for a camera: for this process's viewers. */
    private readonly onFrame: (cameraUuid: string, base64: string) => void,
  ) {}

  async start(): Promise<void> {
    this.unlisten = await this.broker.listen(`${RELAY_PREFIX}#`, (m) => this.receive(m));
  }

  async close(): Promise<void> {
    await this.unlisten?.().catch(() => undefined);
    this.remote.clear();
  }

  /** This process watches `target` for the next `ttlMs` (renewed before it runs out), or stopped watching it. */
  demand(target: LiveTarget, watch: boolean, ttlMs: number): void {
    const body = { from: this.id, camera: target.cameraUuid, camera_id: target.cameraId, shop_id: target.shopId, watch, ttl_ms: watch ? ttlMs : 0 };
    this.broker.publish(DEMAND_TOPIC, Buffer.from(JSON.stringify(body)), { qos: 0, retain: false }).catch((err: unknown) => {
      this.log.debug({ err, camera: target.cameraUuid }, 'live demand not relayed to the other head-office processes');
    });
  }

  /** When the last other process's demand for the camera runs out (0: none). */
  remoteUntil(cameraUuid: string, now = Date.now()): number {
    let until = 0;
    for (const d of this.remote.get(cameraUuid)?.values() ?? []) if (d.until > now && d.until > until) until = d.until;
    return until;
  }

  /** The shop's cameras other processes watch now (the polling shop PC's list). */
  demandsOf(shopId: string, now = Date.now()): { camera: string; camera_id: string; until: number }[] {
    const out: { camera: string; camera_id: string; until: number }[] = [];
    for (const [camera, byProcess] of this.remote) {
      let best: RemoteDemand | undefined;
      for (const d of byProcess.values()) if (d.shopId === shopId && d.until > now && (!best || d.until > best.until)) best = d;
      if (best) out.push({ camera, camera_id: best.cameraId, until: best.until });
    }
    return out;
  }

  /** Hands a frame this process received to the processes that watch its camera (QoS 0: a late frame is no use). */
  forward(cameraUuid: string, base64: string): void {
    this.broker.publish(FRAME_TOPIC + cameraUuid, Buffer.from(`${this.id} ${base64}`), { qos: 0, retain: false }).catch((err: unknown) => {
      this.log.debug({ err, camera: cameraUuid }, 'live frame not relayed to the other head-office processes');
    });
  }

  private receive(m: HeldMessage): void {
    if (m.topic === DEMAND_TOPIC) {
      let parsed: z.infer<typeof Demand>;
      try {
        parsed = Demand.parse(JSON.parse(m.payload.toString('utf8')));
      } catch {
        this.log.warn({ topic: m.topic }, 'a live demand from another head-office process that breaks the contract was dropped');
        return;
      }
      if (parsed.from === this.id) return;
      const now = Date.now();
      let byProcess = this.remote.get(parsed.camera);
      if (!parsed.watch || parsed.ttl_ms === 0) {
        byProcess?.delete(parsed.from);
        if (byProcess?.size === 0) this.remote.delete(parsed.camera);
        return;
      }
      if (!byProcess) this.remote.set(parsed.camera, (byProcess = new Map()));
      byProcess.set(parsed.from, { cameraId: parsed.camera_id, shopId: parsed.shop_id, until: now + parsed.ttl_ms });
      this.prune(now);
      return;
    }
    if (m.topic.startsWith(FRAME_TOPIC)) {
      const space = m.payload.indexOf(0x20);
      if (space <= 0) return;
      if (m.payload.toString('latin1', 0, space) === this.id) return;
      const base64 = m.payload.toString('latin1', space + 1);
      // It goes into an event stream's data line as it is: base64 only, so nothing can end the line early.
      if (!BASE64.test(base64)) {
        this.log.warn({ topic: m.topic }, 'a live frame from another head-office process that is not base64 was dropped');
        return;
      }
      this.onFrame(m.topic.slice(FRAME_TOPIC.length), base64);
    }
  }

  /** Forgets demands whose time is up (a process that died sends no stop). */
  private prune(now: number): void {
    for (const [camera, byProcess] of this.remote) {
      for (const [from, d] of byProcess) if (d.until <= now) byProcess.delete(from);
      if (byProcess.size === 0) this.remote.delete(camera);
    }
  }
}
