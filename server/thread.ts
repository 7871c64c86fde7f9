import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread on a server module, given as the URL of its compiled `.js` file next to the caller
 * (`new URL('./worker.js', import.meta.url)`). Built (dist/), that file is loaded as it is. From TypeScript sources
 * (vitest, tsx) there is no `.js` file and Node 20 applies no ESM loader hooks inside worker threads, so the `.ts`
 * file is loaded through tsx's CommonJS hook from a small eval'd boot script (as agent/vision/engine.ts does; the
 * server does not import agent code). Used by the ingest thread (visits/ingest.ts) and the report threads
 * (reports/pool.ts).
 */
export function spawnWorker(entry: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(entry, options);
  const require = createRequire(import.meta.url);
  const tsxCjs = require.resolve('tsx/cjs');
  const source = fileURLToPath(entry).replace(/\.js$/, '.ts');
  return new Worker(`require(${JSON.stringify(tsxCjs)}); require(${JSON.stringify(source)});`, { ...options, eval: true });
}
