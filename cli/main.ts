#!/usr/bin/env node
import { Command } from 'commander';
import { adminCommand, serverCommand } from './server.js';
import { modelsCommand } from './models.js';

const program = new Command('footfall')
  .description('Footfall: head office, shop-PC agent and installer tools')
  .showHelpAfterError()
  .addCommand(serverCommand())
  .addCommand(adminCommand())
  .addCommand(modelsCommand());

await program.parseAsync(process.argv);
