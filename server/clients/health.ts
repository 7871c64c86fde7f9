import { isNotNull } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/open.js';
import { isOnline } from '../shops/service.js';
import { users, shops } from '../db/tables.js';

/**
 * Each company's health for the platform admin's list (GET /api/admin/clients, additive fields in
 * docs/api-conventions.md): shops whose PC is online now, and the latest shop-PC heartbeat, visit and sign-in.
 */
export interface CompanyHealth {
  shops_online: number;
  last_heartbeat_at: string | null;
  last_visit_at: string | null;
  last_login_at: string | null;
}

const later = (a: string | null, b: string | null | undefined) => (!b ? a : !a || b > a ? b : a);

export async function companyHealth(db: Db, config: Config, now = Date.now()): Promise<Map<string, CompanyHealth>> {
  const out = new Map<string, CompanyHealth>();
  const of = (id: string) => {
    let h = out.get(id);
    if (!h) out.set(id, (h = { shops_online: 0, last_heartbeat_at: null, last_visit_at: null, last_login_at: null }));
    return h;
  };
  for (const s of (await db.select({ companyId: shops.companyId, lastHeartbeatAt: shops.lastHeartbeatAt, offlineSince: shops.offlineSince, lastEventAt: shops.lastEventAt }).from(shops))) {
    const h = of(s.companyId);
    if (isOnline(s, config, now)) h.shops_online++;
    h.last_heartbeat_at = later(h.last_heartbeat_at, s.lastHeartbeatAt);
    h.last_visit_at = later(h.last_visit_at, s.lastEventAt);
  }
  for (const u of (await db.select({ companyId: users.companyId, at: users.lastLoginAt }).from(users).where(isNotNull(users.companyId)))) {
    if (u.companyId) of(u.companyId).last_login_at = later(of(u.companyId).last_login_at, u.at);
  }
  return out;
}

export const noHealth: CompanyHealth = { shops_online: 0, last_heartbeat_at: null, last_visit_at: null, last_login_at: null };
