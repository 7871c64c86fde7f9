import type { Logger } from 'pino';
import { CrossingMessage } from '../../shared/messages.js';
import { brokerUsername, parseTopic } from '../../shared/topics.js';
import type { Broker, HeldMessage } from '../broker/broker.js';
import type { Store } from '../db/open.js';
import { preparedStatements } from '../db/statement.js';

export interface CrossingStats {
  /** Publishes on `up/crossing` handed to ingest. */
  received: number;
  /** New crossings written. */
  stored: number;
  /** Re-sends of a crossing_id the shop already has (at-least-once delivery): no-ops. */
  duplicates: number;
  /** Not JSON or not a CrossingMessage: logged and dropped. */
  invalid: number;
  /** The topic's shop no longer exists: dropped. */
  unknownShop: number;
  /** The shop's company is suspended: dropped. */
  suspended: number;
  /** Stored with camera_uuid null: no camera of the shop has the camera_id (logged). */
  unknownCamera: number;
  /** Batches whose transaction failed: their publishes were refused, so the shop PCs send them again. */
  failed: number;
}

export const EMPTY_CROSSING_STATS: CrossingStats = { received: 0, stored: 0, duplicates: 0, invalid: 0, unknownShop: 0, suspended: 0, unknownCamera: 0, failed: 0 };

