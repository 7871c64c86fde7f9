import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { users } from '../auth/schema.js';

/**
 * The embedded identity provider's state (docs/auth-service.md, "Embedded provider"). Its accounts are head
 * office's own users (one person, one account: the same row and argon2id hash as /api/auth/login), so only the
 * sessions and the one-time codes live here.
 */

/**
 * Refresh tokens (Secure Token API). Opaque random values; only their SHA-256 is kept. Rotated on every use (the
 * row is replaced), deleted by sign-out. `auth_time` is the sign-in's, carried into every ID token they mint.
 */
export const idpRefreshTokens = sqliteTable(
  'idp_refresh_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    uid: text('uid')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** `password` or `phone` (the ID token's firebase.sign_in_provider). */
    signInProvider: text('sign_in_provider', { enum: ['password', 'phone'] }).notNull(),
    /** The verified number of a phone sign-in. */
    phone: text('phone'),
    authTime: integer('auth_time').notNull(),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(),
  },
  (t) => [index('idp_refresh_tokens_uid_idx').on(t.uid)],
);

/**
 * One-time codes sent by text message. `id` is the SHA-256 of the sessionInfo handed to the caller; the code is
 * kept as an HMAC (key in the data dir). Attempts are counted before the comparison; a used code is gone.
 */
export const idpCodes = sqliteTable(
  'idp_codes',
  {
    id: text('id').primaryKey(),
    phone: text('phone').notNull(),
    codeMac: text('code_mac').notNull(),
    attempts: integer('attempts').notNull().default(0),
    /** Epoch milliseconds. */
    expiresAt: integer('expires_at').notNull(),
    usedAt: text('used_at'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [index('idp_codes_expires_idx').on(t.expiresAt)],
);
