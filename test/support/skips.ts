/**
 * Why a test file skips some of its tests (a system tool missing): noted once per file, printed once per reason at
 * the end of `npm test` with the number of tests it skipped (SkipSummary, test/support/skip-summary.ts), e.g.
 * "105 tests skipped: no chromium (apt-get install chromium-headless-shell, or chromium, ...)". Run outside that reporter, the reason is printed here.
 */
import fs from 'node:fs';

export const SKIP_LOG_ENV = 'FOOTFALL_SKIP_LOG';

/** `file`: the test file, relative to the repository (e.g. 'test/console-browser.test.ts'). */
export function noteSkip(file: string, reason: string): void {
  const log = process.env[SKIP_LOG_ENV];
  if (log) fs.appendFileSync(log, JSON.stringify({ file, reason }) + '\n');
  else console.warn(`${file}: some tests skipped: ${reason}`);
}
