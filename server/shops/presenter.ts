import type { Config } from '../config.js';
import type { EnrolmentCodeRow, ShopRow } from './service.js';
import { canonicalTimezone, isOnline } from './service.js';
import type { Step } from './check.js';
import type { ShopToday } from '../crossings/service.js';

/** The spec's Shop. Timestamps never reported are null; fraction_below_gate is null until a face is seen. */
export function presentShop(shop: ShopRow, config: Config, now = Date.now()) {
  return {
    site_id: shop.id,
    slug: shop.slug,
    name: shop.name,
    // A shop opened with an old name before head office normalised them (Asia/Calcutta) shows its IANA name.
    timezone: canonicalTimezone(shop.timezone) ?? shop.timezone,
    online: isOnline(shop, config, now),
    last_heartbeat_at: shop.lastHeartbeatAt,
    last_event_at: shop.lastEventAt,
    recognition_model: shop.recognitionModel,
    agent_version: shop.agentVersion,
    cameras_up: shop.camerasUp,
    cameras_total: shop.camerasTotal,
    fraction_below_gate: shop.fractionBelowGate,
    worst_camera_id: shop.worstCameraId,
    queued: shop.queued,
    dropped: shop.dropped,
    broker_username: shop.brokerUsername,
    enrolled_at: shop.enrolledAt,
    created_at: shop.createdAt,
  };
}

/** GET /api/sites rows and GET /api/sites/{site}: the Shop with its day at the door (docs/body-counting.md). */
export function presentSite(shop: ShopRow, config: Config, today: ShopToday, now = Date.now(), silentDoors: string | null = null) {
  return {
    ...presentShop(shop, config, now),
    occupancy: today.occupancy,
    entries_today: today.entriesToday,
    exits_today: today.exitsToday,
    // The shop PC's own words first; else door cameras gone silent for an hour (server/cameras/counting.ts).
    door_counting_problem: today.occupancy === null ? null : (shop.doorCountingProblem ?? silentDoors),
    opening_hours: shop.openingHours ?? null,
    region: shop.region ?? null,
    occupancy_limit: shop.occupancyLimit ?? null,
  };
}

/** POST /api/sites answer. */
export function presentOpenedShop(shop: ShopRow) {
  return { site_id: shop.id, slug: shop.slug, name: shop.name, timezone: shop.timezone, broker_username: shop.brokerUsername };
}

export function presentEnrolmentCode(code: string, row: EnrolmentCodeRow, shop: ShopRow) {
  return { code, site_id: shop.id, site_name: shop.name, label: row.label, expires_at: row.expiresAt };
}

export function presentShopCheck(shop: ShopRow, result: { ok: boolean; steps: Step[] }) {
  return {
    site_id: shop.id,
    site: shop.name,
    ok: result.ok,
    steps: result.steps.map((s) => ({ name: s.name, status: s.status, detail: s.detail, ...(s.advice ? { advice: s.advice } : {}) })),
  };
}
