import { randomUUID } from 'node:crypto';
import { and, eq, gt, isNull, ne, sql } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/open.js';
import { dbVersion, noteUnreadWrite, readCache } from '../db/read-cache.js';
import { hashToken, newToken } from './tokens.js';
import { changes, one, prepareNamed, returned } from '../db/query.js';
import { onPostgres } from '../db/raw.js';
import { companies, retiredRefreshTokens, sessions, users } from '../db/tables.js';

export type SessionRow = typeof sessions.$inferSelect;
export type UserRow = typeof users.$inferSelect;
export type CompanyRow = typeof companies.$inferSelect;

export interface IssuedSession {
  session: SessionRow;
  accessToken: string;
  refreshToken: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

function lifetimes(config: Config, now: number) {
  return {
    accessExpiresAt: iso(now + config.FOOTFALL_ACCESS_TOKEN_TTL_S * 1000),
    expiresAt: iso(now + config.FOOTFALL_REFRESH_TOKEN_TTL_S * 1000),
  };
}

/** A new signed-in device for this user. Call inside a transaction. */
export async function createSession(db: Db, config: Config, user: UserRow, device: string): Promise<IssuedSession> {
  const now = Date.now();
  const accessToken = newToken('access');
  const refreshToken = newToken('refresh');
  const session = await returned(db
    .insert(sessions)
    .values({
      id: randomUUID(),
      userId: user.id,
      companyId: user.companyId,
      accessHash: hashToken(accessToken),
      refreshHash: hashToken(refreshToken),
      device,
      createdAt: iso(now),
      lastUsedAt: iso(now),
      ...lifetimes(config, now),
    })
    .returning());
  return { session, accessToken, refreshToken };
}

export interface Resolved {
  session: SessionRow;
  user: UserRow;
  company: CompanyRow | null;
}

function accessLookup(db: Db) {
  const query = db
    .select({ session: sessions, user: users, company: companies })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(companies, eq(companies.id, sessions.companyId))
    .where(eq(sessions.accessHash, sql.placeholder('hash')));
  return prepareNamed(query, 'sessions_by_access_hash');
}

/** Every request runs this lookup: its statement is built and prepared once per database (drizzle's prepare()). */
const accessLookups = new WeakMap<Db, ReturnType<typeof accessLookup>>();

/**
 * The session an access token belongs to, with its user and company, whatever its state. A token seen before is
 * answered from memory while the database has not changed since it was read (read-cache.ts: any write, on any
 * connection, but a session's last-used time or an audit row, drops it), so a revocation, a sign-out, a deactivated
 * user or company take effect on the very next request as before. On SQLite only: PostgreSQL asks every time
 * (below). The caller checks the state (expiry against now).
 */
export async function findByAccessToken(db: Db, token: string): Promise<Resolved | undefined> {
  const hash = hashToken(token);
  // PostgreSQL: asked every time, on purpose. The read cache there learns of another process's commits by a
  // notification that arrives a few ms after the commit (server/db/pg/changes.ts), and a session revoked through one
  // process must be refused by every process on its very next request (docs/scale-out.md, "The read cache on
  // PostgreSQL"). drizzle's pg prepared query is executed (its .all gives rows not yet mapped to the columns' objects).
  if (onPostgres) {
    let statement = accessLookups.get(db);
    if (!statement) accessLookups.set(db, (statement = accessLookup(db)));
    return (await statement.execute({ hash }))[0];
  }
  const cache = readCache<Resolved | null>(db, 'access-tokens', 4096);
  const version = dbVersion(db);
  const known = cache.get(hash, version);
  if (known !== undefined) return known ?? undefined;
  let lookup = accessLookups.get(db);
  if (!lookup) accessLookups.set(db, (lookup = accessLookup(db)));
  const found = lookup.get({ hash }) ?? undefined;
  cache.set(hash, version, found ?? null);
  return found;
}

export type RotateResult =
  | { ok: true; issued: IssuedSession; user: UserRow; company: CompanyRow | null }
  | { ok: false; reason: 'unknown' | 'reused' | 'ended' };

/**
 * Refresh: both tokens rotate. The old refresh token is retired at once; presenting a retired one again
 * revokes the whole session (someone else holds a copy). Call inside a transaction.
 *
 * The session is looked up first, the retired tokens only when no session holds the token (a retired token is never
 * a session's current one, so the answer is the same). On PostgreSQL the session's row is locked (`for update`): two
 * refreshes with one token at once, in two processes, are then one after the other as on SQLite, and the second,
 * finding the token rotated away once the first commits, finds it retired: `reused`, the session revoked.
 */
export async function rotate(db: Db, config: Config, refreshToken: string, device: string | undefined): Promise<RotateResult> {
  const hash = hashToken(refreshToken);
  const now = Date.now();
  const lookup = db
    .select({ session: sessions, user: users, company: companies })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(companies, eq(companies.id, sessions.companyId))
    .where(eq(sessions.refreshHash, hash));
  type Locking = { for(strength: 'update', config: { of: unknown }): typeof lookup };
  const row = await one(onPostgres ? (lookup as unknown as Locking).for('update', { of: sessions }) : lookup);
  if (!row) {
    const retired = await one(db.select().from(retiredRefreshTokens).where(eq(retiredRefreshTokens.hash, hash)));
    if (!retired) return { ok: false, reason: 'unknown' };
    await revokeSession(db, retired.sessionId, 'refresh_token_reused');
    return { ok: false, reason: 'reused' };
  }
  const { session, user, company } = row;
  if (session.revokedAt || session.expiresAt <= iso(now) || !user.active || (company && !company.active)) {
    return { ok: false, reason: 'ended' };
  }
  const accessToken = newToken('access');
  const nextRefresh = newToken('refresh');
  await db.insert(retiredRefreshTokens).values({ hash, sessionId: session.id, retiredAt: iso(now) });
  const updated = await returned(db
    .update(sessions)
    .set({
      accessHash: hashToken(accessToken),
      refreshHash: hashToken(nextRefresh),
      lastUsedAt: iso(now),
      ...(device ? { device } : {}),
      ...lifetimes(config, now),
    })
    .where(eq(sessions.id, session.id))
    .returning());
  return { ok: true, issued: { session: updated, accessToken, refreshToken: nextRefresh }, user, company };
}

const active = (now: string) => and(isNull(sessions.revokedAt), gt(sessions.expiresAt, now));

export async function revokeSession(db: Db, id: string, reason: string): Promise<number> {
  return changes(await db
    .update(sessions)
    .set({ revokedAt: iso(Date.now()), revokedReason: reason })
    .where(and(eq(sessions.id, id), isNull(sessions.revokedAt))));
}

/** Revokes every live session of a user, except one when given. Returns how many. */
export async function revokeUserSessions(db: Db, userId: string, reason: string, exceptId?: string): Promise<number> {
  const now = iso(Date.now());
  return changes(await db
    .update(sessions)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(sessions.userId, userId), active(now), exceptId ? ne(sessions.id, exceptId) : undefined)));
}

