import { bigint, index, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { users } from './auth.js';
import { companies } from './clients.js';

/** server/auth-service/schema.ts */
export const businesses = pgTable('businesses', {
  id: text('id').primaryKey(),
  companyId: text('company_id')
    .notNull()
    .unique()
    .references(() => companies.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  createdAt: timestamptz('created_at').notNull(),
});

export const idpLinks = pgTable(
  'idp_links',
  {
    providerUid: text('provider_uid').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    method: text('method', { enum: ['sign_up', 'verified_email', 'phone'] }).notNull(),
    createdAt: timestamptz('created_at').notNull(),
    lastSignInAt: timestamptz('last_sign_in_at'),
  },
  (t) => [index('idp_links_user_idx').on(t.userId, t.method)],
);

export const idpRevocations = pgTable('idp_revocations', {
  providerUid: text('provider_uid').primaryKey(),
  /** Seconds since 1970 (bigint: past 2038). */
  revokedBefore: bigint('revoked_before', { mode: 'number' }).notNull(),
  revokedAt: timestamptz('revoked_at').notNull(),
});

export const idpAttempts = pgTable(
  'idp_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    ip: text('ip').notNull(),
    at: timestamptz('at').notNull(),
  },
  (t) => [index('idp_attempts_key_idx').on(t.kind, t.key, t.at), index('idp_attempts_ip_idx').on(t.kind, t.ip, t.at)],
);
