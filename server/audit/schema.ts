import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Append-only record of security-relevant actions. company_id is null for platform-level rows. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: text('at').notNull(),
    companyId: text('company_id'),
    actorId: text('actor_id'),
    actorEmail: text('actor_email'),
    action: text('action').notNull(),
    target: text('target'),
    detail: text('detail', { mode: 'json' }).$type<Record<string, unknown>>(),
    requestId: text('request_id'),
  },
  (t) => [
    index('audit_company_idx').on(t.companyId, t.at),
    // GET /api/audit: a company's rows newest first, paged by id.
    index('audit_company_id_idx').on(t.companyId, t.id),
    // The retention prune (FOOTFALL_AUDIT_RETENTION_DAYS): rows older than a time, every company.
    index('audit_at_idx').on(t.at),
  ],
);
