import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread on a server module, given as the URL of its compiled `.js` file next to the caller
 * (`new URL('./worker.js', import.meta.url)`). Built (dist/), that file is loaded as it is. From TypeScript sources
 * (vitest, tsx) there is no `.js` file and Node 20 applies no ESM loader hooks inside worker threads, so the thread
 * starts from the build when FOOTFALL_THREADS_FROM_DIST names a current one (the tests set it:
 * test/support/built-threads.ts), else the `.ts` file is loaded through tsx's CommonJS hook from a small eval'd boot
 * script (as agent/thread.ts does; the server does not import agent code). Used by the ingest thread
 * (visits/ingest.ts) and the report threads (reports/pool.ts).
 */
export function spawnWorker(entry: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(entry, options);
  const dist = process.env.FOOTFALL_THREADS_FROM_DIST;
  if (dist) return new Worker(pathToFileURL(path.join(dist, path.relative(path.dirname(dist), fileURLToPath(entry)))), options);
  const require = createRequire(import.meta.url);
  const source = fileURLToPath(entry).replace(/\.js$/, '.ts');
  return new Worker(`require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(source)});`, { ...options, eval: true });
}
