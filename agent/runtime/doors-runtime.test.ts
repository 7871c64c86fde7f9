/**
 * Body counting in the agent runtime without face models, against a real head office in-process (HTTP, broker,
 * SQLite): the person detector loads from the models folder's bodies.json when a camera has a counting line, with
 * recognition not running; a crossing goes through the disk queue to head office exactly once, also when it was
 * queued while the broker was out of reach and the agent restarted.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addCamera, enrolmentCode, openShop, waitFor } from '../../test/support/shop-pc.js';
import { DOOR_LINE } from '../fixtures/door-video.js';
import { loadAgentConfig, type AgentConfig } from '../config/config.js';
import { enrolShopPc } from '../enrol/enrol.js';
import { bodyModelsOnly, ensureTestBodyModels } from '../models/test-cache.js';
import { AgentRuntime } from './runtime.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });

let h: Harness;
let tmp: string;
const running: AgentRuntime[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-doors-runtime-'));
  [h] = await Promise.all([startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1 }), ensureTestBodyModels()]);
}, 120_000);

afterAll(async () => {
  for (const r of running.splice(0)) await r.stop();
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('body counting in the runtime', () => {
  it('loads the person detector without face models once a camera has a line, and delivers crossings once, across a restart', { timeout: 90_000 }, async () => {
    const owner = (await h.company('Doorway Ltd')).ownerToken;
    const shop = await openShop(h, owner, { name: 'Quay', timezone: 'UTC' });
    const configPath = path.join(tmp, 'agent.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath, local: { data_dir: path.join(tmp, 'data') } });
    const config: AgentConfig = { ...(await loadAgentConfig(configPath)), log_level: 'silent' };
    const models = path.join(tmp, 'models');
    bodyModelsOnly(models);
    const start = async (over: Partial<AgentConfig> = {}) => {
      const r = await AgentRuntime.start({ config: { ...config, ...over }, log, modelsDir: models, brokerBackoff: { initialMs: 50, maxMs: 200 }, drainMs: 2000 });
      running.push(r);
      return r;
    };
    const stop = async (r: AgentRuntime) => {
      await r.stop();
      running.splice(running.indexOf(r), 1);
    };

    // The face models are missing: recognition says so; no camera has a line yet: no person detector.
    const first = await start();
    expect(first.recognition.running).toBe(false);
    expect(first.recognition.problem).toMatch(/face models not installed/);
    await first.sync.pull();
    await first.doors.idle();
    expect(first.doors.detectorName).toBeUndefined();

    // A camera with a line (its stream is nowhere: the detector loads from the camera list, not from frames).
    await addCamera(h, owner, shop.site_id, { camera_id: 'door', host: '127.0.0.1', port: 9, path: '/door', tuning: { detect_fps: 5, line: DOOR_LINE } });
    await first.sync.pull();
    await waitFor(async () => {
      await first.doors.idle();
      return first.doors.detectorName;
    }, 60_000, 100);
    expect(first.doors.detectorName).toMatch(/onnxruntime \+ tfjs-wasm/);
    expect(first.doors.problem).toBeUndefined();

    // Crossings go out through the disk queue: one now, stored once at head office.
    await waitFor(() => first.broker.connected, 10_000);
    expect(first.crossings.submit('door', { direction: 'in', at: new Date(), trackId: 'b1' })).toBe(true);
    await waitFor(() => h.server.crossings.stats.stored === 1, 10_000);
    await stop(first);

    // Two more while the broker is out of reach (a closed port), the agent stopped with them queued on disk...
    const cut = await start({ broker: { ...config.broker, host: '127.0.0.1', port: 9 } });
    expect(cut.crossings.submit('door', { direction: 'in', at: new Date(), trackId: 'b2' })).toBe(true);
    expect(cut.crossings.submit('door', { direction: 'out', at: new Date(), trackId: 'b1' })).toBe(true);
    expect(cut.queue.stats().queued).toBe(2);
    await stop(cut);
    // ...are delivered by the next run, each once.
    const again = await start();
    await waitFor(() => h.server.crossings.stats.stored === 3, 15_000);
    const row = (await h.request('GET', `/api/sites/${shop.slug}`, { token: owner })).body;
    expect(row).toMatchObject({ entries_today: 2, exits_today: 1, occupancy: 1 });
    await stop(again);
    expect(h.server.crossings.stats).toMatchObject({ stored: 3, invalid: 0 });
  });
  it('a camera with a line and no person model: the heartbeat says why, and head office shows it on the shop', { timeout: 60_000 }, async () => {
    const owner = (await h.company('Doorless Ltd')).ownerToken;
    const shop = await openShop(h, owner, { name: 'Pier', timezone: 'UTC' });
    const configPath = path.join(tmp, 'agent-pier.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath, local: { data_dir: path.join(tmp, 'data-pier') } });
    const config: AgentConfig = { ...(await loadAgentConfig(configPath)), log_level: 'silent' };
    const empty = path.join(tmp, 'no-models');
    mkdirSync(empty, { recursive: true });
    const r = await AgentRuntime.start({ config, log, modelsDir: empty, brokerBackoff: { initialMs: 50, maxMs: 200 }, drainMs: 2000 });
    running.push(r);
    try {
      // No line yet: nothing to say.
      await r.sync.pull();
      expect(r.heartbeat().door_counting_problem).toBeUndefined();
      expect((await h.request('GET', `/api/sites/${shop.slug}`, { token: owner })).body.door_counting_problem).toBeNull();
      await addCamera(h, owner, shop.site_id, { camera_id: 'door', host: '127.0.0.1', port: 9, path: '/door', tuning: { detect_fps: 5, line: DOOR_LINE } });
      await r.sync.pull();
      await waitFor(async () => {
        await r.doors.idle();
        return r.doors.problem;
      }, 30_000, 100);
      expect(r.heartbeat().door_counting_problem).toMatch(/person detector would not load: .*footfall models fetch/);
      const row = await waitFor(async () => {
        const b = (await h.request('GET', `/api/sites/${shop.slug}`, { token: owner })).body;
        return b.door_counting_problem ? b : undefined;
      }, 15_000, 200);
      expect(row).toMatchObject({ occupancy: 0, entries_today: 0, door_counting_problem: expect.stringMatching(/person detector would not load/) });
      // The line cleared: nothing to count, so the heartbeat no longer says counting fails.
      const cam = (await h.request('GET', '/api/cameras', { token: owner })).body.find((c: { camera_id: string; site_id: string }) => c.camera_id === 'door' && c.site_id === shop.site_id);
      expect((await h.request('PATCH', `/api/cameras/${cam.id}`, { token: owner, body: { tuning: { line: null } } })).status).toBe(200);
      await r.sync.pull();
      expect(r.heartbeat().door_counting_problem).toBeUndefined();
    } finally {
      await r.stop();
      running.splice(running.indexOf(r), 1);
    }
  });
});
