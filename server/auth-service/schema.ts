import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from '../auth/schema.js';
import { companies } from '../clients/schema.js';

/**
 * The business of a company (spec auth-service-v2: tenant = company, business = this row). One per company, made by
 * sign-up, or on first use for companies that existed before (docs/auth-service.md).
 */
export const businesses = sqliteTable('businesses', {
  id: text('id').primaryKey(),
  companyId: text('company_id')
    .notNull()
    .unique()
    .references(() => companies.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  createdAt: text('created_at').notNull(),
});

/**
 * An identity-provider account (its uid, "localId") linked to one of our users. Made only by our own sign-up
 * (`sign_up`), by a provider-verified email at sign-in (`verified_email`) or by a phone sign-in that named the member
 * (`phone`), never by an unverified email: anyone holding the public API key can create provider accounts.
 */
export const idpLinks = sqliteTable(
  'idp_links',
  {
    providerUid: text('provider_uid').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    method: text('method', { enum: ['sign_up', 'verified_email', 'phone'] }).notNull(),
    createdAt: text('created_at').notNull(),
    lastSignInAt: text('last_sign_in_at'),
  },
  (t) => [index('idp_links_user_idx').on(t.userId, t.method)],
);

/**
 * Sign-outs: ID tokens of this provider account authenticated before `revoked_before` (seconds, the provider's
 * validSince) are refused without asking the provider.
 */
export const idpRevocations = sqliteTable('idp_revocations', {
  providerUid: text('provider_uid').primaryKey(),
  revokedBefore: integer('revoked_before').notNull(),
  revokedAt: text('revoked_at').notNull(),
});

/**
 * Attempts counted by the /auth limits (kind: sign_in, sms, code, token); rows, so a restart does not reset them.
 * `key` is the email, the phone number or a hash of an SMS session, never a password, code or token.
 */
export const idpAttempts = sqliteTable(
  'idp_attempts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    ip: text('ip').notNull(),
    at: text('at').notNull(),
  },
  (t) => [index('idp_attempts_key_idx').on(t.kind, t.key, t.at), index('idp_attempts_ip_idx').on(t.kind, t.ip, t.at)],
);
