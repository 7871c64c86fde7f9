import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { companies } from '../clients/schema.js';

/** Every person who signs in: merchants (company_id set) and platform admins (company_id null, role admin). */
export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').references(() => companies.id, { onDelete: 'cascade' }),
    email: text('email').notNull().unique(),
    fullName: text('full_name').notNull(),
    role: text('role', { enum: ['staff', 'manager', 'owner', 'admin'] }).notNull(),
    passwordHash: text('password_hash').notNull(),
    active: integer('active', { mode: 'boolean' }).notNull().default(true),
    lastLoginAt: text('last_login_at'),
    createdAt: text('created_at').notNull(),
    /** E.164, for staff phone sign-in (docs/team.md, docs/auth-service.md); unique among a company's active members. */
    phone: text('phone'),
  },
  (t) => [
    index('users_company_idx').on(t.companyId),
    uniqueIndex('users_company_phone_active_idx').on(t.companyId, t.phone).where(sql`active = 1 and phone is not null`),
    index('users_phone_idx').on(t.phone),
  ],
);

/** A signed-in device. Only SHA-256 hashes of the tokens are kept. */
export const sessions = sqliteTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    companyId: text('company_id').references(() => companies.id, { onDelete: 'cascade' }),
    accessHash: text('access_hash').notNull().unique(),
    refreshHash: text('refresh_hash').notNull().unique(),
    device: text('device').notNull(),
    createdAt: text('created_at').notNull(),
    lastUsedAt: text('last_used_at').notNull(),
    accessExpiresAt: text('access_expires_at').notNull(),
    expiresAt: text('expires_at').notNull(),
    revokedAt: text('revoked_at'),
    revokedReason: text('revoked_reason'),
  },
  (t) => [index('sessions_user_idx').on(t.userId), index('sessions_company_idx').on(t.companyId)],
);

/** Refresh tokens already rotated away; presenting one again revokes its session (reuse detection). */
export const retiredRefreshTokens = sqliteTable('retired_refresh_tokens', {
  hash: text('hash').primaryKey(),
  sessionId: text('session_id')
    .notNull()
    .references(() => sessions.id, { onDelete: 'cascade' }),
  retiredAt: text('retired_at').notNull(),
});

/** Failed sign-ins, persisted so the limits survive a restart. */
export const loginFailures = sqliteTable(
  'login_failures',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    email: text('email').notNull(),
    ip: text('ip').notNull(),
    at: text('at').notNull(),
  },
  (t) => [index('login_failures_email_idx').on(t.email, t.at), index('login_failures_ip_idx').on(t.ip, t.at)],
);