export async function revokeCompanySessions(db: Db, companyId: string, reason: string): Promise<number> {
  const now = iso(Date.now());
  return changes(await db
    .update(sessions)
    .set({ revokedAt: now, revokedReason: reason })
    .where(and(eq(sessions.companyId, companyId), active(now))));
}

export async function listUserSessions(db: Db, userId: string): Promise<SessionRow[]> {
  return await db
    .select()
    .from(sessions)
    .where(and(eq(sessions.userId, userId), active(iso(Date.now()))))
    .orderBy(sessions.createdAt);
}

let isoAt = 0;
let isoText = iso(0);

/** `new Date().toISOString()`, made at most once a millisecond (every request compares its token's expiry with it). */
export function nowIso(): string {
  const now = Date.now();
  if (now !== isoAt) {
    isoAt = now;
    isoText = iso(now);
  }
  return isoText;
}

/** A session row's last-used time in milliseconds, parsed once per row object (findByAccessToken's cached rows live on). */
const lastUsedMs = new WeakMap<SessionRow, { text: string; ms: number }>();

/** Marks use at most once a minute, so reads do not turn into a write each. */
export async function touchSession(db: Db, session: SessionRow): Promise<void> {
  const now = Date.now();
  let last = lastUsedMs.get(session);
  if (!last || last.text !== session.lastUsedAt) lastUsedMs.set(session, (last = { text: session.lastUsedAt, ms: Date.parse(session.lastUsedAt) }));
  if (now - last.ms < 60_000) return;
  const written = changes(await db.update(sessions).set({ lastUsedAt: iso(now) }).where(eq(sessions.id, session.id)));
  // SQLite's read-cache bookkeeping (on PostgreSQL the sessions table announces no changes: migration 0003).
  noteUnreadWrite(db, written);
  // The row may be findByAccessToken's cached one: keep it as the database now has it.
  session.lastUsedAt = iso(now);
}

/**
 * Forgets sessions that ended (revoked or expired) more than `keepDays` ago, with their retired refresh tokens
 * (cascade). A retired token of an ended session can no longer be replayed into anything, so nothing is lost.
 */
export async function pruneEndedSessions(db: Db, keepDays = 30): Promise<number> {
  const before = iso(Date.now() - keepDays * 86_400_000);
  return changes(await db
    .delete(sessions)
    .where(sql`(${sessions.revokedAt} is not null and ${sessions.revokedAt} < ${before}) or ${sessions.expiresAt} < ${before}`));
}
