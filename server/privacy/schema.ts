import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';

export const RECOGNITION_MODES = ['all', 'consented', 'off'] as const;
export type RecognitionMode = (typeof RECOGNITION_MODES)[number];

/**
 * A company's privacy settings (docs/privacy.md). No row: the defaults (recognition `all`, templates of customers
 * without consent kept 90 days after they were last seen, visits kept). `sweep_requested_at` is set by a change and
 * cleared by the sweep that applied it (a sweep cut short by a restart runs again on start).
 */
export const companyPrivacy = sqliteTable('company_privacy', {
  companyId: text('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  recognition: text('recognition', { enum: RECOGNITION_MODES }).notNull().default('all'),
  templateRetentionDays: integer('template_retention_days').notNull().default(90),
  /** null: visits and crossings are kept. */
  visitRetentionDays: integer('visit_retention_days'),
  updatedAt: text('updated_at'),
  updatedBy: text('updated_by'),
  sweepRequestedAt: text('sweep_requested_at'),
  sweptAt: text('swept_at'),
});
