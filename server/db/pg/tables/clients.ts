import { boolean, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';

/** server/clients/schema.ts */
export const companies = pgTable('companies', {
  id: text('id').primaryKey(),
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  active: boolean('active').notNull().default(true),
  createdAt: timestamptz('created_at').notNull(),
  suspendedAt: timestamptz('suspended_at'),
});
