/**
 * Counting at the door on REAL footage, end to end with real parts (issue 25): one committed clip of the real set
 * (bench/real-footage/clips.json, `table-walkup-1`: 47 s of intel-iot-devkit's one-by-one-person-detection, CC BY
 * 4.0, 768x432 10 fps, two people one at a time, each leaving across the line) played once by a real RTSP server on
 * 127.0.0.1; an enrolled shop PC (the agent runtime in-process: ffmpeg capture at the camera's default detect_fps, the
 * real person detector, tracker and line with the agent's default door_fps, the disk queue, MQTT QoS 1) with face
 * recognition off and only the person model; head office in-process, the camera added with the clip's line through
 * the API (tuning.line), as the console does.
 *
 * Asserted, the issue's target against the clip's hand labels (the reconciled labels/<id>.json when there is one,
 * else labeller a's): entries and exits each within 5 % of the truth, within one where the truth is under 20; false
 * crossings (counted ones with no true crossing of their direction within 1.5 s, matched one to one) at most 2 % of
 * the truth; head office stored what the shop PC sent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AedesPublishPacket } from 'aedes';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrossingMessage } from '../shared/messages.js';
import { DEFAULT_TUNING } from '../shared/agent-api.js';
import { upFilterAllShops } from '../shared/topics.js';
import { loadAgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { bodyModelsOnly, ensureTestBodyModels } from '../agent/models/test-cache.js';
import { AgentRuntime } from '../agent/runtime/runtime.js';
import { loadClips, matchCrossings, truthFor } from '../bench/real-footage/clips.js';
import { embeddedOf } from '../server/broker/embedded.js';
import { startHarness, type Harness } from './support/harness.js';
import { startRtspServer, type RtspServer } from './support/rtsp.js';
import { addCamera, enrolmentCode, openShop, waitFor } from './support/shop-pc.js';

const CLIP_ID = 'table-walkup-1';
const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
const FPS = DEFAULT_TUNING.detect_fps;
const FRAME_MS = 1000 / FPS;

/** The issue's tolerance on a count: 5 % of the truth, at least one. */
const countTolerance = (truth: number) => Math.max(1, Math.floor(0.05 * truth));

let h: Harness;
let rtsp: RtspServer | undefined;
let runtime: AgentRuntime | undefined;
let tmp: string;
const delivered: CrossingMessage[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-door-real-'));
  [h] = await Promise.all([startHarness(), ensureTestBodyModels()]);
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

describe('door counting on real footage', () => {
  it(`counts ${CLIP_ID} within the issue's tolerance of its hand labels`, { timeout: 150_000 }, async () => {
    const clip = loadClips().find((c) => c.id === CLIP_ID)!;
    const { labels, which } = truthFor(CLIP_ID)!;
    const truth = labels.crossings;
    const trueIn = truth.filter((c) => c.direction === 'in').length;
    const trueOut = truth.length - trueIn;

    const playing: [string, number][] = [];
    rtsp = await startRtspServer({ file: clip.file, mounts: ['/door'], onPlaying: (mount, at) => void playing.push([mount, at]) });
    const company = await h.company('Real Door Co');
    const owner = company.ownerToken;
    const shop = await openShop(h, owner, { name: 'Real Street', timezone: 'UTC' });
    const configPath = path.join(tmp, 'agent.json');
    const dataDir = path.join(tmp, 'data');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath, local: { data_dir: dataDir } });
    bodyModelsOnly(path.join(dataDir, 'models'));
    const config = { ...(await loadAgentConfig(configPath)), log_level: 'silent' as const };
    runtime = await AgentRuntime.start({
      config,
      log,
      modelsDir: false,
      drainMs: 10_000,
      capture: { backoff: { initialMs: 300, maxMs: 2000 }, firstFrameTimeoutMs: 8000, stallTimeoutMs: 5000, stopGraceMs: 1000 },
    });
    await waitFor(() => runtime!.broker.connected, 10_000);

    // The camera with the clip's counting line and otherwise the product's defaults, as the console sends it.
    const camera = await addCamera(h, owner, shop.site_id, { camera_id: 'door', host: '127.0.0.1', port: rtsp.port, path: '/door', max_width: clip.width, tuning: { line: clip.line } });
    expect(camera.tuning.line).toEqual(clip.line);
    const frameAt: number[] = [];
    const untap = runtime.tap('door', (frame) => void frameAt.push(frame.at.getTime()));
    await waitFor(() => frameAt.length > 0, 20_000, 50);

    // One whole run of the clip (it starts and ends with nobody in view), stopping two frames short of its loop.
    const lastFrame = Math.floor((clip.duration_s * 1000) / FRAME_MS) - 2;
    await waitFor(() => frameAt.length >= lastFrame, 110_000, 100);
    const runs = runtime.capture.worker(camera.id)!.stats.runs;
    const detector = runtime.doors.detectorName;
    // What the door counter did with the frames (printed with the result: a miss says whether the detector saw them).
    const doorStats = runtime.doors.stats().door;
    await runtime.stop();
    untap();
    const queued = runtime.crossings.stats;
    runtime = undefined;
    expect(runs).toBe(1);
    expect(detector).toBeDefined();

    // Clip time of a crossing: frame n of the run is n / FPS s into the clip.
    const base = Math.min(...frameAt.map((t, n) => t - n * FRAME_MS));
    // The server's clip time 0 (what bench door-real times crossings from) is one moment per stream, before frame 0
    // reached the agent: the stream's latency (base - that moment) is positive and under the first-frame timeout.
    expect(playing.map(([m]) => m)).toEqual(['/door']);
    expect(base - playing[0]![1]).toBeGreaterThan(0);
    expect(base - playing[0]![1]).toBeLessThan(8000);
    const seen = [...new Map(delivered.map((c) => [c.crossing_id, c])).values()].map((c) => ({ ...c, t: (Date.parse(c.occurred_at) - base) / 1000 }));
    seen.sort((a, b) => a.t - b.t);
    const { pairs, onlyA: missed, onlyB: falses } = matchCrossings(truth, seen, 1.5);
    const entries = seen.filter((c) => c.direction === 'in').length;
    const exits = seen.length - entries;
    const summary =
      `${CLIP_ID} (${detector}, truth ${which}): counted ${entries} in / ${exits} out, truth ${trueIn} / ${trueOut}; ` +
      `${pairs.length} matched, ${missed.length} missed, ${falses.length} false\n` +
      `  door counter: ${JSON.stringify(doorStats)}\n` +
      `  counted ${seen.map((c) => `${c.t.toFixed(1)}${c.direction}`).join(' ') || '-'}\n  truth   ${truth.map((c) => `${c.t.toFixed(1)}${c.direction}`).join(' ')}`;
    console.log(summary);

    expect(queued).toMatchObject({ in: entries, out: exits, invalid: 0 });
    expect(h.server.crossings.stats.stored).toBe(seen.length);
    expect(Math.abs(entries - trueIn), `entries: ${summary}`).toBeLessThanOrEqual(countTolerance(trueIn));
    expect(Math.abs(exits - trueOut), `exits: ${summary}`).toBeLessThanOrEqual(countTolerance(trueOut));
    expect(falses.length, `false crossings: ${summary}`).toBeLessThanOrEqual(Math.floor(0.02 * truth.length));
  });
});
