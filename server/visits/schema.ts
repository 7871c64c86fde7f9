import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';
import { customers } from '../customers/schema.js';
import { shops } from '../shops/schema.js';

/**
 * One visit (spec: Arrival): a stay of one person in one shop (docs/visits-and-customers.md). Ingest makes one from
 * the first sighting (a message on `ff/<company>/<shop>/up/visit`) and extends it with every later sighting of the
 * same customer in the same shop within FOOTFALL_VISIT_GAP_S of it, on any camera, in any delivery order.
 * `seq` is the platform-wide sequence (the rowid: ascending in commit order, never reused, never exposed: the feed
 * cursor seals it). `visit_id` is the shop PC's id of the sighting that made the visit, unique per company; every
 * sighting's id is kept in `sightings` (at-least-once delivery is de-duplicated there).
 */
export const visits = sqliteTable(
  'visits',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    visitId: text('visit_id').notNull(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id')
      .notNull()
      .references(() => shops.id, { onDelete: 'cascade' }),
    cameraId: text('camera_id').notNull(),
    /** The stay's start: its earliest sighting. */
    occurredAt: text('occurred_at').notNull(),
    /** The stay's end: its latest sighting (null only on rows written before stays, read as occurred_at). */
    lastSeenAt: text('last_seen_at'),
    /** last_seen_at minus occurred_at, in milliseconds (what reports average). */
    dwellMs: integer('dwell_ms').notNull().default(0),
    /** The customer is marked staff (customers.staff, copied on every change): no arrival, left out of reports. */
    staff: integer('staff', { mode: 'boolean' }).notNull().default(false),
    receivedAt: text('received_at').notNull(),
    /** null: footfall without identity (below the gate, no embedding, do-not-enrol, or an erased customer). */
    customerId: text('customer_id').references(() => customers.id, { onDelete: 'set null' }),
    isNewVisitor: integer('is_new_visitor', { mode: 'boolean' }).notNull().default(false),
    /** Cosine similarity to the matched customer's template; null when not matched. */
    similarity: real('similarity'),
    quality: real('quality').notNull(),
    passedGate: integer('passed_gate', { mode: 'boolean' }).notNull(),
    recognitionModel: text('recognition_model'),
    gender: text('gender'),
    age: real('age'),
    emotion: text('emotion'),
    faceImageId: text('face_image_id'),
    trackId: text('track_id'),
    /** The customer this visit was linked to before a merge re-linked it (history kept). */
    mergedFrom: text('merged_from'),
  },
  (t) => [
    // No unique index on (company_id, visit_id): a visit's visit_id is its first sighting's, and `sightings` already
    // refuses a sighting id twice per company. The index was a second guard that no query read, and about a tenth of
    // the pages every visit wrote (docs/decisions.md, "Ingest CPU per visit, third round").
    // Each index also holds the rowid (seq), so "company (or shop) = ? and seq > ? order by seq" is a range scan.
    index('visits_company_idx').on(t.companyId),
    index('visits_shop_idx').on(t.shopId),
    index('visits_customer_idx').on(t.customerId, t.occurredAt),
    // A customer's stays in a shop by end: the stay a sighting extends (ingest).
    index('visits_stay_idx').on(t.customerId, t.shopId, t.lastSeenAt),
  ],
);

/**
 * Every sighting (visit message) ingest has taken, by the shop PC's id: re-sends are dropped on it, whether the
 * sighting made a visit or extended one.
 */
export const sightings = sqliteTable(
  'sightings',
  {
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    visitId: text('visit_id').notNull(),
    receivedAt: text('received_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.visitId] })],
);
