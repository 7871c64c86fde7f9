import type { Command } from 'commander';
import { vi } from 'vitest';

/**
 * Runs a `footfall` subcommand in this process with `console.log` / `console.error` captured (the spies stay until
 * the caller's vi.restoreAllMocks()): what the command printed, joined by lines.
 */
export async function runCommand(command: Command, args: string[]): Promise<{ out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  await command.parseAsync(args, { from: 'user' });
  return { out: out.join('\n'), err: err.join('\n') };
}
