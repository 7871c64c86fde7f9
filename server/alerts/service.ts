import { randomUUID } from 'node:crypto';
import { and, desc, eq, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db, Store } from '../db/open.js';
import { conditions, type Condition } from './conditions.js';
import { withDefaults, type AlertRules } from './rules.js';
import { one, returned } from '../db/query.js';
import { onPostgres, row, run } from '../db/raw.js';
import { users, shops, cameras, alertDeliveries, alertSettings, alerts } from '../db/tables.js';

export type AlertRow = typeof alerts.$inferSelect;
export type SettingsRow = typeof alertSettings.$inferSelect;

export interface Settings {
  rules: AlertRules;
  emailTo: string[] | null;
  webhookUrl: string | null;
  webhookSecret: string | null;
  updatedAt: string | null;
}

export async function settingsOf(db: Db, companyId: string): Promise<Settings> {
  const row = await one(db.select().from(alertSettings).where(eq(alertSettings.companyId, companyId)));
  return {
    rules: withDefaults(row?.rules),
    emailTo: row?.emailTo ?? null,
    webhookUrl: row?.webhookUrl ?? null,
    webhookSecret: row?.webhookSecret ?? null,
    updatedAt: row?.updatedAt ?? null,
  };
}

export async function saveSettings(db: Db, companyId: string, s: Omit<Settings, 'updatedAt'>): Promise<Settings> {
  const values = { rules: s.rules, emailTo: s.emailTo, webhookUrl: s.webhookUrl, webhookSecret: s.webhookSecret, updatedAt: new Date().toISOString() };
  await db.insert(alertSettings)
    .values({ companyId, ...values })
    .onConflictDoUpdate({ target: alertSettings.companyId, set: values });
  return await settingsOf(db, companyId);
}

/** Where a company's alert e-mails go: its list, else its active owners and managers. */
export async function recipientsOf(db: Db, companyId: string, s: Settings): Promise<string[]> {
  if (s.emailTo) return s.emailTo;
  return (await db
    .select({ email: users.email })
    .from(users)
    .where(and(eq(users.companyId, companyId), eq(users.active, true), inArray(users.role, ['owner', 'manager']))))
    .map((u) => u.email);
}

export interface Transition {
  event: 'raised' | 'cleared';
  alert: AlertRow;
}

/**
 * Compares what the rules see now with the open alerts: a condition that turned wrong (and has stayed wrong for the
 * rule's `after_minutes`) raises one alert, an open alert whose condition is fine again is cleared, and each of those
 * queues its deliveries, all in one transaction. `pending` keeps since when each condition has been wrong (in memory:
 * a restart starts the wait again). Unknown conditions change nothing.
 */
export async function evaluate(store: Store, config: Config, pending: Map<string, number>, now = Date.now(), offlineKnown = true): Promise<Transition[]> {
  const cache = new Map<string, Settings>();
  const settings = async (companyId: string) => {
    let s = cache.get(companyId);
    if (!s) cache.set(companyId, (s = await settingsOf(store.db, companyId)));
    return s;
  };
  return await store.tx(async () => {
    // PostgreSQL: head-office processes evaluate one at a time (a lock held to the commit), so a second one reads the
    // alerts the first raised instead of raising them again (alerts_open_subject_uq would refuse it, failing the round).
    // SQLite has one writer: its transactions never overlap.
    if (onPostgres) await run(store.db, sql`select pg_advisory_xact_lock(hashtext('footfall.alerts.evaluate'))`);
    const seen = await conditions(store.db, config, async (c) => (await settings(c)).rules, now, offlineKnown);
    const open = new Map(
      (await store.db
        .select()
        .from(alerts)
        .where(isNull(alerts.clearedAt)))
        .map((a) => [`${a.companyId}|${a.subject}`, a]),
    );
    const at = new Date(now).toISOString();
    const out: Transition[] = [];
    const known = new Set<string>();
    for (const c of seen) {
      const key = `${c.companyId}|${c.subject}`;
      known.add(key);
      const current = open.get(key);
      if (c.wrong) {
        if (current) continue;
        const since = pending.get(key) ?? now;
        pending.set(key, since);
        const wait = c.kind === 'door_not_counting' ? 0 : (await settings(c.companyId)).rules[c.kind].after_minutes * 60_000;
        if (now - since < wait) continue;
        pending.delete(key);
        out.push({ event: 'raised', alert: await raise(store.db, c, at) });
      } else {
        pending.delete(key);
        if (current) out.push({ event: 'cleared', alert: await clear(store.db, current, at) });
      }
    }
    // An open alert whose rule was switched off (or whose camera or shop is gone) is cleared too; unknown ones stay.
    for (const [key, a] of open) {
      if (known.has(key)) continue;
      if (!(await stillMeaningful(store.db, a, (await settings(a.companyId)).rules))) out.push({ event: 'cleared', alert: await clear(store.db, a, at) });
    }
    for (const key of pending.keys()) if (!known.has(key)) pending.delete(key);
    for (const t of out) await queueDeliveries(store.db, t, await settings(t.alert.companyId), at);
    return out;
  });
}

