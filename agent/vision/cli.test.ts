/** `footfall vision` in-process, on the registry photos with the test models. */
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { visionCommand } from '../../cli/vision.js';
import { ensureTestPhotos } from '../fixtures/registry-photos.js';
import { ensureTestModels, testModelsDir } from '../models/test-cache.js';
import { DEFAULT_MATCH_THRESHOLD } from './analyzer.js';
import { runCommand } from '../../test/support/command-output.js';

let photos: string;

beforeAll(async () => {
  await ensureTestModels();
  photos = (await ensureTestPhotos()).dir;
});

afterEach(() => {
  vi.restoreAllMocks();
  process.exitCode = undefined;
});

async function vision(...args: string[]): Promise<{ out: string; err: string; code: number | undefined }> {
  const { out, err } = await runCommand(visionCommand().exitOverride(), args);
  const code = process.exitCode === undefined ? undefined : Number(process.exitCode);
  vi.restoreAllMocks();
  return { out, err, code };
}

describe('footfall vision', () => {
  it('detect --json lists each face with box, score, five landmarks, quality and the gate', async () => {
    const { out, code } = await vision('detect', join(photos, 'sample3.jpg'), join(photos, 'sample6.jpg'), '--json', '--models', testModelsDir());
    expect(code).toBeUndefined();
    const json = JSON.parse(out) as any[];
    expect(json.map((r) => r.faces.length)).toEqual([3, 4]);
    const f = json[0].faces[0];
    expect(Object.keys(f.landmarks)).toEqual(['left_eye', 'right_eye', 'nose', 'mouth_left', 'mouth_right']);
    expect(f.box.x2).toBeGreaterThan(f.box.x1);
    expect(f.score).toBeGreaterThan(0.9);
    expect(f.quality).toBeGreaterThan(0.5);
    expect(f.passes_gate).toBe(true);
    expect(json[0].gate).toBe(0.5);
  });

  it('embed --json adds a normalised 512-d embedding, largest face first', async () => {
    const { out } = await vision('embed', join(photos, 'sample1.jpg'), '--json', '--models', testModelsDir());
    const [r] = JSON.parse(out) as any[];
    expect(r.faces).toHaveLength(3);
    const areas = r.faces.map((f: any) => (f.box.x2 - f.box.x1) * (f.box.y2 - f.box.y1));
    expect(areas).toEqual([...areas].sort((a: number, b: number) => b - a));
    const e = r.faces[0].embedding as number[];
    expect(e).toHaveLength(512);
    expect(Math.hypot(...e)).toBeCloseTo(1, 4);
  });

  it('compare says whether the largest faces are the same person at the threshold', async () => {
    const { out } = await vision('compare', join(photos, 'sample3.jpg'), join(photos, 'sample3.jpg'), '--json', '--models', testModelsDir());
    const j = JSON.parse(out);
    expect(j.similarity).toBeCloseTo(1, 3);
    expect(j.same_person).toBe(true);
    expect(j.threshold).toBe(DEFAULT_MATCH_THRESHOLD);
    const other = await vision('compare', join(photos, 'sample3.jpg'), join(photos, 'sample6.jpg'), '--models', testModelsDir());
    expect(other.out).toMatch(/^similarity -?0\.\d{3}: different people \(threshold 0\.45\)/);
  });

  it('tells to run `footfall models fetch` when the models are missing, and names unreadable images', async () => {
    const missing = await vision('detect', join(photos, 'sample3.jpg'), '--models', '/nonexistent/models');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/No face models installed in \/nonexistent\/models.*footfall models fetch/);
    const bad = await vision('detect', '/nonexistent/photo.jpg', '--models', testModelsDir());
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^Cannot read image \/nonexistent\/photo\.jpg/);
  });
});
