/**
 * `footfall camera test` as an installer runs it: the built CLI in its own process against a real RTSP server
 * (test/support/rtsp.ts), real ffmpeg and, for the faces, the real test models.
 */
import { execFileSync } from 'node:child_process';
import { runFootfall } from '../test/support/command-output.js';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { DEFAULT_QUALITY } from '../agent/vision/quality.js';
import { packageRoot } from '../server/paths.js';
import { generatedClip, registryPersonClip } from '../test/support/clips.js';
import { startRtspServer, type RtspServer } from '../test/support/rtsp.js';
import type { CameraTestReport } from './camera.js';

const root = packageRoot();

/** Builds dist/ when a source these commands run is newer than its JavaScript (npm test builds first anyway). */
function ensureCliBuilt(): void {
  const sources = ['cli/main.ts', 'cli/camera.ts', 'cli/status.ts', 'agent/capture/ffmpeg.ts'].map((f) => path.join(root, f));
  const stale = sources.some((src) => {
    const out = path.join(root, 'dist', path.relative(root, src)).replace(/\.ts$/, '.js');
    return !existsSync(out) || statSync(src).mtimeMs > statSync(out).mtimeMs;
  });
  if (!stale) return;
  try {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'ignore' });
  } catch {
    // type errors elsewhere still emit JavaScript
  }
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const footfall = (args: string[]): Promise<Run> => runFootfall(args);

const PASSWORD = 'Sekr3t-pass!';
let tmp: string;
let plain: RtspServer;
let guarded: RtspServer;
/** No models here: recognition is not checked. */
let noModels: string;

beforeAll(async () => {
  ensureCliBuilt();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-camera-test-'));
  noModels = path.join(tmp, 'no-models');
  const clip = await generatedClip();
  [plain, guarded] = await Promise.all([
    startRtspServer({ file: clip, mounts: ['/cam'] }),
    startRtspServer({ file: clip, mounts: ['/cam'], user: 'admin', password: PASSWORD }),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all([plain?.stop(), guarded?.stop()]);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('footfall camera test', () => {
  it('a good stream: connected, the stream format, pictures counted, a snapshot JPEG at the decoded size, exit 0', async () => {
    const snap = path.join(tmp, 'good.jpg');
    const r = await footfall(['camera', 'test', plain.url('/cam'), '--seconds', '2', '--snapshot', snap, '--models', noModels]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Connected in [\d.]+ s\. The camera sends h264 .*640x360/);
    expect(r.stdout).toMatch(/The agent gets 5 pictures a second at 640x360/);
    expect(r.stdout).toMatch(/Pictures: [1-9]\d* in 2 s/);
    expect(r.stdout).toMatch(/Recognition not checked: face models not installed/);
    expect(r.stdout).toContain(`Snapshot: ${snap} (640x360 JPEG)`);
    const jpeg = readFileSync(snap);
    expect(jpeg.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    const meta = await sharp(jpeg).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: 'jpeg', width: 640, height: 360 });
  });

  it('--json: the report, over UDP too', async () => {
    const r = await footfall(['camera', 'test', plain.url('/cam'), '--seconds', '1', '--transport', 'udp', '--models', noModels, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as CameraTestReport;
    expect(report).toMatchObject({
      url: plain.url('/cam'),
      transport: 'udp',
      connected: true,
      code: 'ok',
      reason: null,
      stream: { codec: 'h264', width: 640, height: 360 },
      decoded: { fps: 5, width: 640, height: 360 },
      seconds: 1,
      recognition: { checked: false },
      snapshot: null,
    });
    expect(report.frames).toBeGreaterThan(0);
    expect(report.ms_to_first_picture).toBeGreaterThan(0);
  });

  it('a wrong path: "stream path not found", exit 1', async () => {
    const r = await footfall(['camera', 'test', plain.url('/nope'), '--models', noModels]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('Not connected: stream path not found (no_stream).');
  });

  it('a wrong password: "wrong password", exit 1, and the password never printed', async () => {
    const wrong = 'Wr0ng-passw0rd';
    const r = await footfall(['camera', 'test', guarded.url('/cam', { user: 'admin', password: wrong }), '--models', noModels]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('Not connected: wrong password (auth_failed).');
    expect(r.stdout).toContain(`rtsp://admin:***@127.0.0.1:${guarded.port}/cam`);
    expect(r.stdout + r.stderr).not.toContain(wrong);

    const j = await footfall(['camera', 'test', guarded.url('/cam'), '--user', 'admin', '--password', wrong, '--models', noModels, '--json']);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({ connected: false, code: 'auth_failed', reason: 'wrong password' });
    expect(j.stdout + j.stderr).not.toContain(wrong);
  });

  it('the right password with --user/--password: connected, the password not in the output', async () => {
    const r = await footfall(['camera', 'test', guarded.url('/cam'), '--user', 'admin', '--password', PASSWORD, '--seconds', '1', '--models', noModels]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain(`Camera rtsp://admin:***@127.0.0.1:${guarded.port}/cam`);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    expect(r.stdout + r.stderr).not.toContain(encodeURIComponent(PASSWORD));
  });

  it('with the face models: faces counted on a stream of photos, their size, the share below the gate and the verdict', async () => {
    await ensureTestModels();
    const faces = await startRtspServer({ file: await registryPersonClip(), mounts: ['/door'], user: 'admin', password: PASSWORD });
    try {
      const snap = path.join(tmp, 'faces.jpg');
      const r = await footfall(['camera', 'test', faces.url('/door', { user: 'admin', password: PASSWORD }), '--seconds', '8', '--models', testModelsDir(), '--snapshot', snap, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain(PASSWORD);
      const report = JSON.parse(r.stdout) as CameraTestReport;
      const g = report.recognition;
      expect(g).toMatchObject({ checked: true, gate: DEFAULT_QUALITY.gate });
      expect(g.analysed).toBeGreaterThan(0);
      expect(g.faces).toBeGreaterThan(0);
      expect(g.max_faces_per_picture).toBeGreaterThanOrEqual(1);
      expect(g.face_width_px!.min).toBeGreaterThan(10);
      expect(g.face_width_px!.max).toBeLessThanOrEqual(640);
      expect(['good', 'marginal', 'poor']).toContain(g.verdict);
      expect(g.fraction_below_gate).toBe(Math.round((g.below_gate! / g.faces!) * 1000) / 1000);
      expect(g.headline).toMatch(/faces/i);
      // The snapshot is the picture with the most faces above the gate.
      expect((await sharp(readFileSync(snap)).metadata()).width).toBe(640);

      const text = await footfall(['camera', 'test', faces.url('/door', { user: 'admin', password: PASSWORD }), '--seconds', '4', '--models', testModelsDir()]);
      expect(text.stdout).toMatch(/Faces: \d+ in \d+ pictures looked at .* below the quality gate \d/);
      expect(text.stdout).toMatch(/Placement: (good|marginal|poor|no_faces)\./);
    } finally {
      await faces.stop();
    }
  }, 300_000);
});
