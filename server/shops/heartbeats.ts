import { and, eq, isNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import { Goodbye, Heartbeat } from '../../shared/messages.js';
import { brokerUsername, parseTopic, upFilterAllShops } from '../../shared/topics.js';
import type { Broker, HeldMessage } from '../broker/broker.js';
import type { Store } from '../db/open.js';
import { preparedStatements } from '../db/statement.js';
import { cameras, shops } from '../db/tables.js';

const statementsOf = preparedStatements((prep) => {
  const set = `last_heartbeat_at = @at, offline_since = null, agent_version = @agentVersion, recognition_model = @recognitionModel,
       recognition_running = @recognitionRunning, recognition_problem = @recognitionProblem, door_counting_problem = @doorCountingProblem,
       cameras_up = @camerasUp, cameras_total = @camerasTotal, queued = @queued, dropped = @dropped,
       fraction_below_gate = @fractionBelowGate, worst_camera_id = @worstCameraId`;
  return {
    update: prep(
      `update shops set ${set} where broker_username = @username returning id`,
      `update shops set ${set.replace('@recognitionRunning', '@recognitionRunning::int::boolean')} where broker_username = @username returning id`,
    ),
  };
});

/** Heartbeats are written at most this long after they arrive. */
const FLUSH_MS = 500;

/**
 * Heartbeat ingest: head office listens on the broker (Broker.listen) to `ff/+/+/up/heartbeat`. The broker's topic rule
 * guarantees that only the shop's own login can publish there, so the topic names the shop. A heartbeat that does
 * not parse is logged and dropped. `reporting` is called on every heartbeat (head office starts its visit ingest
 * thread on the first: server/start.ts). Returns a function that stops the ingest.
 */
export async function ingestHeartbeats(deps: { store: Store; broker: Broker; log: Logger; reporting?: () => void }): Promise<() => Promise<void>> {
  const { store, broker, log } = deps;
  const topic = upFilterAllShops('heartbeat');
  const deliver = (packet: HeldMessage) => {
    deps.reporting?.();
    try {
      record(packet);
    } catch (err) {
      log.error({ err, topic: packet.topic }, 'heartbeat not recorded');
    }
  };
  const record = (packet: HeldMessage) => {
    const parsed = parseTopic(packet.topic);
    if (!parsed) return;
    let json: unknown;
    try {
      json = JSON.parse(packet.payload.toString('utf8'));
    } catch {
      log.warn({ topic: packet.topic }, 'heartbeat is not JSON');
      return;
    }
    const hb = Heartbeat.safeParse(json);
    if (!hb.success) {
      log.warn({ topic: packet.topic, issues: hb.error.issues.slice(0, 3) }, 'heartbeat does not match the contract');
      return;
    }
    // Kept until the next write (the latest heartbeat of each shop wins): see `flush`.
    pending.set(brokerUsername(parsed.companySlug, parsed.shopSlug), { h: hb.data, at: new Date().toISOString() });
    timer ??= setTimeout(() => void flush(), FLUSH_MS);
  };
  /**
   * The heartbeats received since the last write, in one transaction. One transaction per heartbeat (2,000 shop PCs:
   * 67 a second) made this thread wait for the ingest thread's write lock 67 times a second, and every PUBACK and
   * HTTP answer waited with it (docs/decisions.md, "Ingest CPU per visit").
   */
  const pending = new Map<string, { h: Heartbeat; at: string }>();
  let timer: NodeJS.Timeout | undefined;
  const { update } = statementsOf(store);
  const flush = async () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (pending.size === 0) return;
    const beats = [...pending];
    pending.clear();
    try {
      // Last writer wins (each row is one shop's latest heartbeat): read committed on PostgreSQL, where a serializable
      // flush formed read/write cycles with ingest's (both touch shops) and made ingest's batches run again.
      await store.tx(async () => {
        for (const [username, { h, at }] of beats) await write(username, h, at);
      }, { readCommitted: true });
    } catch (err) {
      log.error({ err, heartbeats: beats.length }, 'heartbeats not recorded');
    }
  };
  const write = async (username: string, h: Heartbeat, now: string) => {
    const shop = await update.get<{ id: string }>({
      username,
      at: now,
      agentVersion: h.agent_version,
      recognitionModel: h.recognition_model,
      recognitionRunning: h.recognition_running ? 1 : 0,
      recognitionProblem: h.recognition_problem ?? null,
      doorCountingProblem: h.door_counting_problem ?? null,
      camerasUp: h.cameras_up,
      camerasTotal: h.cameras_total,
      queued: h.queued,
      dropped: h.dropped,
      fractionBelowGate: h.fraction_below_gate,
      worstCameraId: h.worst_camera_id ?? null,
    });
    // Each door camera's counting over the last minutes (GET /api/cameras `counting`); a camera_id the shop does not
    // have is ignored (removed meanwhile).
    if (shop && h.doors) {
      for (const d of h.doors) {
        await store.db
          .update(cameras)
          .set({ doorStats: d, doorStatsAt: now })
          .where(and(eq(cameras.shopId, shop.id), eq(cameras.cameraId, d.camera_id), isNull(cameras.deletedAt)));
      }
    }
  };
  // Goodbye (a clean stop) and the last will (a lost connection): offline at once. A will published because the
  // same shop PC reconnected and took its session over is ignored: another connection of the login is still there
  // (the embedded broker counts them; an external one does not say, and the next heartbeat clears offline_since).
  const bye = async (packet: HeldMessage) => {
    try {
      const parsed = parseTopic(packet.topic);
      if (!parsed) return;
      let msg: ReturnType<typeof Goodbye.safeParse>;
      try {
        msg = Goodbye.safeParse(JSON.parse(packet.payload.toString('utf8')));
      } catch {
        log.warn({ topic: packet.topic }, 'goodbye is not JSON');
        return;
      }
      if (!msg.success) {
        log.warn({ topic: packet.topic, issues: msg.error.issues.slice(0, 3) }, 'goodbye does not match the contract');
        return;
      }
      const username = brokerUsername(parsed.companySlug, parsed.shopSlug);
      // A heartbeat received before the goodbye is written first, so it cannot undo the offline mark.
      if (pending.has(username)) await flush();
      if (msg.data.reason === 'connection_lost' && (broker.connections(username) ?? 0) > 1) return;
      await store.db.update(shops).set({ offlineSince: new Date().toISOString() }).where(eq(shops.brokerUsername, username));
      log.info({ shop: username, reason: msg.data.reason }, 'shop PC went offline');
    } catch (err) {
      log.error({ err, topic: packet.topic }, 'goodbye not recorded');
    }
  };
  // One process of several records each (the shop's row is the same for all of them).
  const stopHeartbeats = await broker.listen(topic, deliver, { shared: true });
  const stopBye = await broker.listen(upFilterAllShops('goodbye'), (packet) => void bye(packet), { shared: true });
  return async () => {
    await stopHeartbeats();
    await stopBye();
    await flush();
  };
}
