import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** A company (tenant, "client"). The slug is immutable. */
export const companies = sqliteTable('companies', {
  id: text('id').primaryKey(),
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  active: integer('active', { mode: 'boolean' }).notNull().default(true),
  createdAt: text('created_at').notNull(),
  suspendedAt: text('suspended_at'),
});
