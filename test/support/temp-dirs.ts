/**
 * Fresh folders for a test file: `const tempDir = tempDirs();` at the top of the file, then `await tempDir('models')`
 * makes `<os temp>/footfall-models-XXXXXX`; every folder made is removed after the file's tests.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

export function tempDirs(): (prefix: string) => Promise<string> {
  const made: string[] = [];
  afterAll(async () => {
    await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
  });
  return async (prefix) => {
    const d = await mkdtemp(join(tmpdir(), `footfall-${prefix}-`));
    made.push(d);
    return d;
  };
}
