import { index, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from '../auth/schema.js';
import { companies } from '../clients/schema.js';

/**
 * An invitation to join a company. Only the HMAC of the code is kept (keys.codeHash); the code itself is
 * shown once, in the creation response. State is derived from the timestamps: pending (none set and
 * expires_at in the future), redeemed, withdrawn or expired.
 */
export const invitations = sqliteTable(
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
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
    redeemedAt: text('redeemed_at'),
    redeemedUserId: text('redeemed_user_id').references(() => users.id, { onDelete: 'set null' }),
    withdrawnAt: text('withdrawn_at'),
  },
  (t) => [index('invitations_company_idx').on(t.companyId, t.createdAt), index('invitations_email_idx').on(t.email)],
);
