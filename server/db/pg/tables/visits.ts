import { bigint, boolean, doublePrecision, index, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { companies } from './clients.js';
import { customers } from './customers.js';
import { shops } from './shops.js';

/**
 * server/visits/schema.ts. `seq` is an identity column here: unlike SQLite's rowid, a sequence value is taken at
 * insert, not at commit, so concurrent writers can commit out of seq order (docs/scale-out.md, the feed cursor).
 */
export const visits = pgTable(
  'visits',
  {
    seq: bigint('seq', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    visitId: text('visit_id').notNull(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    cameraId: text('camera_id').notNull(),
    occurredAt: timestamptz('occurred_at').notNull(),
    lastSeenAt: timestamptz('last_seen_at'),
    dwellMs: bigint('dwell_ms', { mode: 'number' }).notNull().default(0),
    staff: boolean('staff').notNull().default(false),
    receivedAt: timestamptz('received_at').notNull(),
    customerId: text('customer_id').references(() => customers.id, { onDelete: 'set null' }),
    isNewVisitor: boolean('is_new_visitor').notNull().default(false),
    similarity: doublePrecision('similarity'),
    quality: doublePrecision('quality').notNull(),
    passedGate: boolean('passed_gate').notNull(),
    recognitionModel: text('recognition_model'),
    gender: text('gender'),
    age: doublePrecision('age'),
    emotion: text('emotion'),
    faceImageId: text('face_image_id'),
    trackId: text('track_id'),
    mergedFrom: text('merged_from'),
  },
  (t) => [
    // No unique index on (company_id, visit_id): `sightings` refuses a sighting id twice (server/visits/schema.ts).
    // SQLite's indexes hold the rowid implicitly; here seq is named, so "company (or shop) = ? and seq > ?" stays a range scan.
    index('visits_company_idx').on(t.companyId, t.seq),
    index('visits_shop_idx').on(t.shopId, t.seq),
    index('visits_customer_idx').on(t.customerId, t.occurredAt),
    index('visits_stay_idx').on(t.customerId, t.shopId, t.lastSeenAt),
  ],
);

export const sightings = pgTable(
  'sightings',
  {
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    visitId: text('visit_id').notNull(),
    receivedAt: timestamptz('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.visitId] })],
);
