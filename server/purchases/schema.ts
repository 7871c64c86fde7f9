import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from '../auth/schema.js';
import { companies } from '../clients/schema.js';
import { customers } from '../customers/schema.js';
import { shops } from '../shops/schema.js';

/**
 * A sale linked to a customer (POST /api/purchases). The amount is kept in the currency's minor unit (paise, cents;
 * yen have none) so sums are exact.
 */
export const purchases = sqliteTable(
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
    amountMinor: integer('amount_minor').notNull(),
    /** ISO 4217, upper case. */
    currency: text('currency').notNull(),
    items: text('items', { mode: 'json' }).$type<string[]>().notNull(),
    source: text('source').notNull().default(''),
    notes: text('notes').notNull().default(''),
    createdAt: text('created_at').notNull(),
    createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
    createdByEmail: text('created_by_email'),
  },
  (t) => [index('purchases_company_idx').on(t.companyId, t.createdAt), index('purchases_customer_idx').on(t.customerId)],
);

