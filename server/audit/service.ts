import type Database from 'better-sqlite3';
import type { Ctx } from '../context.js';
import type { Db } from '../db/open.js';
import { noteUnreadWrite } from '../db/read-cache.js';
import { onPostgres, run } from '../db/raw.js';
import { sql } from 'drizzle-orm';

export interface AuditEntry {
  action: string;
  companyId?: string | null;
  target?: string | null;
  detail?: Record<string, unknown>;
}

/** Writes an audit row naming the actor and the request; call it inside the write's transaction. */
export async function audit(ctx: Ctx, entry: AuditEntry): Promise<void> {
  const actor = ctx.state.actor;
  await writeAudit(ctx.deps.store.db, {
    ...entry,
    companyId: entry.companyId === undefined ? (actor?.companyId ?? null) : entry.companyId,
    actorId: actor?.userId ?? null,
    actorEmail: actor?.email ?? null,
    requestId: ctx.state.requestId,
  });
}

/**
 * The insert, prepared once per database (reads such as GET /api/visits write a photo-link row on every request):
 * better-sqlite3's own statement, the columns and encoding of drizzle's insert into auditLog (`detail` JSON text or
 * NULL).
 */
function insertStatement(db: Db) {
  return (db as unknown as { $client: Database.Database }).$client.prepare<[string, string | null, string | null, string | null, string, string | null, string | null, string | null]>(
    'insert into audit_log (at, company_id, actor_id, actor_email, action, target, detail, request_id) values (?, ?, ?, ?, ?, ?, ?, ?)',
  );
}

const inserts = new WeakMap<Db, ReturnType<typeof insertStatement>>();

export async function writeAudit(db: Db, row: AuditEntry & { actorId?: string | null; actorEmail?: string | null; requestId?: string | null }): Promise<void> {
  const values = [
    new Date().toISOString(),
    row.companyId ?? null,
    row.actorId ?? null,
    row.actorEmail ?? null,
    row.action,
    row.target ?? null,
    row.detail === undefined || row.detail === null ? null : JSON.stringify(row.detail),
    row.requestId ?? null,
  ] as const;
  if (onPostgres) {
    const [at, companyId, actorId, actorEmail, action, target, detail, requestId] = values;
    await run(
      db,
      sql`insert into audit_log (at, company_id, actor_id, actor_email, action, target, detail, request_id)
          values (${at}, ${companyId}, ${actorId}, ${actorEmail}, ${action}, ${target}, ${detail}::jsonb, ${requestId})`,
    );
    return;
  }
  let insert = inserts.get(db);
  if (!insert) inserts.set(db, (insert = insertStatement(db)));
  insert.run(...values);
  noteUnreadWrite(db, 1);
}

/** A sign-in (issue 29): who, how (`password`, `client`, `phone`), from which device; the actor is the member. */
export async function auditSignIn(db: Db, user: { id: string; companyId: string | null; email: string }, via: 'password' | 'client' | 'phone', requestId: string | undefined, detail: Record<string, unknown> = {}): Promise<void> {
  await writeAudit(db, { action: 'auth.sign_in', companyId: user.companyId, actorId: user.id, actorEmail: user.email, target: user.id, detail: { via, ...detail }, requestId: requestId ?? null });
}
