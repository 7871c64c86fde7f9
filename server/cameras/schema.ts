import { sql } from 'drizzle-orm';
import { index, integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import type { Tuning } from '../../shared/agent-api.js';
import type { DoorStats } from '../../shared/messages.js';
import { companies } from '../clients/schema.js';
import { shops } from '../shops/schema.js';

/**
 * A camera of a shop. `camera_id` is immutable and unique among the shop's present cameras; DELETE keeps the row
 * as a tombstone (`deleted_at` set) so the shop PC learns of the removal, and frees the camera_id for reuse.
 */
export const cameras = sqliteTable(
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
    /** AES-256-GCM with the server key; null when the camera has no password. */
    password: text('password'),
    maxWidth: integer('max_width').notNull(),
    tuning: text('tuning', { mode: 'json' }).$type<Tuning>().notNull(),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    revision: integer('revision').notNull().default(1),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    deletedAt: text('deleted_at'),
    /** null until a shop PC reports on this camera. */
    connected: integer('connected', { mode: 'boolean' }),
    connectionReason: text('connection_reason'),
    stateReportedAt: text('state_reported_at'),
    /** Last report with connected true. */
    lastSeenAt: text('last_seen_at'),
    snapshotAt: text('snapshot_at'),
    /** The newest camera_checks row (the camera's Check object); null: never checked. */
    lastCheckId: text('last_check_id'),
    /** The shop PC's last word on counting at this camera's line (heartbeat `doors`, docs/body-counting.md); null: none yet. */
    doorStats: text('door_stats', { mode: 'json' }).$type<DoorStats>(),
    doorStatsAt: text('door_stats_at'),
  },
  (t) => [
    uniqueIndex('cameras_shop_camera_id_uq').on(t.shopId, t.cameraId).where(sql`deleted_at is null`),
    index('cameras_company_idx').on(t.companyId),
  ],
);

/**
 * Camera checks, newest last. The camera's Check object is its newest row. State: requested (waiting for or claimed
 * by the shop PC), done (answered), timed_out (released: not answered by release_at).
 */
export const cameraChecks = sqliteTable(
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
    requestedAt: text('requested_at').notNull(),
    requestedBy: text('requested_by'),
    releaseAt: text('release_at').notNull(),
    claimedAt: text('claimed_at'),
    answeredAt: text('answered_at'),
    verdict: text('verdict'),
    faces: integer('faces'),
    fractionBelowGate: real('fraction_below_gate'),
    reason: text('reason'),
    /** The answer carried a picture (stored as the camera's snapshot). */
    hasImage: integer('has_image', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [index('camera_checks_camera_idx').on(t.cameraUuid, t.requestedAt), index('camera_checks_shop_state_idx').on(t.shopId, t.state)],
);
