/**
 * One shared, on-disk cache of the face models for tests, so that repeated
 * test runs and all test files (in all vitest worker processes) share one
 * download. fetchModels takes a lock file and writes atomically, so concurrent
 * callers are safe: the first downloads, the others wait and reuse it.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BodyModelId } from './catalogue.js';
import { fetchBodyModels } from './fetch-bodies.js';
import { fetchDescriptionModel } from './fetch-description.js';
import type { BodyManifest } from './fetch-bodies.js';
import { fetchModels } from './fetch.js';
import type { Manifest } from './fetch.js';
import type { Log } from './npm-tarball.js';

/** The repository root: the nearest ancestor of this file that has a package.json. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

/** `<repo root>/node_modules/.cache/footfall`: test downloads shared by every run. */
export function testCacheRoot(): string {
  return resolve(repoRoot(), 'node_modules', '.cache', 'footfall');
}

/** `<repo root>/node_modules/.cache/footfall/models`. */
export function testModelsDir(): string {
  return join(testCacheRoot(), 'models');
}

/** Registry tarballs for the test caches (kept outside the dirs they fill). */
export function testTarballCacheDir(): string {
  return join(testCacheRoot(), 'tarballs');
}

let pending: Promise<Manifest> | undefined;

/** Install (once) and verify the default model set and the face-attribute models in testModelsDir(); returns the set's manifest. */
export function ensureTestModels(log?: Log): Promise<Manifest> {
  pending ??= fetchModels({
    dir: testModelsDir(),
    tarballCacheDir: testTarballCacheDir(),
    ...(log ? { log } : {}),
  })
    .then(async (manifest) => {
      // The gender and age model and the mini expression model beside the face set, as `footfall models fetch` installs them.
      await fetchDescriptionModel({ dir: testModelsDir(), tarballCacheDir: testTarballCacheDir(), ...(log ? { log } : {}) });
      return manifest;
    })
    .catch((err: unknown) => {
      pending = undefined;
      throw err;
    });
  return pending;
}

const pendingBodies = new Map<string, Promise<BodyManifest>>();

/**
 * Install (once per process and set of models) and verify the person detector models in testModelsDir(), beside the
 * face models; default the catalogue's default body model. Returns the body manifest.
 */
export function ensureTestBodyModels(models?: readonly BodyModelId[], log?: Log): Promise<BodyManifest> {
  const key = models ? [...models].sort().join(',') : '';
  let p = pendingBodies.get(key);
  if (!p) {
    p = fetchBodyModels({
      dir: testModelsDir(),
      tarballCacheDir: testTarballCacheDir(),
      ...(models ? { models } : {}),
      ...(log ? { log } : {}),
    }).catch((err: unknown) => {
      pendingBodies.delete(key);
      throw err;
    });
    pendingBodies.set(key, p);
  }
  return p;
}

/**
 * A models folder with the person model only (bodies.json and the files it lists, copied from testModelsDir()), no
 * face models: a shop PC that counts doors with recognition off. Call after ensureTestBodyModels().
 */
export function bodyModelsOnly(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const from = testModelsDir();
  const manifest = JSON.parse(readFileSync(join(from, 'bodies.json'), 'utf8')) as { models: { graph: { file: string }; weights: { file: string } }[] };
  copyFileSync(join(from, 'bodies.json'), join(dir, 'bodies.json'));
  for (const m of manifest.models) for (const f of [m.graph.file, m.weights.file]) copyFileSync(join(from, f), join(dir, f));
}
