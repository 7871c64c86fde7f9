import { bigint, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';

/** server/audit/schema.ts */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    at: timestamptz('at').notNull(),
    companyId: text('company_id'),
    actorId: text('actor_id'),
    actorEmail: text('actor_email'),
    action: text('action').notNull(),
    target: text('target'),
    detail: jsonb('detail').$type<Record<string, unknown>>(),
    requestId: text('request_id'),
  },
  (t) => [index('audit_company_idx').on(t.companyId, t.at), index('audit_company_id_idx').on(t.companyId, t.id), index('audit_at_idx').on(t.at)],
);
