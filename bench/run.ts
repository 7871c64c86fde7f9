import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { machine } from './util.js';

/**
 * Benchmark dispatcher: `node dist/bench/run.js [name...]` (or `npm run bench -- [name...]`) runs the named
 * benchmarks, or all of them, prints each result and rewrites that benchmark's section of docs/benchmarks.md
 * between `<!-- bench:<name> -->` and `<!-- /bench:<name> -->` (appended if the markers are missing).
 *
 * A benchmark is a module under bench/ exporting `run(): Promise<string | undefined>` that returns a markdown section
 * (starting with its `##` heading), or undefined when it cannot run on this machine (it says why; its section is
 * left as it was). To add one, add a line to `benchmarks`.
 */
export interface Benchmark {
  run(): Promise<string | undefined>;
}

const benchmarks: Record<string, () => Promise<Benchmark>> = {
  gallery: () => import('./gallery.js'),
  agent: () => import('./agent.js'),
  ingest: () => import('./ingest.js'),
  'ingest-cost': () => import('./ingest-cost.js'),
  reports: () => import('./reports.js'),
  opencv: () => import('./opencv.js'),
  counting: () => import('./counting.js'),
  attributes: () => import('./attributes.js'),
  'attributes-real': () => import('./attributes-real.js'),
  'attributes-models': () => import('./attributes-models.js'),
  bodies: () => import('./bodies.js'),
  api: () => import('./api.js'),
  'api-floor': () => import('./api-floor.js'),
  'api-postgres': () => import('./api-postgres.js'),
  'agent-real': () => import('./agent-real.js'),
  'faces-door': () => import('./faces-door.js'),
  door: () => import('./door.js'),
  'door-offline': () => import('./door-offline.js'),
  'door-real': () => import('./door-real.js'),
  'door-face': () => import('./door-face.js'),
  'prefilter-real': () => import('./prefilter-real.js'),
  occupancy: () => import('./occupancy.js'),
  scale: () => import('./scale.js'),
};

const docs = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));

const HEADER = `# Benchmarks

Measured numbers only, written by \`npm run bench\` (all) or \`npm run bench -- <name>\` (one): each section is
replaced between its markers by the last run of that benchmark, with the date and the machine it ran on.
`;

/** `doc` with the section of `name` replaced by (or, if missing, appended as) `body`. */
export function replaceSection(doc: string, name: string, body: string): string {
  const open = `<!-- bench:${name} -->`;
  const close = `<!-- /bench:${name} -->`;
  const block = `${open}\n${body.trim()}\n${close}`;
  const a = doc.indexOf(open);
  const b = doc.indexOf(close);
  if (a >= 0 && b > a) return doc.slice(0, a) + block + doc.slice(b + close.length);
  return `${doc.trimEnd()}\n\n${block}\n`;
}

/** The section body: the benchmark's markdown with a line naming the date, machine and command after its heading. */
export function stamp(markdown: string, name: string, date = new Date()): string {
  const line = `_${date.toISOString().slice(0, 16).replace('T', ' ')} UTC · ${machine()} · \`npm run bench -- ${name}\`_`;
  const lines = markdown.trim().split('\n');
  if (lines[0]?.startsWith('#')) return [lines[0], '', line, ...lines.slice(1)].join('\n');
  return [line, '', ...lines].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const names = argv.length > 0 ? argv : Object.keys(benchmarks);
  const unknown = names.filter((n) => !(n in benchmarks));
  if (unknown.length > 0) {
    console.error(`Unknown benchmark: ${unknown.join(', ')}. Known: ${Object.keys(benchmarks).join(', ')}.`);
    return 2;
  }
  for (const name of names) {
    console.error(`bench ${name}: running`);
    const started = performance.now();
    const body = await (await benchmarks[name]!()).run();
    if (body === undefined) {
      console.error(`bench ${name}: skipped, docs/benchmarks.md unchanged`);
      continue;
    }
    const section = stamp(body, name);
    console.log(`${section}\n`);
    const doc = fs.existsSync(docs) ? fs.readFileSync(docs, 'utf8') : HEADER;
    fs.writeFileSync(docs, replaceSection(doc, name, section));
    console.error(`bench ${name}: done in ${((performance.now() - started) / 1000).toFixed(0)} s, docs/benchmarks.md updated`);
  }
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
