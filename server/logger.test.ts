import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot } from './paths.js';

/**
 * The head office's log on stdout (the built logger, in a process of its own as `npm start` runs it): lines logged in
 * one turn of the event loop are written together at its end, in order, redacted, promptly, and what is pending
 * when the process exits is written before it goes.
 */
const logger = pathToFileURL(path.join(packageRoot(), 'dist/server/logger.js')).href;

function run(script: string, onLine?: (line: Record<string, unknown>, at: number) => void): Promise<{ lines: Record<string, unknown>[]; code: number | null }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { createLogger } from ${JSON.stringify(logger)};\n${script}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  let rest = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    rest += chunk;
    const parts = rest.split('\n');
    rest = parts.pop()!;
    for (const p of parts) {
      const line = JSON.parse(p) as Record<string, unknown>;
      lines.push(line);
      onLine?.(line, Date.now());
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ lines, code })));
}

describe('the head office log on stdout', () => {
  it('writes every line in order, redacted, and what is pending at exit', async () => {
    const { lines, code } = await run(`
      const log = createLogger('info');
      log.info({ n: 1 }, 'one');
      log.info({ n: 2, password: 'hunter2' }, 'two');
      setImmediate(() => {
        log.info({ n: 3 }, 'three');
        log.child({ req_id: 'r-1' }).warn({ n: 4 }, 'four');
        process.exit(0); // lines still pending in this turn go out on exit
      });
    `);
    expect(code).toBe(0);
    expect(lines.map((l) => [l.n, l.msg, l.level])).toEqual([
      [1, 'one', 30],
      [2, 'two', 30],
      [3, 'three', 30],
      [4, 'four', 40],
    ]);
    expect(lines[1]!.password).toBe('[redacted]');
    expect(lines[3]!.req_id).toBe('r-1');
    expect(lines.every((l) => l.service === 'footfall-head-office' && typeof l.time === 'number')).toBe(true);
  });

  it('writes a line at the end of the turn it was logged in, not later', async () => {
    let seenAt = 0;
    const { lines } = await run(
      `
      const log = createLogger('info');
      log.info({ loggedAt: Date.now() }, 'ready');
      setTimeout(() => process.exit(0), 6000); // nothing else happens until then
    `,
      (_l, at) => (seenAt ||= at),
    );
    expect(lines).toHaveLength(1);
    // Well before the exit, with room for a loaded machine's stall: a line held until exit would come after 6 s.
    expect(seenAt - Number(lines[0]!.loggedAt)).toBeLessThan(3000);
  });
});
