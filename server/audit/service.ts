import type { Ctx } from '../context.js';
import type { Db } from '../db/open.js';
import { auditLog } from './schema.js';

export interface AuditEntry {
  action: string;
  companyId?: string | null;
  target?: string | null;
  detail?: Record<string, unknown>;
}

/** Writes an audit row naming the actor and the request; call it inside the write's transaction. */
export function audit(ctx: Ctx, entry: AuditEntry): void {
  const actor = ctx.state.actor;
  writeAudit(ctx.deps.store.db, {
    ...entry,
    companyId: entry.companyId === undefined ? (actor?.companyId ?? null) : entry.companyId,
    actorId: actor?.userId ?? null,
    actorEmail: actor?.email ?? null,
    requestId: ctx.state.requestId,
  });
}

export function writeAudit(db: Db, row: AuditEntry & { actorId?: string | null; actorEmail?: string | null; requestId?: string | null }): void {
  db.insert(auditLog)
    .values({
      at: new Date().toISOString(),
      companyId: row.companyId ?? null,
      actorId: row.actorId ?? null,
      actorEmail: row.actorEmail ?? null,
      action: row.action,
      target: row.target ?? null,
      detail: row.detail ?? null,
      requestId: row.requestId ?? null,
    })
    .run();
}
