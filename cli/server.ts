import path from 'node:path';
import { Command } from 'commander';
import { configOrExit } from './server-config.js';
import { openDatabase } from '../server/db/open.js';
import { AdminError, createAdmin } from '../server/auth/admins.js';

export function serverCommand(): Command {
  return new Command('server')
    .description('Run head office: the HTTP API (for the web console and the mobile app), embedded MQTT broker, SQLite database (configured by FOOTFALL_* variables; see README)')
    .action(async () => {
      const config = configOrExit();
      // Imported here, not at the top: `footfall admin create` shares this module and needs none of it.
      const { startServer } = await import('../server/start.js');
      let running: Awaited<ReturnType<typeof startServer>>;
      try {
        running = await startServer(config);
      } catch (err) {
        // A port in use, an unreadable data folder...: one line naming the cause, not a stack trace.
        process.stderr.write(`Head office could not start: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      }
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        running.deps.log.info({ signal }, 'shutting down');
        running.close().then(
          () => process.exit(0),
          (err: unknown) => {
            running.deps.log.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
    });
}

export function adminCommand(): Command {
  const admin = new Command('admin').description('Platform administrators');
  admin
    .command('create')
    .description('Create a platform admin in the database under FOOTFALL_DATA_DIR (works while the server runs)')
    .requiredOption('--email <email>', 'the admin\'s email address')
    .option('--password <password>', 'at least 8 characters; omit to have one generated and printed once')
    .action(async (opts: { email: string; password?: string }) => {
      const config = configOrExit();
      const file = path.resolve(config.dataDir, 'footfall.db');
      const store = openDatabase(file);
      try {
        const made = await createAdmin(store, opts.email, opts.password);
        process.stdout.write(`Platform admin created: ${made.email} (database ${file})\n`);
        if (made.generated) process.stdout.write(`Password (shown once, not stored anywhere): ${made.password}\n`);
      } catch (err) {
        if (err instanceof AdminError) {
          process.stderr.write(err.message + '\n');
          process.exitCode = 1;
          return;
        }
        throw err;
      } finally {
        store.close();
      }
    });
  return admin;
}
