#!/usr/bin/env node
import { Command } from 'commander';

/**
 * Each command's module is imported only when that command runs, so a shop PC running `footfall agent` does
 * not load head-office code (and the reverse). `footfall --help` loads them all to list them.
 */
const commands: Record<string, () => Promise<Command>> = {
  server: async () => (await import('./server.js')).serverCommand(),
  admin: async () => (await import('./server.js')).adminCommand(),
  backup: async () => (await import('./backup.js')).backupCommand(),
  restore: async () => (await import('./backup.js')).restoreCommand(),
  migrate: async () => (await import('./migrate.js')).migrateCommand(),
  models: async () => (await import('./models.js')).modelsCommand(),
  enrol: async () => (await import('./agent.js')).enrolCommand(),
  agent: async () => (await import('./agent.js')).agentCommand(),
  vision: async () => (await import('./vision.js')).visionCommand(),
  camera: async () => (await import('./camera-command.js')).cameraCommand(),
  status: async () => (await import('./status.js')).statusCommand(),
};

const program = new Command('footfall').description('Footfall: head office, shop-PC agent and installer tools').showHelpAfterError();

const asked = process.argv[2];
const load = asked !== undefined && asked in commands ? [asked] : Object.keys(commands);
for (const name of load) program.addCommand(await commands[name]!());

await program.parseAsync(process.argv);
