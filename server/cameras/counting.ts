import { and, eq, isNull, sql } from 'drizzle-orm';
import { cameraRole, type CameraRole } from '../../shared/agent-api.js';
import type { DoorStats } from '../../shared/messages.js';
import type { Config } from '../config.js';
import type { Db } from '../db/open.js';
import { amongIds, indexedBy, row, rows } from '../db/raw.js';
import { isOnline } from '../shops/service.js';
import { shops, cameras } from '../db/tables.js';

/**
 * Counting health (docs/shops-and-cameras.md "Counting health"): for each camera that counts a door (role `door` or
 * `both`), what a person needs to trust its entries: people counted in the last hour, the last crossing, whether the
 * person detector keeps up with the camera (the shop PC's heartbeat `doors`), and whether it has gone silent. A door
 * camera that counted nobody for an hour while the shop's other cameras saw people (a visit arrived in that hour, or
 * another door camera counted someone) is `not_counting`, like a camera that does not connect.
 */

const HOUR_MS = 3_600_000;
/** More of the frames the detector should have looked at dropped than this: it does not keep up. */
export const KEEPS_UP_MAX_DROPPED = 0.1;
/** A heartbeat's `doors` older than this says nothing about now. */
const STATS_FRESH_MS = 10 * 60_000;

export type CountingState = 'counting' | 'not_counting' | 'no_line' | 'off' | 'unknown';

export interface CountingHealth {
  role: Exclude<CameraRole, 'faces'>;
  state: CountingState;
  /** What to look at, in words a person can read; null when all is well. */
  problem: string | null;
  counted_last_hour: number;
  entries_last_hour: number;
  exits_last_hour: number;
  last_crossing_at: string | null;
  /** null: no fresh report from the shop PC, or no frame reached the detector in its window. */
  detector_keeps_up: boolean | null;
  /** Share of the frames the detector should have looked at that it dropped while busy (0..1); null as above. */
  frames_dropped_share: number | null;
  /** The shop PC's last report on this camera's counting (its last few minutes), and when it arrived. */
  stats: Omit<DoorStats, 'camera_id'> | null;
  stats_at: string | null;
}

/** What counting health needs of a camera, its shop and the shop's crossings. */
export interface CountingCamera {
  id: string;
  shopId: string;
  cameraId: string;
  label: string;
  tuning: Parameters<typeof cameraRole>[0];
  enabled: boolean;
  connected: boolean | null;
  updatedAt: string;
  doorStats: DoorStats | null;
  doorStatsAt: string | null;
}

