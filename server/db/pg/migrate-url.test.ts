import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrateSqliteToPostgres, MigrateError } from './migrate.js';

/**
 * `footfall migrate --to` checks its URL before touching anything, with the rule FOOTFALL_DATABASE_URL uses
 * (server/db/dialect.ts): no PostgreSQL needed here; the copy itself is test/migrate-postgres.test.ts.
 */
describe('migrate --to: the URL', () => {
  const missing = path.join(os.tmpdir(), `footfall-migrate-url-${process.pid}`, 'footfall.db');

  it('refuses a URL that is not PostgreSQL, with the password hidden', async () => {
    const err = await migrateSqliteToPostgres({ sqliteFile: missing, url: 'mysql://app:s3cret@db:3306/footfall' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrateError);
    expect((err as Error).message).toBe('--to must be a postgres:// or postgresql:// URL, not mysql://app:***@db:3306/footfall.');
  });

  it.each(['postgres://u@db/footfall', 'postgresql://u@db/footfall', 'POSTGRES://u@db/footfall', 'PostgreSQL://u@db/footfall'])(
    'takes %s (the scheme in any case) and goes on to the database file',
    async (url) => {
      const err = await migrateSqliteToPostgres({ sqliteFile: missing, url }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MigrateError);
      expect((err as Error).message).toBe(`There is no database at ${missing}: is FOOTFALL_DATA_DIR the head office's data folder?`);
    },
  );
});
