/**
 * The scale benchmark's shop PCs (bench/scale.ts): what they publish and how. Each shop PC is one mqtt.js connection
 * with 4 cameras publishing 0.1 visits a second each (QoS 1) and a heartbeat every 30 s (QoS 0).
 */
import { randomUUID } from 'node:crypto';
import { connectAsync, type MqttClient } from 'mqtt';
import { v7 as uuidv7 } from 'uuid';
import { encodeEmbedding } from '../shared/messages.js';
import { upTopic } from '../shared/topics.js';
import { Faces } from '../server/identity/synthetic.js';
import { api } from './api.js';

/** The customers filled in before the run (SCALE_GALLERY; the figure, 20,000, by default). */
export const GALLERY = Number(process.env.SCALE_GALLERY ?? 20_000);
export const MODEL = 'bench-model';
export const CAMERAS = 4;
/** Visits a second per camera (a busy shop door: 360 passes an hour). */
export const PER_CAMERA = 0.1;
export const HEARTBEAT_S = 30;

interface Pc {
  client: MqttClient;
  visitTopic: string;
  heartbeatTopic: string;
}

export interface Window {
  published: number;
  acked: number;
  failed: number;
  /** PUBACK latencies (ms). */
  lat: number[];
  /** PUBACKs slower than SLOW_MS: when published (epoch ms) and how long they took, to find stalls in time. */
  slow: { at: number; ms: number }[];
}

/** A PUBACK this slow is listed with its time (the step's limit on the p99). */
export const SLOW_MS = 250;

const newWindow = (): Window => ({ published: 0, acked: 0, failed: 0, lat: [], slow: [] });

/** SCALE_V4_IDS=1: random visit ids, as shop PCs made them before session 32 (a before / after of UUIDv7). */
const V4_IDS = process.env.SCALE_V4_IDS === '1';

/** The share of visits with a face unless told otherwise (SCALE_FACES): the rest are counted without identity. */
export const DEFAULT_FACE_SHARE = 0.9;

/** The visits' content: gallery faces (returning), new faces (`newShare` of all), no face (1 - `faceShare` of all). */
export class Visits {
  private readonly faces = new Faces(99);
  constructor(
    private readonly gallery: Float32Array,
    private readonly newShare: number,
    private readonly faceShare = DEFAULT_FACE_SHARE,
  ) {}

  /** A visit message and its id. */
  next(): { id: string; body: string } {
    const r = this.faces.rng.uniform();
    const id = V4_IDS ? randomUUID() : uuidv7(); // as the shop PC makes them (agent/vision/visit-maker.ts)
    const at = new Date().toISOString();
    const cam = `cam-${1 + Math.floor(this.faces.rng.uniform() * CAMERAS)}`;
    let face = '';
    let quality = 0.2;
    let gate = false;
    if (r < this.faceShare) {
      const e =
        r < this.faceShare - this.newShare
          ? this.faces.sighting(this.gallery, 0.74 + 0.16 * this.faces.rng.uniform(), Math.floor(this.faces.rng.uniform() * GALLERY))
          : this.faces.identity();
      face = `,"embedding":"${encodeEmbedding(e)}","recognition_model":"${MODEL}"`;
      quality = 0.8;
      gate = true;
    }
    const body = `{"visit_id":"${id}","occurred_at":"${at}","camera_id":"${cam}","quality":${quality},"passed_gate":${gate}${face},"attributes":{"gender":"female","age":31,"emotion":"neutral"},"track":{"id":"t-${randomUUID().slice(0, 8)}","first_seen_at":"${at}","last_seen_at":"${at}","frames":20}}`;
    return { id, body };
  }
}

function heartbeat(): string {
  return JSON.stringify({
    sent_at: new Date().toISOString(),
    agent_version: 'bench',
    recognition_model: MODEL,
    recognition_running: true,
    cameras_up: CAMERAS,
    cameras_total: CAMERAS,
    queued: 0,
    dropped: 0,
    fraction_below_gate: 0.1,
  });
}

/** Runs `n` tasks with at most `width` at once. */
export async function pool<T>(n: number, width: number, f: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await f(i);
      }
    }),
  );
  return out;
}

