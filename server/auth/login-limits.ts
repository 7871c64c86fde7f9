import { and, count, eq, gt, lt } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/open.js';
import { one, returned, changes } from '../db/query.js';
import { loginFailures } from '../db/tables.js';

/**
 * Login throttling (spec: 10 failures per account or 60 per IP address in 15 minutes, cleared by a success).
 * Failures are rows in the database, so a restart does not reset them. A success clears that account's
 * failures (from every address); failures from the same address against other accounts still count.
 */
export async function isThrottled(db: Db, config: Config, email: string, ip: string): Promise<boolean> {
  const since = new Date(Date.now() - config.FOOTFALL_LOGIN_WINDOW_S * 1000).toISOString();
  const byAccount = await one(db.select({ n: count() }).from(loginFailures).where(and(eq(loginFailures.email, email), gt(loginFailures.at, since))));
  if ((byAccount?.n ?? 0) >= config.FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT) return true;
  const byIp = await one(db.select({ n: count() }).from(loginFailures).where(and(eq(loginFailures.ip, ip), gt(loginFailures.at, since))));
  return (byIp?.n ?? 0) >= config.FOOTFALL_LOGIN_MAX_FAILURES_IP;
}

/** Records a failure; returns its row id. */
export async function recordFailure(db: Db, email: string, ip: string): Promise<number> {
  return (await returned(db.insert(loginFailures).values({ email, ip, at: new Date().toISOString() }).returning({ id: loginFailures.id }))).id;
}

/**
 * Checks the limits and, in the same transaction, books this attempt as a failure before the password is
 * verified (argon2 takes tens of milliseconds). Concurrent attempts therefore cannot all pass the check at
 * once: the eleventh of a burst is refused like the eleventh of a sequence. Returns the booked row's id, or
 * undefined when the caller is throttled. A success clears the row with the rest (clearFailures); an attempt
 * that ends for another reason than a wrong password removes it with forgetAttempt.
 */
export async function bookAttempt(db: Db, config: Config, email: string, ip: string): Promise<number | undefined> {
  if (await isThrottled(db, config, email, ip)) return undefined;
  return await recordFailure(db, email, ip);
}

export async function forgetAttempt(db: Db, id: number): Promise<void> {
  await db.delete(loginFailures).where(eq(loginFailures.id, id));
}

export async function clearFailures(db: Db, email: string): Promise<void> {
  await db.delete(loginFailures).where(eq(loginFailures.email, email));
}

/** Drops rows older than the window; run now and then. */
export async function pruneFailures(db: Db, config: Config): Promise<number> {
  const before = new Date(Date.now() - config.FOOTFALL_LOGIN_WINDOW_S * 1000).toISOString();
  return changes(await db.delete(loginFailures).where(lt(loginFailures.at, before)));
}
