import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Command } from 'commander';
import { vi } from 'vitest';
import { packageRoot } from '../../server/paths.js';

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

export interface FootfallRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `footfall` CLI (dist/cli/main.js) as its own process from the package root, to its end. */
export function runFootfall(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<FootfallRun> {
  const root = packageRoot();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'dist/cli/main.js'), ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
