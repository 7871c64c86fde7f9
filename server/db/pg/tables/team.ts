import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { users } from './auth.js';
import { companies } from './clients.js';

/** server/team/schema.ts */
export const invitations = pgTable(
  'invitations',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id')
      .notNull()
      .references(() => companies.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    fullName: text('full_name').notNull(),
    role: text('role', { enum: ['staff', 'manager', 'owner'] }).notNull(),
    codeHash: text('code_hash').notNull().unique(),
    invitedBy: text('invited_by').references(() => users.id, { onDelete: 'set null' }),
    invitedByEmail: text('invited_by_email').notNull(),
    createdAt: timestamptz('created_at').notNull(),
    expiresAt: timestamptz('expires_at').notNull(),
    redeemedAt: timestamptz('redeemed_at'),
    redeemedUserId: text('redeemed_user_id').references(() => users.id, { onDelete: 'set null' }),
    withdrawnAt: timestamptz('withdrawn_at'),
  },
  (t) => [index('invitations_company_idx').on(t.companyId, t.createdAt), index('invitations_email_idx').on(t.email)],
);