export interface Enrolled {
  username: string;
  password: string;
  client_id: string;
  visitTopic: string;
  heartbeatTopic: string;
}

/**
 * Opens shops `from`..`to - 1` and enrols a shop PC at each (its broker login), `width` at once. On PostgreSQL, 8
 * shops opened at once in one company ran out of SERIALIZABLE retries (a 500 from POST /api/sites, 2026-11-30), so
 * the benchmark opens fewer at once there.
 */
export async function enrol(url: string, token: string, companySlug: string, from: number, to: number, width = 8): Promise<Enrolled[]> {
  return pool(to - from, width, async (k) => {
    const i = from + k;
    const shop = await api(url, 'POST', '/api/sites', { name: `Shop ${i + 1}` }, token);
    const code = (await api(url, 'POST', `/api/sites/${shop.slug}/enrolment-code`, {}, token)).code;
    const enrolled = (await api(url, 'POST', '/api/agent/enrol', { code, hostname: `pc-${i}` })) as unknown as { broker: { username: string; password: string; client_id: string } };
    return { ...enrolled.broker, visitTopic: upTopic(companySlug, shop.slug!, 'visit'), heartbeatTopic: upTopic(companySlug, shop.slug!, 'heartbeat') };
  });
}

export class Load {
  readonly pcs: Pc[] = [];
  private timer: NodeJS.Timeout | undefined;
  private window = newWindow();
  private inFlight = 0;
  private hbNext = 0;

  /** `sent`: told each visit's id and when it was published (performance.now()), for the time to stored. */
  constructor(
    private readonly visits: Visits,
    private readonly brokerUrl: string,
    private readonly sent?: (id: string, at: number) => void,
  ) {}

  async connect(logins: Enrolled[]): Promise<void> {
    const more = await pool(logins.length, 50, async (i) => {
      const l = logins[i]!;
      const client = await connectAsync(this.brokerUrl, { username: l.username, password: l.password, clientId: l.client_id, reconnectPeriod: 0, keepalive: 120 });
      return { client, visitTopic: l.visitTopic, heartbeatTopic: l.heartbeatTopic };
    });
    this.pcs.push(...more);
  }

  /** Publishes `perSecond` visits a second spread over the first `pcs` shop PCs, and their heartbeats; every 20 ms. */
  start(pcs: number, perSecond: number): void {
    this.stop();
    const t0 = performance.now();
    let sent = 0;
    let hbSent = 0;
    let rr = 0;
    const hbPerSecond = pcs / HEARTBEAT_S;
    this.timer = setInterval(() => {
      const s = (performance.now() - t0) / 1000;
      const due = Math.floor(s * perSecond);
      for (; sent < due; sent++) {
        const pc = this.pcs[rr++ % pcs]!;
        this.publish(pc);
      }
      const hbDue = Math.floor(s * hbPerSecond);
      for (; hbSent < hbDue; hbSent++) {
        const pc = this.pcs[this.hbNext++ % pcs]!;
        pc.client.publish(pc.heartbeatTopic, heartbeat(), { qos: 0 });
      }
    }, 20);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The counts since the last call; a new window starts. */
  take(): Window {
    const w = this.window;
    this.window = newWindow();
    return w;
  }

  /** Waits until every publish has its PUBACK (or `timeoutMs`); how many are still waiting. */
  async settled(timeoutMs: number): Promise<number> {
    const until = Date.now() + timeoutMs;
    while (this.inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    return this.inFlight;
  }

  async close(): Promise<void> {
    this.stop();
    await Promise.all(this.pcs.map((p) => p.client.endAsync(true).catch(() => undefined)));
  }

  private publish(pc: Pc): void {
    const w = this.window;
    const at = performance.now();
    const v = this.visits.next();
    w.published++;
    this.inFlight++;
    this.sent?.(v.id, at);
    pc.client.publish(pc.visitTopic, v.body, { qos: 1 }, (err) => {
      this.inFlight--;
      if (err) w.failed++;
      else {
        w.acked++;
        const took = performance.now() - at;
        w.lat.push(took);
        if (took >= SLOW_MS) w.slow.push({ at: Date.now() - took, ms: took });
      }
    });
  }
}
