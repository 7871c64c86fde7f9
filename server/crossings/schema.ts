import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { cameras } from '../cameras/schema.js';
import { companies } from '../clients/schema.js';
import { shops } from '../shops/schema.js';

/**
 * One body crossing a camera's counting line (docs/body-counting.md): an entry (`in`) or an exit (`out`), from a
 * message on `ff/<company>/<shop>/up/crossing`. `crossing_id` is the shop PC's id, unique per shop: a re-send
 * (at-least-once delivery) is a no-op, and the same id from another shop is that shop's own crossing.
 * `camera_id` is the name the shop PC sent; `camera_uuid` the camera it named when it arrived (null: no camera of
 * the shop had that camera_id then, or the camera row is gone; the crossing still counts for the shop).
 */
export const crossings = sqliteTable(
  'crossings',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    crossingId: text('crossing_id').notNull(),
    cameraId: text('camera_id').notNull(),
    cameraUuid: text('camera_uuid').references(() => cameras.id, { onDelete: 'set null' }),
    /** `in` (entry) or `out` (exit). */
    direction: text('direction', { enum: ['in', 'out'] }).notNull(),
    /** UTC, `YYYY-MM-DDTHH:MM:SS.sssZ` (normalised from the message, so text order is time order). */
    occurredAt: text('occurred_at').notNull(),
    receivedAt: text('received_at').notNull(),
    trackId: text('track_id'),
  },
  (t) => [
    uniqueIndex('crossings_shop_crossing_uq').on(t.shopId, t.crossingId),
    // Occupancy (since local midnight): the day's crossings in time order, a covering range scan per shop.
    index('crossings_shop_time_idx').on(t.shopId, t.occurredAt, t.direction),
    // Entries and exits per report bucket (and today's): one counted index range per shop, bucket and direction.
    index('crossings_shop_direction_time_idx').on(t.shopId, t.direction, t.occurredAt),
    index('crossings_company_idx').on(t.companyId),
    // A camera's counting health (GET /api/cameras `counting`): its crossings in the last hour and its last one.
    index('crossings_camera_time_idx').on(t.cameraUuid, t.occurredAt),
  ],
);