export interface CountingShop {
  id: string;
  lastHeartbeatAt: string | null;
  offlineSince: string | null;
  lastEventAt: string | null;
  doorCountingProblem: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();
const pct = (f: number) => `${Math.round(f * 100)}%`;

/** Entries and exits of the last hour per camera uuid, for these shops (one index range per shop). */
async function lastHour(db: Db, shopIds: string[], now: number): Promise<Map<string, { in: number; out: number }>> {
  const out = new Map<string, { in: number; out: number }>();
  if (shopIds.length === 0) return out;
  // The index hint is SQLite's (its planner would pick another); PostgreSQL plans by itself.
  const counted = await rows<{ camera: string | null; direction: 'in' | 'out'; n: number }>(db, sql`
    select camera_uuid as camera, direction, count(*) as n from crossings${indexedBy('crossings_shop_time_idx')}
    where ${amongIds(sql`shop_id`, shopIds)} and occurred_at >= ${iso(now - HOUR_MS)}
    group by camera_uuid, direction`);
  for (const r of counted) {
    if (!r.camera) continue;
    const c = out.get(r.camera) ?? { in: 0, out: 0 };
    c[r.direction] = r.n;
    out.set(r.camera, c);
  }
  return out;
}

async function lastCrossing(db: Db, cameraUuid: string): Promise<string | null> {
  return (await row<{ at: string | null }>(db, sql`select max(occurred_at) as at from crossings where camera_uuid = ${cameraUuid}`))?.at ?? null;
}

/**
 * Counting health of each of these cameras that counts a door (role `door` or `both`), by camera uuid. `all` is every
 * present camera of the shops concerned (a camera's silence is judged against the others of its shop).
 */
export async function countingHealth(db: Db, config: Config, all: CountingCamera[], shops: CountingShop[], now = Date.now()): Promise<Map<string, CountingHealth>> {
  const result = new Map<string, CountingHealth>();
  const doors = all.filter((c) => cameraRole(c.tuning) !== 'faces');
  if (doors.length === 0) return result;
  const shopById = new Map(shops.map((s) => [s.id, s]));
  const hour = await lastHour(db, [...new Set(doors.map((c) => c.shopId))], now);
  for (const c of doors) {
    const shop = shopById.get(c.shopId);
    const counts = hour.get(c.id) ?? { in: 0, out: 0 };
    // What an offline shop PC last said is no longer known to be true.
    const online = shop !== undefined && isOnline(shop, config, now);
    const fresh = online && c.doorStats && c.doorStatsAt && now - Date.parse(c.doorStatsAt) <= STATS_FRESH_MS ? c.doorStats : null;
    const looked = fresh ? fresh.analysed + fresh.skipped : 0;
    const dropped = fresh && looked > 0 ? fresh.skipped / looked : null;
    const health: CountingHealth = {
      role: cameraRole(c.tuning) as CountingHealth['role'],
      state: 'counting',
      problem: null,
      counted_last_hour: counts.in + counts.out,
      entries_last_hour: counts.in,
      exits_last_hour: counts.out,
      last_crossing_at: await lastCrossing(db, c.id),
      detector_keeps_up: dropped === null ? null : dropped <= KEEPS_UP_MAX_DROPPED,
      frames_dropped_share: dropped === null ? null : Math.round(dropped * 1000) / 1000,
      stats: c.doorStats ? (({ camera_id: _, ...rest }) => rest)(c.doorStats) : null,
      stats_at: c.doorStatsAt,
    };
    const [state, problem] = judge(c, shop, health, all, hour, config, now);
    health.state = state;
    health.problem = problem;
    result.set(c.id, health);
  }
  return result;
}

function judge(
  c: CountingCamera,
  shop: CountingShop | undefined,
  health: CountingHealth,
  all: CountingCamera[],
  hour: Map<string, { in: number; out: number }>,
  config: Config,
  now: number,
): [CountingState, string | null] {
  if (!c.enabled) return ['off', null];
  if (!c.tuning.line) return ['no_line', 'No counting line: draw one on the picture where people cross the door, or this camera counts nobody.'];
  if (!shop || !isOnline(shop, config, now)) return ['unknown', 'The shop PC is offline, so whether this camera counts is not known.'];
  if (c.connected === null) return ['unknown', 'The shop PC has not set this camera up yet.'];
  if (!c.connected) return ['not_counting', 'The camera is not connected, so nobody is counted at this door.'];
  if (shop.doorCountingProblem) return ['not_counting', `The shop PC is not counting: ${shop.doorCountingProblem}.`];
  if (health.counted_last_hour === 0 && Date.parse(c.updatedAt) <= now - HOUR_MS) {
    const visits = shop.lastEventAt !== null && Date.parse(shop.lastEventAt) >= now - HOUR_MS;
    const others = all.filter((o) => o.shopId === c.shopId && o.id !== c.id && (hour.get(o.id)?.in ?? 0) + (hour.get(o.id)?.out ?? 0) > 0);
    if (visits || others.length > 0) {
      const seen = others.length > 0 ? `${others.map((o) => o.label || o.cameraId).join(', ')} counted people` : "the shop's cameras saw visitors";
      return [
        'not_counting',
        `Counted nobody in the last hour while ${seen}. Check that the camera still sees the door and that its line lies across where people walk.`,
      ];
    }
  }
  if (health.detector_keeps_up === false) {
    return ['counting', `The person detector drops ${pct(health.frames_dropped_share!)} of this camera's frames: people may be missed. Lower door_fps, or give the shop PC more CPU.`];
  }
  return ['counting', null];
}

/** Counting health of the company's present cameras (of one shop when `shopId` is given), by camera uuid. */
export async function companyCounting(db: Db, config: Config, companyId: string, shopId?: string, now = Date.now()): Promise<{ health: Map<string, CountingHealth>; cameras: CountingCamera[] }> {
  const rows = await db
    .select()
    .from(cameras)
    .where(and(eq(cameras.companyId, companyId), isNull(cameras.deletedAt), shopId === undefined ? undefined : eq(cameras.shopId, shopId)));
  const shopRows = await db
    .select({ id: shops.id, lastHeartbeatAt: shops.lastHeartbeatAt, offlineSince: shops.offlineSince, lastEventAt: shops.lastEventAt, doorCountingProblem: shops.doorCountingProblem })
    .from(shops)
    .where(and(eq(shops.companyId, companyId), shopId === undefined ? undefined : eq(shops.id, shopId)));
  return { health: await countingHealth(db, config, rows, shopRows, now), cameras: rows };
}

/**
 * Per shop, the door cameras that went silent (counted nobody for an hour while the shop's other cameras saw people),
 * in words: added to the Site's `door_counting_problem` when the shop PC itself reports none.
 */
export async function silentDoors(db: Db, config: Config, companyId: string, now = Date.now()): Promise<Map<string, string>> {
  const { health, cameras: rows } = await companyCounting(db, config, companyId, undefined, now);
  const byShop = new Map<string, string[]>();
  for (const c of rows) {
    const h = health.get(c.id);
    if (h?.state !== 'not_counting' || !h.problem?.startsWith('Counted nobody')) continue;
    byShop.set(c.shopId, [...(byShop.get(c.shopId) ?? []), c.label || c.cameraId]);
  }
  return new Map(
    [...byShop].map(([shopId, names]) => [shopId, `${names.join(', ')} counted nobody in the last hour while the shop's other cameras saw people; check ${names.length === 1 ? 'that camera' : 'those cameras'} and ${names.length === 1 ? 'its' : 'their'} counting line`]),
  );
}
