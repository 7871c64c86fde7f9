import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDirs } from '../../test/support/temp-dirs.js';
import { modelsCommand } from '../../cli/models.js';
import { DEFAULT_MODEL_SET, modelSpec } from './catalogue.js';
import type { ModelSet } from './catalogue.js';
import { fetchModels, loadManifest, ManifestSchema, modelPath } from './fetch.js';
import type { Manifest } from './fetch.js';
import { sha256OfFile } from './npm-tarball.js';
import { ensureTestModels, testModelsDir } from './test-cache.js';
import { runCommand } from '../../test/support/command-output.js';

const DOWNLOAD_TIMEOUT = 180_000;
const SET = DEFAULT_MODEL_SET;
const tempDir = tempDirs();

/** The error a promise rejects with; fails the test if it resolves. */
async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`rejected with a non-Error: ${String(err)}`);
  }
  throw new Error('expected a rejection, but it resolved');
}

async function mtimes(dir: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of await readdir(dir)) {
    if (name.endsWith('.onnx') || name === 'manifest.json') out[name] = (await stat(join(dir, name))).mtimeMs;
  }
  return out;
}

describe('fetchModels: real download from the npm registry', () => {
  let dir: string;
  let first: Manifest;

  beforeAll(async () => {
    dir = await tempDir('models');
  });

  it(
    'downloads the pinned package, verifies it and installs the six models with a manifest',
    async () => {
      const logs: string[] = [];
      first = await fetchModels({ dir, log: (m) => logs.push(m) });
      expect(logs.some((l) => l.startsWith(`Downloading ${SET.package.spec}`))).toBe(true);

      expect(first.set).toBe(SET.id);
      expect(first.package).toBe('faceplugin-face-recognition-js');
      expect(first.version).toBe('0.0.1');
      expect(first.integrity).toBe(SET.package.integrity);
      expect(Date.now() - Date.parse(first.fetched_at)).toBeLessThan(10 * 60_000);
      expect(first.models.map((m) => m.id)).toEqual(['detect', 'landmark', 'feature', 'age', 'gender', 'expression']);

      for (const m of first.models) {
        const spec = modelSpec(SET, m.id);
        const actual = await sha256OfFile(join(dir, m.file));
        expect(actual).toEqual({ sha256: spec.sha256, bytes: spec.bytes });
        expect(m).toMatchObject({ file: spec.file, sha256: spec.sha256, bytes: spec.bytes, input: { name: 'input', shape: spec.input.shape } });
        expect(m.outputs.map((o) => o.name)).toEqual(spec.outputs.map((o) => o.name));
      }
      const onDisk = ManifestSchema.parse(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')));
      expect(onDisk).toEqual(first);
      expect(await loadManifest(dir)).toEqual(first);
      expect(modelPath(dir, first, 'feature')).toBe(join(dir, 'fr_feature.onnx'));
      // The verified tarball is kept for repairs; no temp files are left behind.
      expect(await readdir(join(dir, '.cache'))).toEqual(['faceplugin-face-recognition-js-0.0.1.tgz']);
      expect((await readdir(dir)).filter((n) => n.startsWith('.') && n !== '.cache')).toEqual([]);
    },
    DOWNLOAD_TIMEOUT,
  );

  it('does nothing on a second call when everything is intact', async () => {
    const before = await mtimes(dir);
    const logs: string[] = [];
    const again = await fetchModels({ dir, log: (m) => logs.push(m) });
    expect(again).toEqual(first);
    expect(logs).toEqual([`Models in ${dir} are up to date (${SET.package.spec}, fetched ${first.fetched_at})`]);
    expect(await mtimes(dir)).toEqual(before);
  });

  it('detects a corrupted and a missing model and repairs them from the cached tarball', async () => {
    const before = await mtimes(dir);
    await writeFile(join(dir, 'fr_landmark.onnx'), 'not a model');
    await rm(join(dir, 'fr_age.onnx'));
    const logs: string[] = [];
    const repaired = await fetchModels({ dir, log: (m) => logs.push(m) });

    expect(logs.some((l) => l.startsWith('fr_landmark.onnx: sha256') && l.includes('does not match'))).toBe(true);
    expect(logs).toContain(`Installing fr_landmark.onnx, fr_age.onnx from ${SET.package.spec} into ${dir}`);
    expect(logs.some((l) => l.startsWith('Using cached'))).toBe(true);
    expect(logs.some((l) => l.startsWith('Downloading'))).toBe(false);
    for (const id of ['landmark', 'age'] as const) {
      expect((await sha256OfFile(join(dir, modelSpec(SET, id).file))).sha256).toBe(modelSpec(SET, id).sha256);
    }
    // Intact files were left alone; the manifest keeps its content but is rewritten.
    const after = await mtimes(dir);
    expect(after['fr_detect.onnx']).toBe(before['fr_detect.onnx']);
    expect(after['fr_expression.onnx']).toBe(before['fr_expression.onnx']);
    expect(repaired.models).toEqual(first.models);
  });

  it('deletes a model whose sha256 is not the pinned one and says so', async () => {
    const bad: ModelSet = {
      ...SET,
      models: SET.models.map((m) => (m.id === 'age' ? { ...m, sha256: '0'.repeat(64) } : m)),
    };
    const dir2 = await tempDir('badsha');
    await expect(fetchModels({ dir: dir2, modelSet: bad, tarballCacheDir: join(dir, '.cache') })).rejects.toThrow(
      /^model\/fr_age\.onnx from faceplugin-face-recognition-js-0\.0\.1\.tgz has sha256 74c9b017\w+, expected 0{64}\. The file was deleted and not installed\.$/,
    );
    // Nothing half-installed: no model files, no manifest, no staging dirs.
    expect(await readdir(dir2)).toEqual([]);
  });

  it(
    'refuses a tarball whose integrity is not the pinned one',
    async () => {
      const wrong = `sha512-${Buffer.alloc(64, 7).toString('base64')}`;
      const bad: ModelSet = { ...SET, package: { ...SET.package, integrity: wrong } };
      const dir3 = await tempDir('badintegrity');
      const err = await failure(fetchModels({ dir: dir3, modelSet: bad }));
      expect(err.message).toContain(`Integrity mismatch for ${SET.package.spec}: the pinned integrity is ${wrong}`);
      expect(err.message).toContain(SET.package.integrity);
      expect(await readdir(join(dir3, '.cache'))).toEqual([]);
    },
    DOWNLOAD_TIMEOUT,
  );

  it(
    'lets concurrent fetches into one empty dir download only once',
    async () => {
      const dir4 = await tempDir('concurrent');
      const logs: string[] = [];
      const results = await Promise.all([0, 1, 2].map(() => fetchModels({ dir: dir4, log: (m) => logs.push(m) })));
      expect(logs.filter((l) => l.startsWith('Downloading'))).toHaveLength(1);
      expect(results[1]).toEqual(results[0]);
      expect(results[2]).toEqual(results[0]);
      expect(await loadManifest(dir4)).toEqual(results[0]);
    },
    DOWNLOAD_TIMEOUT,
  );
});

describe('fetchModels without the npm registry', () => {
  it('fails with a message that says what to do', async () => {
    const dir = await tempDir('offline');
    const emptyNpmCache = await tempDir('npmcache');
    const err = await failure(
      fetchModels({ dir, npmEnv: { npm_config_offline: 'true', npm_config_cache: emptyNpmCache } }),
    );
    expect(err.message).toMatch(
      /^Could not download faceplugin-face-recognition-js@0\.0\.1 from the npm registry: ENOTCACHED .+[^.]\. Check this machine's network access to the npm registry /,
    );
    expect(err.message).toContain(', or copy a models folder fetched elsewhere (');
    expect(err.message.endsWith(`) into ${dir}.`)).toBe(true);
    expect(err.message).not.toContain('\n');
    await expect(loadManifest(dir)).rejects.toThrow(/manifest\.json is missing/);
  });
});

describe('loadManifest', () => {
  it('tells the user to run `footfall models fetch` when there is no manifest', async () => {
    const dir = await tempDir('nomanifest');
    await expect(loadManifest(dir)).rejects.toThrow(
      `No face models installed in ${dir} (manifest.json is missing). Run \`footfall models fetch --dir ${dir}\` first.`,
    );
  });

  it('rejects malformed manifests with a repair hint', async () => {
    const dir = await tempDir('badmanifest');
    await writeFile(join(dir, 'manifest.json'), '{ nope');
    await expect(loadManifest(dir)).rejects.toThrow(/is not valid JSON .*Run `footfall models fetch --dir .*` to repair it\.$/);
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ package: 'x', models: [] }));
    await expect(loadManifest(dir)).rejects.toThrow(/is not a valid models manifest \(set: .*\)\. Run `footfall models fetch/);
  });
});

describe('the installed models run in onnxruntime-node', () => {
  let manifest: Manifest;
  beforeAll(async () => {
    manifest = await ensureTestModels();
  }, DOWNLOAD_TIMEOUT);

  it.each(SET.models.map((m) => [m.id, m] as const))('%s: names and shapes match the catalogue', async (_id, spec) => {
    const entry = manifest.models.find((m) => m.id === spec.id);
    expect(entry).toBeDefined();
    const session = await InferenceSession.create(modelPath(testModelsDir(), manifest, spec.id), { logSeverityLevel: 3 });
    try {
      expect(session.inputNames).toEqual([spec.input.name]);
      expect([...session.outputNames].sort()).toEqual(spec.outputs.map((o) => o.name).sort());

      const size = spec.input.shape.reduce((a, b) => a * b, 1);
      const feeds = { [spec.input.name]: new Tensor('float32', new Float32Array(size), [...spec.input.shape]) };
      const out = await session.run(feeds);
      for (const o of spec.outputs) {
        const t = out[o.name];
        expect(t, o.name).toBeDefined();
        expect(t?.type).toBe('float32');
        expect(t?.dims).toEqual(o.shape);
        expect(Array.from(t?.data as Float32Array).every(Number.isFinite)).toBe(true);
      }

      // The preprocessing description agrees with the input tensor.
      const p = spec.preprocessing;
      const [, channels, height, width] = spec.input.shape;
      expect([channels, height, width]).toEqual([p.colour === 'grey' ? 1 : 3, p.height, p.width]);
      expect(p.mean).toHaveLength(channels ?? 0);
      expect(p.std).toHaveLength(channels ?? 0);
    } finally {
      await session.release();
    }
  });

  it('detect gives scores [1,4420,2] and boxes [1,4420,4]; feature gives 512 values', () => {
    const shapes = Object.fromEntries(manifest.models.flatMap((m) => m.outputs.map((o) => [`${m.id}.${o.name}`, o.shape])));
    expect(shapes['detect.scores']).toEqual([1, 4420, 2]);
    expect(shapes['detect.boxes']).toEqual([1, 4420, 4]);
    expect(shapes['feature.output']).toEqual([1, 512]);
  });
});

describe('footfall models (CLI)', () => {
  beforeAll(async () => {
    await ensureTestModels();
  }, DOWNLOAD_TIMEOUT);

  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  const run = (args: string[]) => runCommand(modelsCommand(), args);

  it('list prints the models as a table', async () => {
    const { out } = await run(['list', '--dir', testModelsDir()]);
    expect(out).toMatch(/^faceplugin-face-recognition-js@0\.0\.1 \(set faceplugin-0\.0\.1\), fetched /);
    expect(out).toMatch(/detect +fr_detect\.onnx +1\.2 MB +input \[1,3,240,320\] +scores \[1,4420,2\] boxes \[1,4420,4\]/);
    expect(out).toMatch(/feature +fr_feature\.onnx .* output \[1,512\]/);
    expect(process.exitCode).toBeUndefined();
  });

  it('fetch --json prints the manifest and changes nothing', async () => {
    const before = await mtimes(testModelsDir());
    const { out, err } = await run(['fetch', '--dir', testModelsDir(), '--json', '--no-bodies']);
    expect(ManifestSchema.parse(JSON.parse(out))).toEqual(await loadManifest(testModelsDir()));
    expect(err).toMatch(/are up to date/);
    expect(await mtimes(testModelsDir())).toEqual(before);
  });

  it('prints only the message and sets exit code 1 on errors', async () => {
    const dir = await tempDir('cli-empty');
    const { out, err } = await run(['list', '--dir', dir]);
    expect(out).toBe('');
    expect(err).toBe(`No face models installed in ${dir} (manifest.json is missing). Run \`footfall models fetch --dir ${dir}\` first.`);
    expect(process.exitCode).toBe(1);
  });
});
