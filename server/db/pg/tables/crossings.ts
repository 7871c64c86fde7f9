import { bigint, index, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { cameras } from './cameras.js';
import { companies } from './clients.js';
import { shops } from './shops.js';

/** server/crossings/schema.ts */
export const crossings = pgTable(
  'crossings',
  {
    seq: bigint('seq', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    crossingId: text('crossing_id').notNull(),
    cameraId: text('camera_id').notNull(),
    cameraUuid: text('camera_uuid').references(() => cameras.id, { onDelete: 'set null' }),
    direction: text('direction', { enum: ['in', 'out'] }).notNull(),
    occurredAt: timestamptz('occurred_at').notNull(),
    receivedAt: timestamptz('received_at').notNull(),
    trackId: text('track_id'),
  },
  (t) => [
    uniqueIndex('crossings_shop_crossing_uq').on(t.shopId, t.crossingId),
    index('crossings_shop_time_idx').on(t.shopId, t.occurredAt, t.direction),
    index('crossings_shop_direction_time_idx').on(t.shopId, t.direction, t.occurredAt),
    index('crossings_company_idx').on(t.companyId),
    index('crossings_camera_time_idx').on(t.cameraUuid, t.occurredAt),
  ],
);
