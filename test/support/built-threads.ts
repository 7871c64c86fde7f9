/**
 * A setup file of every test run (vitest.config.ts): worker threads start from the build when it is current.
 *
 * Head office's ingest and report threads and the shop PC's face and person-detector threads are started from a
 * `.js` file. Under vitest the code runs from TypeScript sources, so without a build each thread loads its `.ts`
 * modules through tsx's CommonJS hook: about twice the CPU of loading the built modules, and the suite starts some
 * 140 such threads (measured: ~1.7 s of CPU each under the profiler, a third of the workers' CPU in the run). When
 * `dist/` holds a build at least as new as every source file the threads can load (agent/, server/ and shared/,
 * tests aside), this sets FOOTFALL_THREADS_FROM_DIST to that folder and the threads start from it
 * (server/thread.ts, agent/thread.ts); `npm test` builds first, so it always does. After an edit without a build
 * the sources are newer and the threads load the sources, as before: a test never runs a stale thread.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The console's browser code: built apart (its own tsconfig), never loaded by a thread. */
const CONSOLE_WEB = path.join('server', 'console', 'web') + path.sep;

/** Whether every non-test `.ts` file under root/dir has its built `.js` in root/dist/, written no earlier. */
function builtAndCurrent(root: string, dir: string): boolean {
  const dist = path.join(root, 'dist');
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts') || entry.name.endsWith('.d.ts')) continue;
    const source = path.join(entry.parentPath, entry.name);
    const rel = path.relative(root, source);
    if (rel.startsWith(CONSOLE_WEB)) continue;
    const built = path.join(dist, rel.replace(/\.ts$/, '.js'));
    let builtAt: number;
    try {
      builtAt = fs.statSync(built).mtimeMs;
    } catch {
      return false;
    }
    if (builtAt < fs.statSync(source).mtimeMs) return false;
  }
  return true;
}

/** `root`'s dist/ when it is current for every source a thread can load, else undefined. */
export function threadsFromDist(root: string): string | undefined {
  return ['agent', 'server', 'shared'].every((dir) => builtAndCurrent(root, dir)) ? path.join(root, 'dist') : undefined;
}

const from = threadsFromDist(repo);
if (from) process.env.FOOTFALL_THREADS_FROM_DIST = from;
else delete process.env.FOOTFALL_THREADS_FROM_DIST;
