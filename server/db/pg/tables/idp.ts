import { bigint, index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz } from '../columns.js';
import { users } from './auth.js';

/** server/idp/schema.ts */
export const idpRefreshTokens = pgTable(
  'idp_refresh_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    uid: text('uid')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    signInProvider: text('sign_in_provider', { enum: ['password', 'phone'] }).notNull(),
    phone: text('phone'),
    /** Seconds since 1970. */
    authTime: bigint('auth_time', { mode: 'number' }).notNull(),
    createdAt: timestamptz('created_at').notNull(),
    expiresAt: timestamptz('expires_at').notNull(),
  },
  (t) => [index('idp_refresh_tokens_uid_idx').on(t.uid)],
);

export const idpCodes = pgTable(
  'idp_codes',
  {
    id: text('id').primaryKey(),
    phone: text('phone').notNull(),
    codeMac: text('code_mac').notNull(),
    attempts: integer('attempts').notNull().default(0),
    /** Epoch milliseconds, as in SQLite (a number, not a timestamp column). */
    expiresAt: bigint('expires_at', { mode: 'number' }).notNull(),
    usedAt: timestamptz('used_at'),
    createdAt: timestamptz('created_at').notNull(),
  },
  (t) => [index('idp_codes_expires_idx').on(t.expiresAt)],
);
