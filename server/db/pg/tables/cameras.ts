import { sql } from 'drizzle-orm';
import { boolean, doublePrecision, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import type { Tuning } from '../../../../shared/agent-api.js';
import type { DoorStats } from '../../../../shared/messages.js';
import { timestamptz } from '../columns.js';
import { companies } from './clients.js';
import { shops } from './shops.js';

/** server/cameras/schema.ts */
export const cameras = pgTable(
  'cameras',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    cameraId: text('camera_id').notNull(),
    label: text('label').notNull(),
    host: text('host').notNull(),
    port: integer('port').notNull(),
    path: text('path').notNull(),
    username: text('username').notNull(),
    password: text('password'),
    maxWidth: integer('max_width').notNull(),
    tuning: jsonb('tuning').$type<Tuning>().notNull(),
    enabled: boolean('enabled').notNull().default(true),
    revision: integer('revision').notNull().default(1),
    createdAt: timestamptz('created_at').notNull(),
    updatedAt: timestamptz('updated_at').notNull(),
    deletedAt: timestamptz('deleted_at'),
    connected: boolean('connected'),
    connectionReason: text('connection_reason'),
    stateReportedAt: timestamptz('state_reported_at'),
    lastSeenAt: timestamptz('last_seen_at'),
    snapshotAt: timestamptz('snapshot_at'),
    lastCheckId: text('last_check_id'),
    doorStats: jsonb('door_stats').$type<DoorStats>(),
    doorStatsAt: timestamptz('door_stats_at'),
  },
  (t) => [
    uniqueIndex('cameras_shop_camera_id_uq').on(t.shopId, t.cameraId).where(sql`deleted_at is null`),
    index('cameras_company_idx').on(t.companyId),
  ],
);

export const cameraChecks = pgTable(
  'camera_checks',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    cameraUuid: text('camera_uuid')
      .notNull()
      .references(() => cameras.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: ['connection', 'placement'] }).notNull(),
    seconds: integer('seconds'),
    state: text('state', { enum: ['requested', 'done', 'timed_out'] }).notNull(),
    requestedAt: timestamptz('requested_at').notNull(),
    requestedBy: text('requested_by'),
    releaseAt: timestamptz('release_at').notNull(),
    claimedAt: timestamptz('claimed_at'),
    answeredAt: timestamptz('answered_at'),
    verdict: text('verdict'),
    faces: integer('faces'),
    fractionBelowGate: doublePrecision('fraction_below_gate'),
    reason: text('reason'),
    hasImage: boolean('has_image').notNull().default(false),
  },
  (t) => [index('camera_checks_camera_idx').on(t.cameraUuid, t.requestedAt), index('camera_checks_shop_state_idx').on(t.shopId, t.state)],
);
