import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order of test files: failed first, then longest first, so that on two workers the last minutes are not one
 * long file running alone. A file's length is vitest's own record of its last run where there is one (a machine
 * that has run the suite), else its length in test/support/durations.json (seconds, measured on the 2-core
 * reference machine; refresh it with `npx tsx scripts/test-durations.ts`), which is what a fresh clone and CI go
 * by: vitest's own fallback there, the largest file first, put a 100-second browser file among the last.
 */
const table = JSON.parse(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'durations.json'), 'utf8'),
) as Record<string, number>;

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const known = (s: TestSpecification): { failed: boolean; ms: number } => {
      const rel = path.relative(root, s.moduleId).split(path.sep).join('/');
      const cached = this.ctx.cache.getFileTestResults(`${s.project.name}:${rel}`);
      return { failed: cached?.failed ?? false, ms: cached?.duration ?? (table[rel] ?? 0) * 1000 };
    };
    const facts = new Map(files.map((f) => [f, known(f)]));
    return [...files].sort((a, b) => {
      const fa = facts.get(a)!;
      const fb = facts.get(b)!;
      if (fa.failed !== fb.failed) return fa.failed ? -1 : 1;
      return fb.ms - fa.ms;
    });
  }
}
