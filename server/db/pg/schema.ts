/**
 * Every table of the PostgreSQL store (FOOTFALL_DATABASE_URL), for drizzle's pg-core: table for table and column for
 * column the SQLite schema (server/db/schema.ts), with the same names and the same TypeScript property names, so one
 * row object fits both. Types are mapped as docs/scale-out.md says; server/db/pg/schema.test.ts fails when the two drift.
 * Migrations: `npm run db:generate:pg -- --name <what>` into server/db/pg/migrations.
 */
export * from './tables/clients.js';
export * from './tables/auth.js';
export * from './tables/audit.js';
export * from './tables/team.js';
export * from './tables/shops.js';
export * from './tables/cameras.js';
export * from './tables/customers.js';
export * from './tables/visits.js';
export * from './tables/purchases.js';
export * from './tables/auth-service.js';
export * from './tables/idp.js';
export * from './tables/crossings.js';
export * from './tables/privacy.js';
export * from './tables/alerts.js';
export * from './tables/digests.js';
export * from './tables/pictures.js';
