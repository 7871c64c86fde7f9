import { and, eq, isNull, isNotNull, sql } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/open.js';
import { row } from '../db/raw.js';
import { shopsToday, shopsWithLine } from '../crossings/service.js';
import { isOpenAt } from '../shops/hours.js';
import { isOnline, type ShopRow } from '../shops/service.js';
import type { AlertKind, AlertRules } from './rules.js';
import { cameras, companies, shops } from '../db/tables.js';

/**
 * What each rule sees now (docs/operations.md, "Alerts"). A condition is `true` (wrong now), `false` (fine now) or
 * absent (unknown: nothing to say, e.g. a camera of a shop whose PC is offline), and an unknown condition neither
 * raises nor clears its alert.
 */
export interface Condition {
  companyId: string;
  shopId: string;
  cameraUuid: string | null;
  kind: AlertKind;
  subject: string;
  wrong: boolean;
  /** What is wrong, for people (used when raised). */
  message: string;
}

const subjectOf = (kind: AlertKind, shopId: string, cameraUuid?: string | null) => `${kind}:${shopId}${cameraUuid ? `:${cameraUuid}` : ''}`;

/**
 * Every known condition of every enrolled shop of every active company, by the company's rules. `offlineKnown`
 * false (the first three heartbeat intervals after head office starts) leaves a shop that looks offline unknown:
 * its PC may simply not have reported to the new process yet.
 */
export async function conditions(db: Db, config: Config, rulesOf: (companyId: string) => Promise<AlertRules>, now: number, offlineKnown = true): Promise<Condition[]> {
  const list = (await db
    .select({ shop: shops })
    .from(shops)
    .innerJoin(companies, eq(companies.id, shops.companyId))
    .where(and(eq(companies.active, true), isNotNull(shops.enrolledAt))))
    .map((r) => r.shop);
  if (list.length === 0) return [];
  const today = await shopsToday(db, list, new Date(now));
  const lined = await shopsWithLine(
      db,
      list.map((s) => s.id),
    );
  const cams = await db
    .select({ id: cameras.id, shopId: cameras.shopId, cameraId: cameras.cameraId, label: cameras.label, connected: cameras.connected, reason: cameras.connectionReason })
    .from(cameras)
    .where(and(isNull(cameras.deletedAt), eq(cameras.enabled, true)));
  const out: Condition[] = [];
  for (const shop of list) {
    const rules = await rulesOf(shop.companyId);
    const add = (kind: AlertKind, wrong: boolean, message: string, cameraUuid: string | null = null) => {
      if (rules[kind].enabled) out.push({ companyId: shop.companyId, shopId: shop.id, cameraUuid, kind, subject: subjectOf(kind, shop.id, cameraUuid), wrong, message });
    };
    const online = isOnline(shop, config, now);
    // Unknown rather than offline: head office just started, or the PC was enrolled moments ago (it has not had
    // three heartbeat intervals to report yet).
    const justEnrolled = now - Date.parse(shop.enrolledAt!) <= 3 * config.FOOTFALL_HEARTBEAT_INTERVAL_S * 1000;
    if (!online && (!offlineKnown || justEnrolled)) continue;
    add('shop_offline', !online, `The shop PC of ${shop.name} is offline: no heartbeat since ${shop.lastHeartbeatAt ?? 'it was installed'}.`);
    if (!online) continue; // what the PC last said is stale: the other conditions are unknown until it is back

    for (const c of cams.filter((c) => c.shopId === shop.id && c.connected !== null)) {
      add('camera_down', c.connected === false, `Camera "${c.label || c.cameraId}" of ${shop.name} is down${c.reason ? ` (${c.reason})` : ''}.`, c.id);
    }

    const limit = shop.occupancyLimit;
    const occupancy = today.get(shop.id)?.occupancy ?? null;
    if (limit !== null && occupancy !== null) add('occupancy_over_limit', occupancy > limit, `${shop.name} has ${occupancy} people in, over its limit of ${limit}.`);

    const threshold = rules.faces_too_poor.threshold ?? 0.5;
    if (shop.fractionBelowGate !== null) {
      const which = shop.worstCameraId ? cams.find((c) => c.shopId === shop.id && c.cameraId === shop.worstCameraId) : undefined;
      const camera = which ? `camera "${which.label || which.cameraId}"` : 'its worst camera';
      add('faces_too_poor', shop.fractionBelowGate > threshold, `At ${shop.name}, ${camera} sees ${Math.round(shop.fractionBelowGate * 100)} % of faces too poor to use (above ${Math.round(threshold * 100)} %): it needs moving or more light.`);
    }

    if (lined.has(shop.id) && shop.openingHours) {
      const open = isOpenAt(shop.openingHours, shop.timezone, now);
      const quiet = await doorQuiet(db, shop, now - rules.door_not_counting.after_minutes * 60_000);
      const wrong = open && (shop.doorCountingProblem !== null || quiet);
      const why = shop.doorCountingProblem ?? `no entry or exit counted for ${rules.door_not_counting.after_minutes} minutes`;
      add('door_not_counting', wrong, `The door of ${shop.name} is not counting while the shop is open: ${why}.`);
    }
  }
  return out;
}

/** No crossing at the shop since `since`. (PostgreSQL 15 wants the subquery named: `as one`.) */
async function doorQuiet(db: Db, shop: ShopRow, since: number): Promise<boolean> {
  const found = await row<{ n: number }>(db, sql`select count(*) as n from (select 1 from crossings where shop_id = ${shop.id} and occurred_at >= ${new Date(since).toISOString()} limit 1) as one`);
  return (found?.n ?? 0) === 0;
}
