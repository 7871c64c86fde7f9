import { Command } from 'commander';
import { configOrExit } from './server-config.js';
import { BackupError, createBackup, restoreBackup } from '../server/backup/backup.js';
import { appVersion } from '../server/paths.js';

/** A BackupError is the user's to fix: its message alone, exit code 1. */
async function orExplain(fn: () => Promise<void> | void): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof BackupError) {
      process.stderr.write(err.message + '\n');
      process.exitCode = 1;
      return;
    }
    throw err;
  }
}

export function backupCommand(): Command {
  return new Command('backup')
    .description('Copy head office\'s data (database, key file, customer photos) into a new folder; head office may keep running')
    .argument('<folder>', 'where to write the backup: a new or empty folder')
    .option('--without-key', 'leave the key file out (keep it apart from the backup; restore then needs it back)')
    .action((folder: string, opts: { withoutKey?: boolean }) =>
      orExplain(async () => {
        const config = configOrExit();
        const m = await createBackup({ dataDir: config.dataDir, target: folder, keyFromEnv: Boolean(config.FOOTFALL_ENCRYPTION_KEY), withoutKey: opts.withoutKey === true, appVersion: appVersion() });
        const bytes = m.files.reduce((n, f) => n + f.bytes, 0);
        process.stdout.write(`Backup written to ${folder}: ${m.files.length} files, ${(bytes / 1e6).toFixed(1)} MB, checked.\n`);
        if (!m.includes_key) {
          process.stdout.write(
            config.FOOTFALL_ENCRYPTION_KEY
              ? 'The key is not in it: it comes from FOOTFALL_ENCRYPTION_KEY. Keep that value with the backup (apart from it); without it camera passwords and shop logins cannot be read.\n'
              : 'The key file is not in it (--without-key). Keep a copy of encryption.key apart; without it camera passwords and shop logins cannot be read.\n',
          );
        } else {
          process.stdout.write('It holds the key file and customers\' face data: keep it as safe as head office itself.\n');
        }
      }),
    );
}

export function restoreCommand(): Command {
  return new Command('restore')
    .description('Put a backup into FOOTFALL_DATA_DIR, which must have no database (stop head office and move the old folder aside first)')
    .argument('<folder>', 'a folder written by footfall backup')
    .action((folder: string) =>
      orExplain(() => {
        const config = configOrExit();
        const m = restoreBackup({ source: folder, dataDir: config.dataDir });
        process.stdout.write(`Restored the backup of ${m.created_at} into ${config.dataDir} (${m.files.length} files, all checked). Start head office.\n`);
        if (!m.includes_key) process.stdout.write(`The backup has no key: put encryption.key back into ${config.dataDir}, or set FOOTFALL_ENCRYPTION_KEY as before, first.\n`);
      }),
    );
}
