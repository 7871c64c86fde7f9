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
   * one block per project, longest first, placed among the isolated files by its longest file.
   */
  shared?: string | undefined;
}

/**
 * The order to hand files to `workers` workers: the run played out with the known lengths. The batch files (every
 * file but the camera files) queue longest first (failed first of all), each shared-process project as one block
 * where its longest file would stand; a camera file is handed to the first worker that comes free while no other
 * holds the slot, so the camera files run one after another from the start rather than wait at the end (a block of
 * 80 files placed before them kept them back: the last one started 60 s before the end, then waited for the slot).
 * A camera file that would have to wait is taken only when nothing else is left.
 */
export function schedule<T>(jobs: Job<T>[], workers: number): T[] {
  const longest = (a: Job<T>, b: Job<T>) => b.ms - a.ms;
  const failed = jobs.filter((j) => j.failed).sort(longest);
  const cameras = jobs.filter((j) => !j.failed && j.camera).sort(longest);
  const blocks = new Map<string, Job<T>[]>();
  for (const j of jobs) if (!j.failed && !j.camera && j.shared !== undefined) blocks.set(j.shared, [...(blocks.get(j.shared) ?? []), j]);
  const units: Job<T>[][] = [...jobs.filter((j) => !j.failed && !j.camera && j.shared === undefined).map((j) => [j]), ...[...blocks.values()].map((b) => b.sort(longest))];
  const batch = [...failed, ...units.sort((a, b) => b[0]!.ms - a[0]!.ms).flat()];

  const free = Array.from({ length: Math.max(1, workers) }, () => 0); // when each worker comes free
  let slotFreeAt = 0;
  const order: T[] = [];
  while (batch.length > 0 || cameras.length > 0) {
    const w = free.indexOf(Math.min(...free));
    const now = free[w]!;
    const job = cameras.length > 0 && (slotFreeAt <= now || batch.length === 0) ? cameras.shift()! : batch.shift()!;
    const start = job.camera ? Math.max(now, slotFreeAt) : now;
    free[w] = start + job.ms;
    if (job.camera) slotFreeAt = free[w]!;
    order.push(job.item);
  }
  return order;
}
