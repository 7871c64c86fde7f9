/**
 * Counting bodies at the door end to end with real parts (issue 20, docs/body-counting.md): the door video
 * (agent/fixtures/door-video.ts, 60 s from registry photos: seven entries and five exits, some with the face hidden,
 * two people one behind the other, someone stopping on the line, someone turning back, two passing each other)
 * looped by a real RTSP server on 127.0.0.1; an enrolled shop PC (the agent runtime in-process: ffmpeg capture at
 * detect_fps 5, the real person detector, tracker and line, the disk queue, MQTT QoS 1) with face recognition switched
 * off and no face models in its models folder (only the person model): body counting does not need them; head
 * office in-process, the camera added with its counting line through the API (tuning.line), as the console does.
 *
 * Asserted: entries and exits each within one of the truth over one run of the video, every crossing near a true
 * one of its direction; what the broker delivered are valid CrossingMessages with distinct ids; head office stored
 * each once; GET /api/sites and GET /api/sites/{site} show the shop's entries_today, exits_today and occupancy to
 * match, and the footfall report the same entries and exits (capture rate 0: no face was identified).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AedesPublishPacket } from 'aedes';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrossingMessage } from '../shared/messages.js';
import { upFilterAllShops } from '../shared/topics.js';
import { loadAgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { DOOR_LINE, DOOR_VIDEO, doorTruth, ensureDoorVideo } from '../agent/fixtures/door-video.js';
import { bodyModelsOnly, ensureTestBodyModels } from '../agent/models/test-cache.js';
import { AgentRuntime } from '../agent/runtime/runtime.js';
import { startHarness, type Harness } from './support/harness.js';
import { startRtspServer, type RtspServer } from './support/rtsp.js';
import { addCamera, enrolmentCode, openShop, waitFor } from './support/shop-pc.js';
import { embeddedOf } from '../server/broker/embedded.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
const report = (...args: unknown[]) => {
  if (process.env.FOOTFALL_TEST_TIMING) console.log(...args);
};
const FPS = 5;
const FRAME_MS = 1000 / FPS;

let h: Harness;
let rtsp: RtspServer | undefined;
let runtime: AgentRuntime | undefined;
let tmp: string;
const delivered: CrossingMessage[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-door-'));
  [h] = await Promise.all([startHarness(), ensureTestBodyModels(), ensureDoorVideo()]);
  const record = (packet: AedesPublishPacket, done: () => void) => {
    delivered.push(CrossingMessage.parse(JSON.parse(packet.payload.toString())));
    done();
  };
  await new Promise<void>((resolve) => embeddedOf(h.server.broker).aedes.subscribe(upFilterAllShops('crossing'), record, resolve));
}, 120_000);

afterAll(async () => {
  await runtime?.stop().catch(() => undefined);
  await rtsp?.stop().catch(() => undefined);
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('door counting on video: entries, exits and occupancy', () => {
  it('counts entries and exits within one of the truth with recognition off and no face models, and head office agrees', { timeout: 180_000 }, async () => {
    const { video } = await ensureDoorVideo();
    const truth = doorTruth();
    const trueIn = truth.filter((c) => c.direction === 'in').length;
    const trueOut = truth.length - trueIn;
    const started = Date.now();
    rtsp = await startRtspServer({ file: video, mounts: ['/door'] });
    const company = await h.company('Door Co');
    const owner = company.ownerToken;
    const shop = await openShop(h, owner, { name: 'Market Street', timezone: 'UTC' });
    const configPath = path.join(tmp, 'agent.json');
    const dataDir = path.join(tmp, 'data');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath, local: { data_dir: dataDir } });
    // The shop PC's own models folder holds the person model and no face models.
    bodyModelsOnly(path.join(dataDir, 'models'));
    expect(existsSync(path.join(dataDir, 'models', 'manifest.json'))).toBe(false);
    const config = { ...(await loadAgentConfig(configPath)), log_level: 'silent' as const };
    runtime = await AgentRuntime.start({
      config,
      log,
      // Recognition switched off: no face models are looked for.
      modelsDir: false,
      drainMs: 10_000,
      capture: { backoff: { initialMs: 300, maxMs: 2000 }, firstFrameTimeoutMs: 8000, stallTimeoutMs: 5000, stopGraceMs: 1000 },
    });
    expect(runtime.recognition.running).toBe(false);
    await waitFor(() => runtime!.broker.connected, 10_000);

    // The camera with its counting line, as the console sends it.
    const camera = await addCamera(h, owner, shop.site_id, { camera_id: 'door', host: '127.0.0.1', port: rtsp.port, path: '/door', max_width: 640, tuning: { detect_fps: FPS, line: DOOR_LINE } });
    expect(camera.tuning.line).toEqual(DOOR_LINE);
    const frameAt: number[] = [];
    const untap = runtime.tap('door', (frame) => void frameAt.push(frame.at.getTime()));
    await waitFor(() => frameAt.length > 0, 20_000, 50);

    // One whole run of the video, stopping two frames short of its loop.
    const lastFrame = Math.floor((DOOR_VIDEO.durationS * 1000) / FRAME_MS) - 2;
    await waitFor(() => frameAt.length >= lastFrame, 100_000, 100);
    const runs = runtime.capture.worker(camera.id)!.stats.runs;
    const doorStats = runtime.doors.stats().door!;
    const detector = runtime.doors.detectorName;
    await runtime.stop();
    untap();
    const queued = runtime.crossings.stats;
    runtime = undefined;
    expect(runs).toBe(1);
    expect(detector).toBeDefined();

    const base = Math.min(...frameAt.map((t, n) => t - n * FRAME_MS));
    const seen = [...new Map(delivered.map((c) => [c.crossing_id, c])).values()].map((c) => ({ ...c, t: (Date.parse(c.occurred_at) - base) / 1000 }));
    seen.sort((a, b) => a.t - b.t);
    report(
      `door e2e (${detector}): ${queued.in} in / ${queued.out} out queued, truth ${trueIn} / ${trueOut}; ${JSON.stringify(doorStats)}; ${Date.now() - started} ms\n` +
        `  counted ${seen.map((c) => `${c.t.toFixed(1)}${c.direction}`).join(' ')}\n  truth   ${truth.map((c) => `${c.t.toFixed(1)}${c.direction}`).join(' ')}`,
    );

    // What the shop PC counted: each direction within one of the truth, every crossing near a true one.
    const entries = seen.filter((c) => c.direction === 'in').length;
    const exits = seen.length - entries;
    expect(Math.abs(entries - trueIn), `entries ${entries}, truth ${trueIn}`).toBeLessThanOrEqual(1);
    expect(Math.abs(exits - trueOut), `exits ${exits}, truth ${trueOut}`).toBeLessThanOrEqual(1);
    expect(queued).toMatchObject({ in: entries, out: exits, invalid: 0 });
    for (const c of seen) {
      expect(
        truth.some((x) => x.direction === c.direction && Math.abs(x.t - c.t) <= 1.5),
        `${c.direction} at ${c.t.toFixed(1)} s`,
      ).toBe(true);
      expect(c.camera_id).toBe('door');
    }
    // Some of them with the face hidden the whole way (the reason for counting bodies): counted too.
    const hidden = truth.filter((x) => x.look !== 'face');
    const hiddenCounted = hidden.filter((x) => seen.some((c) => c.direction === x.direction && Math.abs(x.t - c.t) <= 1.5));
    expect(hiddenCounted.length).toBeGreaterThanOrEqual(hidden.length - 1);

    // Head office stored each crossing once; the shop's day agrees.
    expect(h.server.crossings.stats.stored).toBe(seen.length);
    let inside = 0;
    for (const c of seen) inside = Math.max(0, inside + (c.direction === 'in' ? 1 : -1));
    const sites = await h.request('GET', '/api/sites', { token: owner });
    expect(sites.status).toBe(200);
    const row = (sites.body as any[]).find((s) => s.id === shop.site_id || s.slug === shop.slug);
    expect(row).toMatchObject({ entries_today: entries, exits_today: exits, occupancy: inside });
    expect(Math.abs(row.occupancy - (trueIn - trueOut))).toBeLessThanOrEqual(2);
    const one = await h.request('GET', `/api/sites/${shop.slug}`, { token: owner });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ entries_today: entries, exits_today: exits, occupancy: inside });

    // The footfall report counts the same entries and exits; no visit was identified (recognition off): capture 0.
    const day = new Date().toISOString().slice(0, 10);
    const r = await h.request('GET', `/api/reports/footfall?from=${day}&to=${day}&tz=UTC&site=${shop.slug}`, { token: owner });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ entries, exits, capture_rate: 0 });
    expect(r.body.points.reduce((n: number, p: any) => n + p.entries, 0)).toBe(entries);
    expect(r.body.points.reduce((n: number, p: any) => n + p.exits, 0)).toBe(exits);
  });
});
