import { and, count, eq, gt, lt, min } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/open.js';
import { one, returned, changes } from '../db/query.js';
import { idpAttempts } from '../db/tables.js';

/**
 * The /auth limits, the same approach as /api sign-in (server/auth/login-limits.ts): attempts are rows, booked
 * before the slow call (the provider) in the same transaction as the check, so a burst of parallel attempts meets the
 * limit like a sequence does. Limits and what counts: docs/auth-service.md.
 */
export type AttemptKind = 'sign_in' | 'sign_up' | 'sms' | 'code' | 'token';

export interface Limit {
  kind: AttemptKind;
  key: string;
  ip: string;
  /** Most attempts per key in the window (Infinity: the IP limit only). */
  perKey: number;
  perIp: number;
}

export function limitsFor(config: Config): Record<AttemptKind, { perKey: number; perIp: number }> {
  return {
    sign_in: { perKey: config.FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT, perIp: config.FOOTFALL_LOGIN_MAX_FAILURES_IP },
    sign_up: { perKey: Infinity, perIp: config.FOOTFALL_LOGIN_MAX_FAILURES_IP },
    sms: { perKey: config.FOOTFALL_IDP_SMS_MAX_PER_PHONE, perIp: config.FOOTFALL_IDP_SMS_MAX_PER_IP },
    code: { perKey: config.FOOTFALL_IDP_CODE_MAX_ATTEMPTS, perIp: config.FOOTFALL_LOGIN_MAX_FAILURES_IP },
    token: { perKey: Infinity, perIp: config.FOOTFALL_LOGIN_MAX_FAILURES_IP },
  };
}

export type Booked = { ok: true; id: number } | { ok: false; retryAfterSeconds: number };

let prunedAt = 0;

/** Checks the limit and books this attempt; call inside a transaction. Rows past the window go once a minute. */
export async function book(db: Db, config: Config, l: Limit): Promise<Booked> {
  const windowMs = config.FOOTFALL_LOGIN_WINDOW_S * 1000;
  const now = Date.now();
  if (now - prunedAt > 60_000) {
    prunedAt = now;
    await pruneAttempts(db, config);
  }
  const since = new Date(now - windowMs).toISOString();
  for (const [where, max] of [
    [and(eq(idpAttempts.kind, l.kind), eq(idpAttempts.key, l.key), gt(idpAttempts.at, since)), l.perKey],
    [and(eq(idpAttempts.kind, l.kind), eq(idpAttempts.ip, l.ip), gt(idpAttempts.at, since)), l.perIp],
  ] as const) {
    const row = await one(db.select({ n: count(), oldest: min(idpAttempts.at) }).from(idpAttempts).where(where));
    if ((row?.n ?? 0) >= max) {
      const freeAt = row?.oldest ? Date.parse(row.oldest) + windowMs : now + windowMs;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((freeAt - now) / 1000)) };
    }
  }
  const id = (await returned(db.insert(idpAttempts).values({ kind: l.kind, key: l.key, ip: l.ip, at: new Date(now).toISOString() }).returning({ id: idpAttempts.id }))).id;
  return { ok: true, id };
}

/** The attempt ended for another reason than a wrong credential (e.g. the provider was down): it does not count. */
export async function forget(db: Db, id: number): Promise<void> {
  await db.delete(idpAttempts).where(eq(idpAttempts.id, id));
}

/** A success clears the key's failures (from every address). */
export async function clearKey(db: Db, kind: AttemptKind, key: string): Promise<void> {
  await db.delete(idpAttempts).where(and(eq(idpAttempts.kind, kind), eq(idpAttempts.key, key)));
}

/** Drops rows older than the window. */
export async function pruneAttempts(db: Db, config: Config): Promise<number> {
  const before = new Date(Date.now() - config.FOOTFALL_LOGIN_WINDOW_S * 1000).toISOString();
  return changes(await db.delete(idpAttempts).where(lt(idpAttempts.at, before)));
}
