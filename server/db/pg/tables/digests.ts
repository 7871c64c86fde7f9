import { date, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { users } from './auth.js';
import { companies } from './clients.js';

/** server/digests/schema.ts */
export const reportSubscriptions = pgTable('report_subscriptions', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  companyId: text('company_id')
    .notNull()
    .references(() => companies.id, { onDelete: 'cascade' }),
  frequency: text('frequency', { enum: ['daily', 'weekly', 'off'] }).notNull(),
  /** First day of the last period sent, `YYYY-MM-DD`. */
  lastDaily: date('last_daily', { mode: 'string' }),
  lastWeekly: date('last_weekly', { mode: 'string' }),
  updatedAt: timestamptz('updated_at').notNull(),
});
