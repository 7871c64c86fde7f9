import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Starts one of the shop PC's worker threads (the face pipeline's, vision/worker.ts; the person detector's,
 * bodies/detector-worker.ts) on `entry`, the URL of its compiled `.js` file next to the caller. Built, that file is
 * loaded as it is. From TypeScript sources (vitest, tsx) Node 20 applies no ESM loader hooks (`--import tsx`,
 * module.register) inside worker threads: the thread starts from the build when FOOTFALL_THREADS_FROM_DIST names a
 * current one (the tests set it: test/support/built-threads.ts), else from the `.ts` file through tsx's CommonJS
 * require hook. Head office has its own (server/thread.ts): neither side imports the other.
 */
export function startThread(entry: URL, workerData: unknown): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(entry, { workerData });
  const built = process.env.FOOTFALL_THREADS_FROM_DIST;
  if (built) return new Worker(pathToFileURL(path.join(built, path.relative(path.dirname(built), fileURLToPath(entry)))), { workerData });
  const tsx = createRequire(import.meta.url).resolve('tsx/cjs');
  const boot = `require(${JSON.stringify(tsx)}); require(${JSON.stringify(fileURLToPath(entry).replace(/\.js$/, '.ts'))});`;
  return new Worker(boot, { eval: true, workerData });
}
