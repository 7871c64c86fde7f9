import { and, eq, isNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import { Goodbye, Heartbeat } from '../../shared/messages.js';
import { brokerUsername, parseTopic, upFilterAllShops } from '../../shared/topics.js';
import type { Broker, HeldMessage } from '../broker/broker.js';
import { cameras } from '../cameras/schema.js';
import type { Store } from '../db/open.js';
import { shops } from './schema.js';

/**
 * Heartbeat ingest: head office listens on the broker (Broker.listen) to `ff/+/+/up/heartbeat`. The broker's topic rule
 * guarantees that only the shop's own login can publish there, so the topic names the shop. A heartbeat that does
 * not parse is logged and dropped. Returns a function that stops the ingest.
 */
export async function ingestHeartbeats(deps: { store: Store; broker: Broker; log: Logger }): Promise<() => Promise<void>> {
  const { store, broker, log } = deps;
  const topic = upFilterAllShops('heartbeat');
  const deliver = (packet: HeldMessage) => {
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
    const h = hb.data;
    const now = new Date().toISOString();
    store.tx(() => {
      const shop = store.db
        .update(shops)
        .set({
          lastHeartbeatAt: now,
          offlineSince: null,
          agentVersion: h.agent_version,
          recognitionModel: h.recognition_model,
          recognitionRunning: h.recognition_running,
          recognitionProblem: h.recognition_problem ?? null,
          doorCountingProblem: h.door_counting_problem ?? null,
          camerasUp: h.cameras_up,
          camerasTotal: h.cameras_total,
          queued: h.queued,
          dropped: h.dropped,
          fractionBelowGate: h.fraction_below_gate,
          worstCameraId: h.worst_camera_id ?? null,
        })
        .where(eq(shops.brokerUsername, brokerUsername(parsed.companySlug, parsed.shopSlug)))
        .returning({ id: shops.id })
        .get();
      // Each door camera's counting over the last minutes (GET /api/cameras `counting`); a camera_id the shop does not
      // have is ignored (removed meanwhile).
      if (shop && h.doors) {
        for (const d of h.doors) {
          store.db
            .update(cameras)
            .set({ doorStats: d, doorStatsAt: now })
            .where(and(eq(cameras.shopId, shop.id), eq(cameras.cameraId, d.camera_id), isNull(cameras.deletedAt)))
            .run();
        }
      }
    });
  };
  // Goodbye (a clean stop) and the last will (a lost connection): offline at once. A will published because the
  // same shop PC reconnected and took its session over is ignored: another connection of the login is still there
  // (the embedded broker counts them; an external one does not say, and the next heartbeat clears offline_since).
  const bye = (packet: HeldMessage) => {
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
      if (msg.data.reason === 'connection_lost' && (broker.connections(username) ?? 0) > 1) return;
      store.db.update(shops).set({ offlineSince: new Date().toISOString() }).where(eq(shops.brokerUsername, username)).run();
      log.info({ shop: username, reason: msg.data.reason }, 'shop PC went offline');
    } catch (err) {
      log.error({ err, topic: packet.topic }, 'goodbye not recorded');
    }
  };
  const stopHeartbeats = await broker.listen(topic, deliver);
  const stopBye = await broker.listen(upFilterAllShops('goodbye'), bye);
  return async () => {
    await stopHeartbeats();
    await stopBye();
  };
}