async function stillMeaningful(db: Db, a: AlertRow, rules: AlertRules): Promise<boolean> {
  if (!rules[a.kind as keyof AlertRules]?.enabled) return false;
  if (a.cameraUuid) {
    const cam = await one(db.select({ deletedAt: cameras.deletedAt, enabled: cameras.enabled }).from(cameras).where(eq(cameras.id, a.cameraUuid)));
    if (!cam || cam.deletedAt || !cam.enabled) return false;
  }
  if (a.kind === 'occupancy_over_limit') return (await one(db.select({ l: shops.occupancyLimit }).from(shops).where(eq(shops.id, a.shopId))))?.l != null;
  return true;
}

async function raise(db: Db, c: Condition, at: string): Promise<AlertRow> {
  return await returned(db
    .insert(alerts)
    .values({ id: randomUUID(), companyId: c.companyId, shopId: c.shopId, cameraUuid: c.cameraUuid, kind: c.kind, subject: c.subject, message: c.message, raisedAt: at })
    .returning());
}

async function clear(db: Db, a: AlertRow, at: string): Promise<AlertRow> {
  return (await returned(db.update(alerts).set({ clearedAt: at }).where(eq(alerts.seq, a.seq)).returning()))!;
}

async function queueDeliveries(db: Db, t: Transition, s: Settings, at: string): Promise<void> {
  const rows: (typeof alertDeliveries.$inferInsert)[] = (await recipientsOf(db, t.alert.companyId, s)).map((target) => ({ alertSeq: t.alert.seq, event: t.event, channel: 'email', target, nextAt: at }));
  if (s.webhookUrl) rows.push({ alertSeq: t.alert.seq, event: t.event, channel: 'webhook', target: s.webhookUrl, nextAt: at });
  if (rows.length > 0) (await db.insert(alertDeliveries).values(rows));
}

/** A page of a company's alerts, newest first, older than `before` (a seq). */
export async function listAlerts(db: Db, companyId: string, opts: { before: number | null; limit: number; openOnly: boolean; siteId: string | null }) {
  const where = and(
    eq(alerts.companyId, companyId),
    opts.before !== null ? lt(alerts.seq, opts.before) : undefined,
    opts.openOnly ? isNull(alerts.clearedAt) : undefined,
    opts.siteId ? eq(alerts.shopId, opts.siteId) : undefined,
  );
  return await db
    .select({ alert: alerts, shopName: shops.name, shopSlug: shops.slug, cameraId: cameras.cameraId, cameraLabel: cameras.label })
    .from(alerts)
    .innerJoin(shops, eq(shops.id, alerts.shopId))
    .leftJoin(cameras, eq(cameras.id, alerts.cameraUuid))
    .where(where)
    .orderBy(desc(alerts.seq))
    .limit(opts.limit + 1);
}
export type AlertListRow = Awaited<ReturnType<typeof listAlerts>>[number];

export async function openAlertCount(db: Db, companyId: string): Promise<number> {
  return (await row<{ n: number }>(db, sql`select count(*) as n from alerts where company_id = ${companyId} and cleared_at is null`))?.n ?? 0;
}
