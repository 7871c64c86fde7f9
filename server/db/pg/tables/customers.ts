import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytes, timestamptz } from '../columns.js';
import { users } from './auth.js';
import { companies } from './clients.js';
import { shops } from './shops.js';

/** server/customers/schema.ts */
export const customers = pgTable(
  'customers',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    number: integer('number').notNull(),
    recognitionModel: text('recognition_model').notNull().default(''),
    template: bytes('template'),
    templateCount: integer('template_count').notNull().default(0),
    fullName: text('full_name').notNull().default(''),
    phone: text('phone').notNull().default(''),
    email: text('email').notNull().default(''),
    gender: text('gender').notNull().default(''),
    /** YYYY-MM-DD or '' (so text, not date). */
    dateOfBirth: text('date_of_birth').notNull().default(''),
    notes: text('notes').notNull().default(''),
    consent: boolean('consent').notNull().default(false),
    consentChangedAt: timestamptz('consent_changed_at'),
    profileUpdatedAt: timestamptz('profile_updated_at'),
    visitCount: integer('visit_count').notNull().default(0),
    firstSeenAt: timestamptz('first_seen_at'),
    lastSeenAt: timestamptz('last_seen_at'),
    createdAt: timestamptz('created_at').notNull(),
    staff: boolean('staff').notNull().default(false),
    staffChangedAt: timestamptz('staff_changed_at'),
    erasedAt: timestamptz('erased_at'),
    mergedInto: text('merged_into'),
    mergedAt: timestamptz('merged_at'),
    galleryTick: bigint('gallery_tick', { mode: 'number' }).notNull().default(0),
  },
  (t) => [
    uniqueIndex('customers_company_number_uq').on(t.companyId, t.number),
    index('customers_gallery_tick_idx').on(t.companyId, t.galleryTick),
    index('customers_company_seen_idx').on(t.companyId, t.lastSeenAt),
    index('customers_company_staff_idx').on(t.companyId, t.lastSeenAt).where(sql`staff`),
  ],
);

export const galleryClocks = pgTable('gallery_clocks', {
  companyId: text('company_id')
    .primaryKey()
    .references(() => companies.id, { onDelete: 'cascade' }),
  tick: bigint('tick', { mode: 'number' }).notNull().default(0),
});

export const customerConsents = pgTable(
  'customer_consents',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    customerId: text('customer_id')
      .notNull()
      .references(() => customers.id, { onDelete: 'cascade' }),
    consent: boolean('consent').notNull(),
    reason: text('reason').notNull(),
    at: timestamptz('at').notNull(),
    actorId: text('actor_id').references(() => users.id, { onDelete: 'set null' }),
    actorEmail: text('actor_email'),
  },
  (t) => [index('customer_consents_customer_idx').on(t.customerId, t.at)],
);

export const doNotEnrol = pgTable(
  'do_not_enrol',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    recognitionModel: text('recognition_model').notNull(),
    sketch: bytes('sketch').notNull(),
    expiresAt: timestamptz('expires_at').notNull(),
  },
  (t) => [index('do_not_enrol_company_idx').on(t.companyId, t.recognitionModel)],
);

export const faceImages = pgTable(
  'face_images',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    shopId: text('shop_id').references(() => shops.id, { onDelete: 'set null' }),
    customerId: text('customer_id').references(() => customers.id, { onDelete: 'set null' }),
    visitId: text('visit_id'),
    path: text('path').notNull(),
    createdAt: timestamptz('created_at').notNull(),
    linkedAt: timestamptz('linked_at'),
  },
  (t) => [
    index('face_images_customer_idx').on(t.customerId, t.createdAt),
    index('face_images_unlinked_idx').on(t.createdAt).where(sql`visit_id is null`),
  ],
);
