#!/usr/bin/env node
import { Command } from 'commander';
import { adminCommand, serverCommand } from './server.js';
import { modelsCommand } from './models.js';
import { agentCommand, enrolCommand } from './agent.js';
import { visionCommand } from './vision.js';

const program = new Command('footfall')
  .description('Footfall: head office, shop-PC agent and installer tools')
  .showHelpAfterError()
  .addCommand(serverCommand())
  .addCommand(adminCommand())
  .addCommand(modelsCommand())
  .addCommand(enrolCommand())
  .addCommand(agentCommand())
  .addCommand(visionCommand());

await program.parseAsync(process.argv);
