import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import type { AlertRules } from '../../../alerts/rules.js';
import { timestamptz } from '../columns.js';
import { companies } from './clients.js';
import { shops } from './shops.js';

/** server/alerts/schema.ts */
export const alertSettings = pgTable('alert_settings', {
  companyId: text('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  rules: jsonb('rules').$type<AlertRules>().notNull(),
  emailTo: jsonb('email_to').$type<string[]>(),
  webhookUrl: text('webhook_url'),
  webhookSecret: text('webhook_secret'),
  updatedAt: timestamptz('updated_at').notNull(),
});

export const alerts = pgTable(
  'alerts',
  {
    seq: bigint('seq', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    id: text('id').notNull().unique(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    cameraUuid: text('camera_uuid'),
    kind: text('kind').notNull(),
    subject: text('subject').notNull(),
    message: text('message').notNull(),
    raisedAt: timestamptz('raised_at').notNull(),
    clearedAt: timestamptz('cleared_at'),
  },
  (t) => [
    uniqueIndex('alerts_open_subject_uq').on(t.companyId, t.subject).where(sql`cleared_at is null`),
    index('alerts_company_seq_idx').on(t.companyId, t.seq),
  ],
);

export const alertDeliveries = pgTable(
  'alert_deliveries',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    alertSeq: bigint('alert_seq', { mode: 'number' })
      .notNull()
      .references(() => alerts.seq, { onDelete: 'cascade' }),
    event: text('event', { enum: ['raised', 'cleared'] }).notNull(),
    channel: text('channel', { enum: ['email', 'webhook'] }).notNull(),
    target: text('target').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAt: timestamptz('next_at').notNull(),
    deliveredAt: timestamptz('delivered_at'),
    failedAt: timestamptz('failed_at'),
    lastError: text('last_error'),
  },
  (t) => [index('alert_deliveries_due_idx').on(t.nextAt).where(sql`delivered_at is null and failed_at is null`)],
);
