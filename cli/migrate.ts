import path from 'node:path';
import { Command } from 'commander';
import { configOrExit } from './server-config.js';
import { KEY_FILE, DATABASE, IMAGES } from '../server/backup/backup.js';
import { KEYED_COLUMNS, MigrateError, migrateSqliteToPostgres, redactUrl } from '../server/db/pg/migrate.js';

/**
 * `footfall migrate --to postgres://...` (docs/scale-out.md): the embedded database of FOOTFALL_DATA_DIR (head office
 * may keep running: it is read as one snapshot) into an empty PostgreSQL database, checked table by table.
 */
export function migrateCommand(): Command {
  return new Command('migrate')
    .description('Copy the embedded database (FOOTFALL_DATA_DIR) into an empty PostgreSQL database, in one transaction, checked by rows and keys per table')
    .requiredOption('--to <url>', 'postgres://user:password@host:5432/database, an empty database the user owns')
    .option('--from <file>', `the SQLite file to copy (default: ${DATABASE} in FOOTFALL_DATA_DIR)`)
    .action(async (opts: { to: string; from?: string }) => {
      const config = configOrExit();
      const file = path.resolve(opts.from ?? path.join(config.dataDir, DATABASE));
      const out = (line: string) => process.stdout.write(line + '\n');
      out(`Copying ${file} into ${redactUrl(opts.to)} ...`);
      try {
        // The pictures are files beside the database: in the data folder, or beside the --from file.
        const dataDir = opts.from ? path.dirname(file) : config.dataDir;
        const r = await migrateSqliteToPostgres({
          sqliteFile: file,
          url: opts.to,
          dataDir,
          onTable: (t) => out(`  ${t.table.padEnd(24)} ${String(t.rows).padStart(10)} rows  keys checked (sum ${t.keySum})`),
        });
        out(`Done: ${r.tables.length} tables, ${r.rows} rows, committed in one transaction after ${r.migrationsApplied} schema migration(s).`);
        out(`Every table has as many rows as SQLite had and the same keys (a checksum of each table's primary keys, computed by both).`);
        if (r.sequences.length) out(`Numbering continues after the copied rows: ${r.sequences.map((s) => `${s.table}.${s.column} at ${s.next}`).join(', ')}.`);
        out(`This is the database as it was at ${r.snapshotAt}: what head office wrote after that is only in ${file}. Stop head office before the copy you switch to.`);
        out('');
        out(`The key goes with it: secrets were copied sealed as they are (${KEYED_COLUMNS.join(', ')}).`);
        out(
          config.FOOTFALL_ENCRYPTION_KEY
            ? 'The key of this head office is FOOTFALL_ENCRYPTION_KEY: give a head office on this database the same value.'
            : `The key of this head office is ${path.join(config.dataDir, KEY_FILE)}: a head office on this database needs that file in its data folder (or its value in FOOTFALL_ENCRYPTION_KEY). Without it camera passwords, shop logins and webhook secrets cannot be read. Back it up with pg_dump's output, apart from it.`,
        );
        const p = r.pictures!;
        out(`Pictures from ${dataDir} are rows now: ${p.faces} customer photos (${path.join(dataDir, IMAGES)}) and ${p.cameras} camera pictures (snapshots), counted on both sides; head office on PostgreSQL serves them to every process.`);
        if (p.facesMissing > 0) out(`${p.facesMissing} customer photo rows had no file in ${path.join(dataDir, IMAGES)} (deleted by hand, or another data folder): copied as they were, they answer 404 as they did.`);
        out('Next: start head office with FOOTFALL_DATABASE_URL set to this database (docs/scale-out.md).');
      } catch (err) {
        if (err instanceof MigrateError) {
          process.stderr.write(err.message + '\n');
          process.exitCode = 1;
          return;
        }
        throw err;
      }
    });
}
