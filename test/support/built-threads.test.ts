import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { startThread } from '../../agent/thread.js';
import { spawnWorker } from '../../server/thread.js';
import { threadsFromDist } from './built-threads.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A repository in a temp folder: `files` (path -> mtime in seconds) written under it. */
function repoWith(files: Record<string, number>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-built-threads-'));
  dirs.push(root);
  for (const d of ['agent', 'server', 'shared']) fs.mkdirSync(path.join(root, d), { recursive: true });
  for (const [file, at] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), '// x\n');
    fs.utimesSync(path.join(root, file), at, at);
  }
  return root;
}

describe('threads from the build (test/support/built-threads.ts)', () => {
  it('uses dist/ only when every source a thread can load is built and no newer than its build', () => {
    const built = { 'server/a.ts': 100, 'dist/server/a.js': 200, 'agent/b/c.ts': 100, 'dist/agent/b/c.js': 200, 'shared/d.ts': 100, 'dist/shared/d.js': 100 };
    const root = repoWith(built);
    expect(threadsFromDist(root)).toBe(path.join(root, 'dist'));
    // Tests, declarations and the console's browser code are not thread code: no build of them is asked for.
    const others = repoWith({ ...built, 'server/a.test.ts': 900, 'shared/e.d.ts': 900, 'server/console/web/f.ts': 900 });
    expect(threadsFromDist(others)).toBe(path.join(others, 'dist'));
    // A source edited after the build, or one never built: the sources.
    expect(threadsFromDist(repoWith({ ...built, 'agent/b/c.ts': 300 }))).toBeUndefined();
    expect(threadsFromDist(repoWith({ ...built, 'shared/new.ts': 100 }))).toBeUndefined();
    expect(threadsFromDist(repoWith({ 'server/a.ts': 100 }))).toBeUndefined();
  });

  it('head office and the shop PC start a thread from the folder FOOTFALL_THREADS_FROM_DIST names', async () => {
    const root = repoWith({});
    const said = 'require("node:worker_threads").parentPort.postMessage(["from the build", require("node:worker_threads").workerData]);\n';
    for (const side of ['server', 'agent']) {
      fs.mkdirSync(path.join(root, 'dist', side, 'x'), { recursive: true });
      fs.writeFileSync(path.join(root, 'dist', side, 'x', 'worker.cjs'), said);
    }
    const before = process.env.FOOTFALL_THREADS_FROM_DIST;
    process.env.FOOTFALL_THREADS_FROM_DIST = path.join(root, 'dist');
    try {
      const first = (w: Worker) =>
        new Promise<unknown>((resolve, reject) => w.once('message', (m) => void w.terminate().then(() => resolve(m))).once('error', reject));
      expect(await first(spawnWorker(new URL(`file://${root}/server/x/worker.cjs`), { workerData: 1 }))).toEqual(['from the build', 1]);
      expect(await first(startThread(new URL(`file://${root}/agent/x/worker.cjs`), 2))).toEqual(['from the build', 2]);
    } finally {
      if (before === undefined) delete process.env.FOOTFALL_THREADS_FROM_DIST;
      else process.env.FOOTFALL_THREADS_FROM_DIST = before;
    }
  });
});
