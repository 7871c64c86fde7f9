/**
 * Which store head office runs on: the embedded SQLite file, or PostgreSQL when FOOTFALL_DATABASE_URL is set
 * (docs/scale-out.md). Read once per process, when the tables are chosen (server/db/tables.ts).
 */
export type Dialect = 'sqlite' | 'postgres';

/**
 * A PostgreSQL connection URL (`postgres://` or `postgresql://`, the scheme in any case as RFC 3986 allows): the only
 * kind FOOTFALL_DATABASE_URL (server/config.ts) and `footfall migrate --to` (server/db/pg/migrate.ts) take.
 */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

export function databaseDialect(env: NodeJS.ProcessEnv = process.env): Dialect {
  const url = env.FOOTFALL_DATABASE_URL?.trim();
  return url && isPostgresUrl(url) ? 'postgres' : 'sqlite';
}
