import { sql } from 'drizzle-orm';
import { blob, index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { users } from '../auth/schema.js';
import { companies } from '../clients/schema.js';
import { shops } from '../shops/schema.js';

/**
 * A customer (spec: Customer, "visitor"): created by visit ingest when a face that passed the quality gate matches
 * nobody. `number` is per company and never reused (`V-<n>`). The template is the running mean of good embeddings
 * (512 little-endian float32) of one recognition model; different models never compare.
 *
 * Erasure keeps the row with `erased_at` set and everything else cleared (template, profile, counts); a merged-away
 * customer keeps the row with `merged_into` set (its references then name the survivor).
 */
export const customers = sqliteTable(
  'customers',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    number: integer('number').notNull(),
    recognitionModel: text('recognition_model').notNull().default(''),
    /** 512 little-endian float32, L2-normalised; null after erasure or merge. */
    template: blob('template', { mode: 'buffer' }),
    /** Good embeddings averaged into the template (the running mean's weight). */
    templateCount: integer('template_count').notNull().default(0),
    fullName: text('full_name').notNull().default(''),
    /** E.164, normalised (`+919876543210`), or ''. */
    phone: text('phone').notNull().default(''),
    email: text('email').notNull().default(''),
    gender: text('gender').notNull().default(''),
    /** YYYY-MM-DD or ''. */
    dateOfBirth: text('date_of_birth').notNull().default(''),
    notes: text('notes').notNull().default(''),
    consent: integer('consent', { mode: 'boolean' }).notNull().default(false),
    consentChangedAt: text('consent_changed_at'),
    profileUpdatedAt: text('profile_updated_at'),
    visitCount: integer('visit_count').notNull().default(0),
    firstSeenAt: text('first_seen_at'),
    lastSeenAt: text('last_seen_at'),
    createdAt: text('created_at').notNull(),
    /** Marked staff (PATCH /api/visitors/{id}): their visits make no arrivals and reports leave them out. */
    staff: integer('staff', { mode: 'boolean' }).notNull().default(false),
    staffChangedAt: text('staff_changed_at'),
    /** Deletion mark (erasure). */
    erasedAt: text('erased_at'),
    /** Merged into this customer (same company). */
    mergedInto: text('merged_into'),
    mergedAt: text('merged_at'),
    /** The company's gallery clock (`gallery_clocks.tick`) when the template, erasure or merge last changed. */
    galleryTick: integer('gallery_tick').notNull().default(0),
  },
  (t) => [
    uniqueIndex('customers_company_number_uq').on(t.companyId, t.number),
    index('customers_gallery_tick_idx').on(t.companyId, t.galleryTick),
    index('customers_company_seen_idx').on(t.companyId, t.lastSeenAt),
    index('customers_company_staff_idx').on(t.companyId, t.lastSeenAt).where(sql`staff = 1`),
  ],
);

/**
 * A company's gallery clock: every transaction that changes what its face galleries hold (ingest's new customers and
 * template updates, erasure, merge, template retention) moves it on by one and stamps the customers it changed with
 * the new tick (`customers.gallery_tick`). Each process's in-memory galleries remember the tick they are up to, so
 * the changes another process (or thread) made are the customers stamped after it (server/visits/gallery-clock.ts).
 */
export const galleryClocks = sqliteTable('gallery_clocks', {
  companyId: text('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  tick: integer('tick').notNull().default(0),
});

/** The consent record: every change of a customer's consent, kept after erasure (which records a revocation). */
export const customerConsents = sqliteTable(
  'customer_consents',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    customerId: text('customer_id')
      .notNull()
      .references(() => customers.id, { onDelete: 'cascade' }),
    consent: integer('consent', { mode: 'boolean' }).notNull(),
    /** `profile` (PUT profile), `erasure`, `merge`. */
    reason: text('reason').notNull(),
    at: text('at').notNull(),
    actorId: text('actor_id').references(() => users.id, { onDelete: 'set null' }),
    actorEmail: text('actor_email'),
  },
  (t) => [index('customer_consents_customer_idx').on(t.customerId, t.at)],
);

/**
 * Do-not-enrol markers of erased customers (server/identity/erasure.ts): a 256-bit keyed sketch of the erased
 * template and an expiry, nothing else (no customer id, no photo, no visit).
 */
export const doNotEnrol = sqliteTable(
  'do_not_enrol',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    recognitionModel: text('recognition_model').notNull(),
    sketch: blob('sketch', { mode: 'buffer' }).notNull(),
    expiresAt: text('expires_at').notNull(),
  },
  (t) => [index('do_not_enrol_company_idx').on(t.companyId, t.recognitionModel)],
);

/**
 * Face images uploaded by shop PCs (POST /api/agent/faces), stored under `<data>/images/<company>/<2 chars>/<id>.jpg`.
 * A row is written at upload (visit and customer null); ingest links it to the visit that names it and to that
 * visit's customer, or discards it (no customer, photos off). Unlinked rows older than an hour are swept.
 */
export const faceImages = sqliteTable(
  'face_images',
  {
    /** 128 random bits, base64url: the id in `/api/faces/<id>`. */
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id').references(() => shops.id, { onDelete: 'set null' }),
    customerId: text('customer_id').references(() => customers.id, { onDelete: 'set null' }),
    /** The visit's visit_id (uuid), once linked. */
    visitId: text('visit_id'),
    /** Relative to the data folder. */
    path: text('path').notNull(),
    createdAt: text('created_at').notNull(),
    linkedAt: text('linked_at'),
  },
  (t) => [
    index('face_images_customer_idx').on(t.customerId, t.createdAt),
    index('face_images_unlinked_idx').on(t.createdAt).where(sql`visit_id is null`),
  ],
);
