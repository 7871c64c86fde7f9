import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { usesCameraSlot } from './camera-files.js';

/**
 * The order of test files: failed first, then longest first, so that on two workers the last minutes are not one
 * long file running alone. A file's length is vitest's own record of its last run where there is one (a machine
 * that has run the suite), else its length in test/support/durations.json (seconds, measured on the 2-core
 * reference machine; refresh it with `npx tsx scripts/test-durations.ts`), which is what a fresh clone and CI go
 * by: vitest's own fallback there, the largest file first, put a 100-second browser file among the last. The real-time
 * camera files run one at a time (test/support/camera-slot.ts), so the order also spreads them over the run.
 */
const table = JSON.parse(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'durations.json'), 'utf8'),
) as Record<string, number>;

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const known = (s: TestSpecification): Job<TestSpecification> => {
      const rel = path.relative(root, s.moduleId).split(path.sep).join('/');
      const cached = this.ctx.cache.getFileTestResults(`${s.project.name}:${rel}`);
      return {
        item: s,
        failed: cached?.failed ?? false,
        ms: cached?.duration ?? (table[rel] ?? 0) * 1000,
        camera: usesCameraSlot(s.moduleId),
        shared: s.project.config.isolate === false ? s.project.name : undefined,
      };
    };
    const workers = typeof this.ctx.config.maxWorkers === 'number' ? this.ctx.config.maxWorkers : 1;
    return schedule(files.map(known), workers);
  }
}

export interface Job<T> {
  item: T;
  failed: boolean;
  ms: number;
  /** Holds the camera slot (test/support/camera-slot.ts): no two such files run at once. */
  camera: boolean;
  /**
   * The project, when its files share worker processes (`isolate: false`, vitest.config.ts). vitest hands a finished
   * file's process to the next file only when that next file in the queue is of the same such project; any other
   * file in between and the process is ended, and the next one pays the whole import again. So these files go as
   * one block per project, longest first, right after the first camera file: the other workers take them in turn
   * while that file counts (the camera files run at a higher priority than the rest, test/support/priority.ts).
   */
  shared?: string | undefined;
}

/**
 * The order to hand files to `workers` workers: the run played out with the known lengths, each worker that comes
 * free taking the first file (failed first, then longest) that can start at once, a camera file only while no other
 * holds the slot; a camera file that would have to wait is taken only when nothing else is left.
 */
export function schedule<T>(jobs: Job<T>[], workers: number): T[] {
  const first = (a: Job<T>, b: Job<T>) => (a.failed !== b.failed ? (a.failed ? -1 : 1) : b.ms - a.ms);
  const blocks = new Map<string, Job<T>[]>();
  const inBlock = (j: Job<T>) => j.shared !== undefined && !j.failed; // a file that failed last time still goes first
  for (const j of jobs) if (inBlock(j)) blocks.set(j.shared!, [...(blocks.get(j.shared!) ?? []), j]);
  const block = [...blocks.values()].flatMap((b) => b.sort(first).map((j) => j.item));
  const order = played(jobs.filter((j) => !inBlock(j)).sort(first), workers);
  const cameras = new Set(jobs.filter((j) => j.camera).map((j) => j.item));
  const at = order.findIndex((item) => cameras.has(item)) + 1 || order.length;
  return [...order.slice(0, at), ...block, ...order.slice(at)];
}

/** The isolated files' order (`left` sorted failed first, then longest). */
function played<T>(left: Job<T>[], workers: number): T[] {
  const free = Array.from({ length: Math.max(1, workers) }, () => 0); // when each worker comes free
  let slotFreeAt = 0;
  const order: T[] = [];
  while (left.length > 0) {
    const w = free.indexOf(Math.min(...free));
    const now = free[w]!;
    let i = left.findIndex((j) => !j.camera || slotFreeAt <= now);
    if (i < 0) i = 0;
    const job = left.splice(i, 1)[0]!;
    const start = job.camera ? Math.max(now, slotFreeAt) : now;
    free[w] = start + job.ms;
    if (job.camera) slotFreeAt = free[w]!;
    order.push(job.item);
  }
  return order;
}
