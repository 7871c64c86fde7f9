import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';
import { shops } from '../shops/schema.js';
import type { AlertRules } from './rules.js';

/**
 * A company's alert settings (docs/operations.md, "Alerts"): which rules are on (with their thresholds) and where
 * alerts go. No row: the default rules, e-mail to the company's owners and managers, no webhook.
 */
export const alertSettings = sqliteTable('alert_settings', {
  companyId: text('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  rules: text('rules', { mode: 'json' }).$type<AlertRules>().notNull(),
  /** Addresses that get alert e-mails; null: the company's active owners and managers. */
  emailTo: text('email_to', { mode: 'json' }).$type<string[]>(),
  webhookUrl: text('webhook_url'),
  /** The webhook's HMAC key, sealed with the server key (AES-256-GCM). */
  webhookSecret: text('webhook_secret'),
  updatedAt: text('updated_at').notNull(),
});

/**
 * An alert: raised when its rule's condition starts, cleared when it ends. `subject` names what it is about
 * (`<kind>:<shop id>[:<camera uuid>]`); at most one open (uncleared) alert per subject, so a condition is raised once
 * and cleared once. `seq` orders the history (the paging cursor).
 */
export const alerts = sqliteTable(
  'alerts',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    id: text('id').notNull().unique(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    /** The camera's uuid for camera rules; null for shop rules. */
    cameraUuid: text('camera_uuid'),
    kind: text('kind').notNull(),
    subject: text('subject').notNull(),
    /** A sentence for people: what is wrong. */
    message: text('message').notNull(),
    raisedAt: text('raised_at').notNull(),
    clearedAt: text('cleared_at'),
  },
  (t) => [
    uniqueIndex('alerts_open_subject_uq').on(t.companyId, t.subject).where(sql`cleared_at is null`),
    index('alerts_company_seq_idx').on(t.companyId, t.seq),
  ],
);

/**
 * One delivery of an alert's raising or clearing to one e-mail address or the webhook, retried with back-off until
 * delivered or given up (`failed_at`).
 */
export const alertDeliveries = sqliteTable(
  'alert_deliveries',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    alertSeq: integer('alert_seq')
      .notNull()
      .references(() => alerts.seq, { onDelete: 'cascade' }),
    event: text('event', { enum: ['raised', 'cleared'] }).notNull(),
    channel: text('channel', { enum: ['email', 'webhook'] }).notNull(),
    /** The address or the URL. */
    target: text('target').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAt: text('next_at').notNull(),
    deliveredAt: text('delivered_at'),
    failedAt: text('failed_at'),
    lastError: text('last_error'),
  },
  (t) => [index('alert_deliveries_due_idx').on(t.nextAt).where(sql`delivered_at is null and failed_at is null`)],
);
