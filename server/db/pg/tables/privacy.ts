import { bigint, date, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { RECOGNITION_MODES } from '../../../privacy/schema.js';
import { timestamptz } from '../columns.js';
import { companies } from './clients.js';
import { shops } from './shops.js';

/** server/privacy/schema.ts */
export const companyPrivacy = pgTable('company_privacy', {
  companyId: text('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  recognition: text('recognition', { enum: RECOGNITION_MODES }).notNull().default('all'),
  templateRetentionDays: integer('template_retention_days').notNull().default(90),
  visitRetentionDays: integer('visit_retention_days'),
  updatedAt: timestamptz('updated_at'),
  updatedBy: text('updated_by'),
  sweepRequestedAt: timestamptz('sweep_requested_at'),
  sweptAt: timestamptz('swept_at'),
});

export const footfallCounts = pgTable(
  'footfall_counts',
  {
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    slotAt: timestamptz('slot_at').notNull(),
    /** The shop's local date, `YYYY-MM-DD` (date's text form, as SQLite holds it). */
    day: date('day', { mode: 'string' }).notNull(),
    visits: integer('visits').notNull().default(0),
    belowGate: integer('below_gate').notNull().default(0),
    anon: integer('anon').notNull().default(0),
    /** A sum over a slot's visits: bigint. */
    dwellMs: bigint('dwell_ms', { mode: 'number' }).notNull().default(0),
    known: integer('known').notNull().default(0),
    fresh: integer('fresh').notNull().default(0),
    knownHour: integer('known_hour').notNull().default(0),
    freshHour: integer('fresh_hour').notNull().default(0),
    entries: integer('entries').notNull().default(0),
    exits: integer('exits').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.shopId, t.slotAt] })],
);
