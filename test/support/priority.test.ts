import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { BATCH_NICE, threadIds } from './priority.js';

describe('a batch test file runs below the camera files', () => {
  it('every thread of its process and what it starts run at nice 10 or lower (the setup file lowered them)', () => {
    for (const tid of threadIds()) expect(os.getPriority(tid), `thread ${tid}`).toBeGreaterThanOrEqual(BATCH_NICE);
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(require("node:os").getPriority()))'], { encoding: 'utf8' });
    expect(Number(child.stdout)).toBeGreaterThanOrEqual(BATCH_NICE);
  });
});