interface Pending {
  username: string;
  msg: CrossingMessage;
  receivedAt: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Crossing ingest (docs/body-counting.md, "Head office"). Every publish on `ff/<company>/<shop>/up/crossing` is taken
 * inside the broker's publish authorisation (Broker.holdAcks): the broker's topic rule lets only the shop's own login
 * publish there, so the topic names the company and the shop. Its PUBACK is held until the crossing is written, so a
 * crossing is acknowledged to the shop PC only once it is in the database (at least once, end to end):
 *
 * - a payload that is not JSON or not a CrossingMessage is logged (rate-limited per topic), counted and dropped
 *   (acknowledged: sending it again would not make it valid);
 * - a shop that no longer exists, or a suspended company: dropped like a visit;
 * - the camera is looked up by camera_id within the shop (a present camera first, else the newest removed one, so
 *   crossings queued on the shop PC's disk while their camera was removed still name it); none: stored with
 *   camera_uuid null and logged. The crossing still counts for the shop: the person did cross its door;
 * - a crossing_id the shop already has is a no-op (unique on shop and crossing_id: another shop's crossing with the
 *   same id is its own and never collides with this one);
 * - a failed transaction refuses every publish of the batch (their connections close and the shop PCs send them
 *   again): the message is valid, the database is what failed.
 *
 * Crossings are small and few (a door sees a few thousand a day), so they are written on the main thread, the ones
 * that arrived in the same turn of the event loop in one transaction.
 */
export class CrossingIngest {
  private readonly counters: CrossingStats = { ...EMPTY_CROSSING_STATS };
  private queue: Pending[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private removeHold: (() => void) | undefined;
  private stopping = false;
  private readonly warned = new Map<string, { at: number; suppressed: number }>();

  /** `reporting` is called on every crossing handed over (head office starts its visit ingest thread on the first). */
  constructor(private readonly deps: { store: Store; broker: Broker; log: Logger; reporting?: () => void }) {}

  get stats(): CrossingStats {
    return { ...this.counters };
  }

  start(): void {
    this.removeHold = this.deps.broker.holdAcks('crossing', (message) => this.hand(message));
  }

  /** Writes what is queued (their PUBACKs go out) and refuses new crossings. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.scheduled) clearImmediate(this.scheduled);
    await this.flush();
    this.removeHold?.();
  }

  private hand(packet: HeldMessage): Promise<void> {
    if (this.stopping) return Promise.reject(new Error('crossing ingest is not running'));
    this.deps.reporting?.();
    this.counters.received++;
    const parsed = parseTopic(packet.topic);
    if (!parsed) return Promise.resolve();
    const text = packet.payload.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.invalid(packet.topic, 'crossing is not JSON; dropped');
      return Promise.resolve();
    }
    const checked = CrossingMessage.safeParse(json);
    if (!checked.success) {
      this.invalid(packet.topic, 'crossing does not match the contract; dropped', checked.error.issues.slice(0, 3));
      return Promise.resolve();
    }
    const username = brokerUsername(parsed.companySlug, parsed.shopSlug);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ username, msg: checked.data, receivedAt: new Date().toISOString(), resolve, reject });
      this.scheduled ??= setImmediate(() => {
        this.scheduled = undefined;
        void this.flush();
      });
    });
  }

  private invalid(topic: string, what: string, issues?: unknown): void {
    this.counters.invalid++;
    this.warn(topic, what, { issues });
  }

  /** One warning per topic and kind every 10 s; the rest are counted in the next one. */
  private warn(key: string, what: string, fields: Record<string, unknown>): void {
    const now = Date.now();
    const k = `${key}\u0000${what}`;
    const w = this.warned.get(k);
    if (w && now - w.at < 10_000) {
      w.suppressed++;
      return;
    }
    this.deps.log.warn({ topic: key, ...fields, suppressed: w?.suppressed ?? 0 }, what);
    this.warned.set(k, { at: now, suppressed: 0 });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0);
    if (batch.length === 0) return;
    let counts: Partial<CrossingStats>;
    try {
      counts = await this.deps.store.tx(async () => await this.write(batch));
    } catch (err) {
      this.counters.failed++;
      this.deps.log.error({ err, crossings: batch.length }, 'crossings not stored; refused (the shop PCs send them again)');
      const e = err instanceof Error ? err : new Error(String(err));
      for (const p of batch) p.reject(e);
      return;
    }
    for (const [k, n] of Object.entries(counts) as [keyof CrossingStats, number][]) this.counters[k] += n;
    for (const p of batch) p.resolve();
  }

  /** The batch's writes, in one transaction; returns the counts (applied only once committed). */
  private async write(batch: readonly Pending[]): Promise<Partial<CrossingStats>> {
    const q = statementsOf(this.deps.store);
    const counts: Partial<CrossingStats> = {};
    const count = (k: keyof CrossingStats) => (counts[k] = (counts[k] ?? 0) + 1);
    const shopOf = new Map<string, { id: string; companyId: string; active: number } | undefined>();
    for (const p of batch) {
      if (!shopOf.has(p.username)) shopOf.set(p.username, await q.shop.get<{ id: string; companyId: string; active: number }>(p.username));
      const shop = shopOf.get(p.username);
      if (!shop) {
        count('unknownShop');
        continue;
      }
      if (!shop.active) {
        count('suspended');
        continue;
      }
      const m = p.msg;
      const camera = await q.camera.get<{ id: string }>(shop.id, m.camera_id);
      const inserted = await q.insert.run({
        companyId: shop.companyId,
        shopId: shop.id,
        crossingId: m.crossing_id.toLowerCase(),
        cameraId: m.camera_id,
        cameraUuid: camera?.id ?? null,
        direction: m.direction,
        occurredAt: new Date(Date.parse(m.occurred_at)).toISOString(),
        receivedAt: p.receivedAt,
        trackId: m.track_id ?? null,
      });
      if (inserted.changes === 0) {
        count('duplicates');
        continue;
      }
      count('stored');
      if (!camera) {
        count('unknownCamera');
        this.warn(p.username, 'crossing from a camera_id the shop does not have; stored without a camera', { camera_id: m.camera_id });
      }
    }
    return counts;
  }
}

const statementsOf = preparedStatements((prep) => ({
  shop: prep(
    'select s.id as id, s.company_id as "companyId", c.active as active from shops s join companies c on c.id = s.company_id where s.broker_username = ?',
  ),
  // A present camera first (cameras_shop_camera_id_uq), else the newest tombstone with that camera_id.
  camera: prep('select id from cameras where shop_id = ? and camera_id = ? order by deleted_at is not null, deleted_at desc limit 1'),
  insert: prep(
    `insert into crossings (company_id, shop_id, crossing_id, camera_id, camera_uuid, direction, occurred_at, received_at, track_id)
     values (@companyId, @shopId, @crossingId, @cameraId, @cameraUuid, @direction, @occurredAt, @receivedAt, @trackId)
     on conflict (shop_id, crossing_id) do nothing`,
  ),
}));
