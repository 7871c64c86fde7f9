import type { Ctx } from '../context.js';
import type { Store } from '../db/open.js';
import { noteUnreadWrite } from '../db/read-cache.js';
import { preparedStatements } from '../db/statement.js';

export interface AuditEntry {
  action: string;
  companyId?: string | null;
  target?: string | null;
  detail?: Record<string, unknown>;
}

/** Writes an audit row naming the actor and the request; call it inside the write's transaction. */
export async function audit(ctx: Ctx, entry: AuditEntry): Promise<void> {
  const actor = ctx.state.actor;
  await writeAudit(ctx.deps.store, {
    ...entry,
    companyId: entry.companyId === undefined ? (actor?.companyId ?? null) : entry.companyId,
    actorId: actor?.userId ?? null,
    actorEmail: actor?.email ?? null,
    requestId: ctx.state.requestId,
  });
}

/**
 * The insert, prepared once per store (reads such as GET /api/visits write a photo-link row on every request): the
 * columns and encoding of drizzle's insert into auditLog, `detail` JSON text (jsonb on PostgreSQL) or NULL. Inside
 * `store.tx` it runs in the transaction, on either store (server/db/statement.ts).
 */
const statementsOf = preparedStatements((prep) => ({
  insert: prep(
    'insert into audit_log (at, company_id, actor_id, actor_email, action, target, detail, request_id) values (?, ?, ?, ?, ?, ?, ?, ?)',
    'insert into audit_log (at, company_id, actor_id, actor_email, action, target, detail, request_id) values (?, ?, ?, ?, ?, ?, ?::jsonb, ?)',
  ),
}));

export async function writeAudit(store: Store, row: AuditEntry & { actorId?: string | null; actorEmail?: string | null; requestId?: string | null }): Promise<void> {
  await statementsOf(store).insert.run(
    new Date().toISOString(),
    row.companyId ?? null,
    row.actorId ?? null,
    row.actorEmail ?? null,
    row.action,
    row.target ?? null,
    row.detail === undefined || row.detail === null ? null : JSON.stringify(row.detail),
    row.requestId ?? null,
  );
  noteUnreadWrite(store.db, 1);
}

/** A sign-in (issue 29): who, how (`password`, `client`, `phone`), from which device; the actor is the member. */
export async function auditSignIn(store: Store, user: { id: string; companyId: string | null; email: string }, via: 'password' | 'client' | 'phone', requestId: string | undefined, detail: Record<string, unknown> = {}): Promise<void> {
  await writeAudit(store, { action: 'auth.sign_in', companyId: user.companyId, actorId: user.id, actorEmail: user.email, target: user.id, detail: { via, ...detail }, requestId: requestId ?? null });
}
