import { bigint, index, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { users } from './auth.js';
import { companies } from './clients.js';
import { customers } from './customers.js';
import { shops } from './shops.js';

/** server/purchases/schema.ts */
export const purchases = pgTable(
  'purchases',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    customerId: text('customer_id')
      .notNull()
      .references(() => customers.id, { onDelete: 'cascade' }),
    shopId: text('shop_id').references(() => shops.id, { onDelete: 'set null' }),
    amountMinor: bigint('amount_minor', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    items: jsonb('items').$type<string[]>().notNull(),
    source: text('source').notNull().default(''),
    notes: text('notes').notNull().default(''),
    createdAt: timestamptz('created_at').notNull(),
    createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdByEmail: text('created_by_email'),
  },
  (t) => [index('purchases_company_idx').on(t.companyId, t.createdAt), index('purchases_customer_idx').on(t.customerId)],
);
