import { defineConfig } from 'drizzle-kit';

/** The PostgreSQL store's migrations (FOOTFALL_DATABASE_URL): `npm run db:generate:pg -- --name <what>`. */
export default defineConfig({
  dialect: 'postgresql',
  schema: './server/db/pg/schema.ts',
  out: './server/db/pg/migrations',
});
