import { and, desc, eq, gte, lt, lte, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { onPostgres, run } from '../db/raw.js';
import { auditLog } from '../db/tables.js';

export type AuditRow = typeof auditLog.$inferSelect;

export interface AuditFilter {
  companyId: string;
  /** A user id, or an email address (as it was when they acted). */
  actor?: string;
  /** An exact action (`customer.view`) or a family ending in a dot (`customer.`). */
  action?: string;
  /** A customer id: rows about them (target, or detail's visitor_id / merged_id / a face of theirs). */
  customerId?: string;
  from?: string;
  to?: string;
  /** Rows older than this id (the cursor). */
  before?: number;
  limit: number;
}

/** One page of a company's audit rows, newest first; `more` when older rows match too. */
export async function listAudit(db: Db, f: AuditFilter): Promise<{ rows: AuditRow[]; more: boolean }> {
  const where: (SQL | undefined)[] = [eq(auditLog.companyId, f.companyId)];
  if (f.before !== undefined) where.push(lt(auditLog.id, f.before));
  if (f.actor) where.push(f.actor.includes('@') ? eq(sql`lower(${auditLog.actorEmail})`, f.actor.toLowerCase()) : eq(auditLog.actorId, f.actor));
  if (f.action) where.push(f.action.endsWith('.') ? sql`substr(${auditLog.action}, 1, ${f.action.length}) = ${f.action}` : eq(auditLog.action, f.action));
  if (f.from) where.push(gte(auditLog.at, f.from));
  if (f.to) where.push(lte(auditLog.at, f.to));
  if (f.customerId) {
    const id = f.customerId;
    // detail is JSON text on SQLite, jsonb on PostgreSQL (`->>` gives a field as text, null when absent).
    where.push(
      or(
        eq(auditLog.target, id),
        ...(onPostgres
          ? [
              sql`${auditLog.detail} ->> 'visitor_id' = ${id}`,
              sql`${auditLog.detail} ->> 'merged_id' = ${id}`,
              // jsonb_array_elements refuses a non-array: a detail without `faces` gives it null (no rows).
              sql`exists (select 1 from jsonb_array_elements(case when jsonb_typeof(${auditLog.detail} -> 'faces') = 'array' then ${auditLog.detail} -> 'faces' end) f where f ->> 'visitor_id' = ${id})`,
            ]
          : [
              sql`json_extract(${auditLog.detail}, '$.visitor_id') = ${id}`,
              sql`json_extract(${auditLog.detail}, '$.merged_id') = ${id}`,
              sql`exists (select 1 from json_each(${auditLog.detail}, '$.faces') where json_extract(value, '$.visitor_id') = ${id})`,
            ]),
      ),
    );
  }
  const rows = await db
    .select()
    .from(auditLog)
    .where(and(...where))
    .orderBy(desc(auditLog.id))
    .limit(f.limit + 1);
  const more = rows.length > f.limit;
  return { rows: more ? rows.slice(0, f.limit) : rows, more };
}

/** Deletes audit rows older than `days` days, in batches; returns how many went. */
export async function pruneAudit(db: Db, days: number, now = Date.now()): Promise<number> {
  const cutoff = new Date(now - days * 86_400_000).toISOString();
  let total = 0;
  for (;;) {
    const n = await run(db, sql`delete from audit_log where id in (select id from audit_log where at < ${cutoff} limit 5000)`);
    total += n;
    if (n < 5000) return total;
  }
}
