import { index, integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';
import { customers } from '../customers/schema.js';
import { shops } from '../shops/schema.js';

/**
 * One visit (spec: Arrival), as ingested from `ff/<company>/<shop>/up/visit`. `seq` is the platform-wide sequence
 * (the rowid: ascending in commit order, never reused, never exposed except inside the opaque feed cursor).
 * `visit_id` is the shop PC's id, unique per company (at-least-once delivery is de-duplicated on it).
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
    occurredAt: text('occurred_at').notNull(),
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
    uniqueIndex('visits_company_visit_uq').on(t.companyId, t.visitId),
    // Each index also holds the rowid (seq), so "company (or shop) = ? and seq > ? order by seq" is a range scan.
    index('visits_company_idx').on(t.companyId),
    index('visits_shop_idx').on(t.shopId),
    index('visits_customer_idx').on(t.customerId, t.occurredAt),
  ],
);
