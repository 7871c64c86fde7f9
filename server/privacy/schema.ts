import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';
import { shops } from '../shops/schema.js';

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

/**
 * Visits and door crossings aged out by `visit_retention_days` (docs/privacy.md, "visit_retention_days"): counts per
 * shop and 15-minute UTC slot (every zone's offset is a whole number of quarter hours, so any report bucket, in any
 * zone, is a union of slots). `day` is the shop's local date the slot belongs to. Staff's visits are not counted, as
 * reports leave them out. Reports add these to what they count from the rows still held (server/reports/aged.ts);
 * a slot holds only what was deleted from `visits` and `crossings`, so nothing is counted twice.
 */
export const footfallCounts = sqliteTable(
  'footfall_counts',
  {
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    /** UTC start of the slot, `YYYY-MM-DDTHH:MM:00.000Z`, minutes 00, 15, 30 or 45. */
    slotAt: text('slot_at').notNull(),
    day: text('day').notNull(),
    visits: integer('visits').notNull().default(0),
    belowGate: integer('below_gate').notNull().default(0),
    /** Visits without a customer. */
    anon: integer('anon').notNull().default(0),
    dwellMs: integer('dwell_ms').notNull().default(0),
    /** Customers whose first visit to the shop on that local day began in the slot (each counted once per shop and day). */
    known: integer('known').notNull().default(0),
    /** Of `known`, those whose first visit ever (customers.first_seen_at) was on that local day. */
    fresh: integer('fresh').notNull().default(0),
    /** The same per UTC hour (each customer once per shop and hour, in the slot of their first visit in it): hour buckets. */
    knownHour: integer('known_hour').notNull().default(0),
    freshHour: integer('fresh_hour').notNull().default(0),
    entries: integer('entries').notNull().default(0),
    exits: integer('exits').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.shopId, t.slotAt] })],
);
