/**
 * `footfall status` as an installer runs it: the built CLI in its own process, against a real head office (the
 * in-process harness) with a PC enrolled by a real installation code, and a queue file held by a DurableQueue as a
 * running agent holds it.
 */
import { execFileSync } from 'node:child_process';
import { runFootfall } from '../test/support/command-output.js';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, queueFile, type AgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { DurableQueue } from '../agent/queue/queue.js';
import { packageRoot } from '../server/paths.js';
import { startHarness, type Harness } from '../test/support/harness.js';
import { enrolmentCode, openShop } from '../test/support/shop-pc.js';
import { npmFfmpeg, resolveFfmpeg } from '../agent/capture/ffmpeg-bin.js';
import type { StatusReport } from './status.js';

const root = packageRoot();

/** Builds dist/ when a source this command runs is newer than its JavaScript (npm test builds first anyway). */
function ensureCliBuilt(): void {
  const sources = ['cli/main.ts', 'cli/status.ts'].map((f) => path.join(root, f));
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

const footfall = runFootfall;

let h: Harness | undefined;
let tmp: string;
let configFile: string;
let config: AgentConfig;

beforeAll(async () => {
  ensureCliBuilt();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-cli-status-'));
  h = await startHarness();
  const owner = (await h.company('Chai Point')).ownerToken;
  const shop = await openShop(h, owner, { name: 'Andheri West' });
  configFile = path.join(tmp, 'agent.json');
  await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: configFile, local: { data_dir: path.join(tmp, 'data') } });
  config = await loadAgentConfig(configFile);
}, 120_000);

afterAll(async () => {
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('footfall status', () => {
  it('not enrolled: says so and how to enrol, exit 1', async () => {
    const r = await footfall(['status', '--config', path.join(tmp, 'none.json')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`Enrolled: no (${path.join(tmp, 'none.json')}).`);
    expect(r.stdout).toContain('footfall enrol --server');
    expect(r.stdout).toMatch(/ffmpeg: \d/);

    const j = JSON.parse((await footfall(['status', '--config', path.join(tmp, 'none.json'), '--json'])).stdout) as StatusReport;
    expect(j).toMatchObject({ enrolled: false, ffmpeg: { found: true } });
    expect(j.head_office).toBeUndefined();
  });

  it('says which ffmpeg it uses: FOOTFALL_FFMPEG first; with no ffmpeg on PATH, the npm package\'s', async () => {
    const none = path.join(tmp, 'none.json');
    const env = { ...process.env };
    delete env.FOOTFALL_FFMPEG;
    const emptyPath = mkdtempSync(path.join(tmp, 'path-'));
    const npm = npmFfmpeg();
    const bare = (await footfall(['status', '--config', none, '--json'], { ...env, PATH: emptyPath })).stdout;
    if (npm) expect(JSON.parse(bare)).toMatchObject({ ffmpeg: { found: true, path: npm, source: 'the npm package', version: expect.stringMatching(/^4\.x \(/) } });
    else expect(JSON.parse(bare)).toMatchObject({ ffmpeg: { found: false } }); // a platform the npm packages do not cover
    const r = await footfall(['status', '--config', none], { ...env, PATH: emptyPath, FOOTFALL_FFMPEG: resolveFfmpeg(env).path });
    expect(r.stdout).toMatch(/^ffmpeg: \d\S* .*from FOOTFALL_FFMPEG \(/m);
  });

  it('enrolled, head office up: shop, head office answers, broker reachable, queue counts read while an agent holds the file; exit 0; no secret printed', async () => {
    // A running agent's hold on the queue: the DurableQueue keeps the file locked while open.
    const queue = new DurableQueue({ file: queueFile(config), shop: config.site.id, maxItems: 100 });
    try {
      for (let i = 0; i < 103; i++) queue.enqueue('t', `visit ${i}`);
      const r = await footfall(['status', '--config', configFile, '--models', path.join(tmp, 'no-models')]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain('Enrolled: yes, shop "Andheri West" (Chai Point)');
      expect(r.stdout).toContain(`Head office: ${h!.url}: answers.`);
      expect(r.stdout).toMatch(/Broker: 127\.0\.0\.1:\d+: accepts connections\./);
      expect(r.stdout).toMatch(/Queue: 100 visits waiting, 3 dropped \(.*in use by a running agent\)/);
      expect(r.stdout).toContain('Face models: not installed');
    expect(r.stdout).toContain('Person model (door counting): not installed');
      for (const secret of [config.token, config.broker.password]) expect(r.stdout + r.stderr).not.toContain(secret);

      const j = JSON.parse((await footfall(['status', '--config', configFile, '--json'])).stdout) as StatusReport;
      expect(j).toMatchObject({
        enrolled: true,
        shop: { name: 'Andheri West' },
        company: { name: 'Chai Point' },
        head_office: { url: h!.url, answers: true },
        broker: { reachable: true },
        queue: { exists: true, queued: 100, dropped: 3, in_use: true },
        ffmpeg: { found: true },
      });
      expect(JSON.stringify(j)).not.toContain(config.token);

      // The agent was not disturbed: its queue goes on.
      queue.enqueue('t', 'after');
      expect(queue.stats()).toEqual({ queued: 100, dropped: 4 });
    } finally {
      queue.close();
    }
    // No agent now: the counts are the same, the file free.
    const after = JSON.parse((await footfall(['status', '--config', configFile, '--json'])).stdout) as StatusReport;
    expect(after.queue).toMatchObject({ queued: 100, dropped: 4, in_use: false });
  });

  it('head office stopped: says so and exits 1', async () => {
    // Another configuration for the same PC, pointing at a head office that is then stopped.
    const other = await startHarness();
    const owner = (await other.company('Gone Ltd')).ownerToken;
    const shop = await openShop(other, owner, { name: 'Closed' });
    const file = path.join(tmp, 'gone.json');
    await enrolShopPc({ server: other.url, code: await enrolmentCode(other, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'gone') } });
    await other.close();
    const r = await footfall(['status', '--config', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`Head office: ${other.url}: NOT ANSWERING (connection refused).`);
    expect(r.stdout).toMatch(/Broker: .*NOT REACHABLE \(connection refused\)/);
    expect(r.stdout).toContain('no queue file yet');
  });

  it('models installed elsewhere: present and verified against the manifest', async () => {
    const { ensureTestModels, testModelsDir } = await import('../agent/models/test-cache.js');
    await ensureTestModels();
    const j = JSON.parse((await footfall(['status', '--config', configFile, '--models', testModelsDir(), '--json'])).stdout) as StatusReport;
    expect(j.models).toMatchObject({ dir: testModelsDir(), present: true, verified: true });
    // The person model beside them (fetched with the face models; needed only by cameras with a counting line).
    const { ensureTestBodyModels } = await import('../agent/models/test-cache.js');
    await ensureTestBodyModels();
    const k = JSON.parse((await footfall(['status', '--config', configFile, '--models', testModelsDir(), '--json'])).stdout) as StatusReport;
    expect(k.body_models).toMatchObject({ dir: testModelsDir(), present: true, verified: true });
  }, 300_000);
});

