/**
 * Writes test/support/durations.json (each test file's seconds, longest first), which the test sequencer
 * (test/support/sequencer.ts) orders a fresh clone's run by. Reads vitest's own record of the last full run on this
 * machine; run it after a full `npm test` on a quiet 2-core machine:
 *
 *   npx tsx scripts/test-durations.ts
 */
import fs from 'node:fs';
import path from 'node:path';

const cacheRoot = 'node_modules/.vite/vitest';
const dirs = fs.existsSync(cacheRoot) ? fs.readdirSync(cacheRoot).map((d) => path.join(cacheRoot, d, 'results.json')).filter((f) => fs.existsSync(f)) : [];
if (dirs.length === 0) {
  console.error(`no vitest results under ${cacheRoot}: run npm test first`);
  process.exit(1);
}
const newest = dirs.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0]!;
const { results } = JSON.parse(fs.readFileSync(newest, 'utf8')) as { results: [string, { duration?: number }][] };
const rows = results
  .map(([key, r]) => [key.slice(key.indexOf(':') + 1), Math.round((r.duration ?? 0) / 100) / 10] as const)
  .filter(([file]) => fs.existsSync(file))
  .sort((a, b) => b[1] - a[1]);
const out = path.join('test/support/durations.json');
fs.writeFileSync(out, `{\n${rows.map(([f, s]) => `  ${JSON.stringify(f)}: ${s}`).join(',\n')}\n}\n`);
console.log(`${out}: ${rows.length} files, ${rows.reduce((t, [, s]) => t + s, 0).toFixed(0)} s in all`);
