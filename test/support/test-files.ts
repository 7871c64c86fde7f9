import { readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Every `*.test.ts` file under `dir` (relative paths when `dir` is), node_modules left out: for the vitest configs
 * that pick their files by what the files contain (vitest.shared.config.ts, vitest.postgres.config.ts).
 */
export function testFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFilesUnder(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}
