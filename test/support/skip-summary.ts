/**
 * A vitest reporter that prints, at the end of the run, how many tests were skipped and why, one line per reason
 * (noted by the test files with noteSkip, test/support/skips.ts), e.g.
 *   105 tests skipped: no chromium (apt-get install chromium-headless-shell, or chromium, ...)
 * Skips no file explained (a root-only check, ../shared absent) are counted on one line naming their files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { SKIP_LOG_ENV } from './skips.js';

export default class SkipSummary implements Reporter {
  private log = '';
  private root = process.cwd();

  onInit(ctx: { config: { root: string } }): void {
    this.root = ctx.config.root;
    this.log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-skips-')), 'skips.jsonl');
    fs.writeFileSync(this.log, '');
    process.env[SKIP_LOG_ENV] = this.log; // the test workers are forked after this, with this environment
  }

  onTestRunEnd(modules: readonly TestModule[]): void {
    const reasons = new Map<string, Set<string>>();
    try {
      for (const line of fs.readFileSync(this.log, 'utf8').split('\n')) {
        if (!line) continue;
        const { file, reason } = JSON.parse(line) as { file: string; reason: string };
        reasons.set(file, (reasons.get(file) ?? new Set()).add(reason));
      }
      fs.rmSync(path.dirname(this.log), { recursive: true, force: true });
    } catch {
      // no log: nothing noted
    }
    const byReason = new Map<string, number>();
    const unexplained = new Map<string, number>();
    let total = 0;
    for (const m of modules) {
      let skipped = 0;
      for (const t of m.children.allTests()) if (t.result().state === 'skipped') skipped++;
      if (!skipped) continue;
      total += skipped;
      const file = path.relative(this.root, m.moduleId);
      const why = reasons.get(file);
      if (why) {
        const key = [...why].join('; ');
        byReason.set(key, (byReason.get(key) ?? 0) + skipped);
      } else unexplained.set(file, skipped);
    }
    if (!total) return;
    const lines = [...byReason].sort((a, b) => b[1] - a[1]).map(([reason, n]) => `${n} test${n === 1 ? '' : 's'} skipped: ${reason}`);
    if (unexplained.size) {
      const n = [...unexplained.values()].reduce((a, b) => a + b, 0);
      lines.push(`${n} test${n === 1 ? '' : 's'} skipped by their own conditions (${[...unexplained].map(([f, k]) => `${f}: ${k}`).join(', ')})`);
    }
    console.log(`\n${total} test${total === 1 ? '' : 's'} skipped in all:\n  ${lines.join('\n  ')}\n`);
  }
}
