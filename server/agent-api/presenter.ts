import { cameraRole, type AgentIdentity, type CameraConfig, type CameraList } from '../../shared/agent-api.js';
import { LIVE_DEMAND_TTL_S, LIVE_RENEW_S } from '../../shared/messages.js';
import { shopPrefix } from '../../shared/topics.js';
import type { CameraRow } from '../cameras/service.js';
import type { Deps } from '../context.js';
import type { ShopRow } from '../shops/service.js';

/** Who the shop PC is and how to talk to head office (GET /api/agent/me; enrolment adds the secrets). */
export function presentIdentity(deps: Deps, shop: ShopRow, company: { slug: string; name: string }): AgentIdentity {
  const { config, broker } = deps;
  return {
    site: { id: shop.id, slug: shop.slug, name: shop.name, timezone: shop.timezone },
    company: { slug: company.slug, name: company.name },
    broker: { host: broker.publicAddress.host, port: broker.publicAddress.port, ...(broker.publicAddress.tls ? { tls: true } : {}), username: shop.brokerUsername, client_id: shop.brokerUsername, topic_prefix: shopPrefix(company.slug, shop.slug) },
    timing: {
      heartbeat_interval_s: config.FOOTFALL_HEARTBEAT_INTERVAL_S,
      camera_sync_s: config.FOOTFALL_CAMERA_SYNC_S,
      snapshot_interval_s: config.FOOTFALL_SNAPSHOT_INTERVAL_S,
      live_renew_s: LIVE_RENEW_S,
      live_demand_ttl_s: LIVE_DEMAND_TTL_S,
      check_release_s: config.FOOTFALL_CHECK_RELEASE_S,
    },
    images: config.FOOTFALL_IMAGES,
  };
}

/** The camera list for the shop PC: present cameras with their passwords opened, and tombstones. */
export function presentCameraList(rows: CameraRow[], open: (sealed: string) => string): CameraList {
  const cameras: CameraConfig[] = [];
  const removed: CameraList['removed'] = [];
  for (const c of rows) {
    if (c.deletedAt) {
      removed.push({ id: c.id, camera_id: c.cameraId, removed_at: c.deletedAt });
      continue;
    }
    cameras.push({
      id: c.id,
      camera_id: c.cameraId,
      label: c.label,
      host: c.host,
      port: c.port,
      path: c.path,
      username: c.username,
      password: c.password === null ? '' : open(c.password),
      max_width: c.maxWidth,
      tuning: { ...c.tuning, role: cameraRole(c.tuning) },
      enabled: c.enabled,
      revision: c.revision,
      updated_at: c.updatedAt,
    });
  }
  return { cameras, removed, synced_at: new Date().toISOString() };
}
