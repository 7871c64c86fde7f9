import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from '../auth/schema.js';
import { companies } from '../clients/schema.js';

/**
 * A member's scheduled report e-mail (docs/reports.md, "Scheduled e-mails"). No row: the default (weekly for owners
 * and managers, none for staff). `last_period` is the first day of the last period sent, so each is sent once.
 */
export const reportSubscriptions = sqliteTable('report_subscriptions', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  companyId: text('company_id')
    .notNull()
    .references(() => companies.id, { onDelete: 'cascade' }),
  frequency: text('frequency', { enum: ['daily', 'weekly', 'off'] }).notNull(),
  lastDaily: text('last_daily'),
  lastWeekly: text('last_weekly'),
  updatedAt: text('updated_at').notNull(),
});
