/**
 * The end-to-end rig of the camera tests on video (test/door-e2e, door-real, roles-e2e and counting-e2e): head office
 * in-process, a real RTSP server on 127.0.0.1 playing a video (agent/fixtures/rtsp-server.ts), a shop PC enrolled
 * with a code through the API and run in-process (the agent runtime: ffmpeg capture, the real models, the disk queue,
 * MQTT QoS 1), what the shop PC sends recorded as head office's embedded broker receives it, and each camera's
 * frames recorded with the time they reached the shop PC. The tests differ in the video, the line and the truth.
 *
 *   const rig = useDoorRig({ name: 'door', prepare: () => [ensureTestBodyModels()] });  // registers beforeAll/afterAll
 *   it('…', async () => {
 *     const pc = await rig.shopPc({ company: 'Door Co', shop: { name: 'Market Street' }, file, mounts: ['/door'], recognition: false });
 *     const frames = pc.frames('door');
 *     const camera = await pc.addCamera({ camera_id: 'door', path: '/door', tuning: { line } });
 *     const { runs } = await pc.oneRun(camera, frames, { durationS: 60, fps: 5, timeoutMs: 100_000 });
 *     ...
 *   });
 *
 * One shop PC at a time (the camera tests undercount when the CPU is starved: they are not run concurrently).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AedesPublishPacket } from 'aedes';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { loadAgentConfig } from '../../agent/config/config.js';
import { enrolShopPc } from '../../agent/enrol/enrol.js';
import { bodyModelsOnly, testModelsDir } from '../../agent/models/test-cache.js';
import { AgentRuntime, type AgentRuntimeOptions } from '../../agent/runtime/runtime.js';
import { embeddedOf } from '../../server/broker/embedded.js';
import type { RawConfig } from '../../server/config.js';
import { CrossingMessage, VisitMessage } from '../../shared/messages.js';
import { upFilterAllShops } from '../../shared/topics.js';
import { startHarness, type Harness } from './harness.js';
import { startRtspServer, type RtspServer } from './rtsp.js';
import { addCamera, enrolmentCode, openShop, waitFor } from './shop-pc.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });

export interface DoorRigOptions {
  /** Names the temp folder (footfall-<name>-…). */
  name: string;
  /** Head office's settings over the test defaults (FOOTFALL_VISIT_GAP_S …). */
  env?: Partial<RawConfig>;
  /** What to make ready while head office starts (models, the video). */
  prepare?: () => Promise<unknown>[];
}

export interface ShopPcOptions {
  company: string;
  /** POST /api/sites body. */
  shop: Record<string, unknown>;
  /** The video the RTSP server plays, and its mounts. */
  file: string;
  mounts: string[];
  onPlaying?: (mount: string, atMs: number) => void;
  /**
   * false: face recognition switched off and the shop PC's models folder holding only the person model (body counting
   * needs no face models); true: the test face models, one vision worker.
   */
  recognition: boolean;
  timing?: AgentRuntimeOptions['timing'];
}

/** A camera's frames as they reached the shop PC: wall-clock ms of frame n at `at[n]`. */
export interface Frames {
  at: number[];
  untap(): void;
}

export interface ShopPc {
  owner: string;
  shop: any;
  rtsp: RtspServer;
  runtime: AgentRuntime;
  /** The shop PC's data folder. */
  dataDir: string;
  /** POST /api/sites/{site}/cameras on this RTSP server (host and port filled in). */
  addCamera(body: Record<string, unknown>): Promise<any>;
  /** Records a camera's frames from now on. */
  frames(cameraId: string): Frames;
  /**
   * Waits for the first frame, then for one whole run of the video (stopping two frames short of its loop); returns
   * how many times the camera's capture ran (1: no restart).
   */
  oneRun(camera: { id: string }, frames: Frames, run: { durationS: number; fps: number; timeoutMs: number }): Promise<{ runs: number }>;
  /** Stops the shop PC (drains its queue to head office); the rig no longer stops it at the end. */
  stop(): Promise<void>;
}

export interface DoorRig {
  readonly h: Harness;
  /** CrossingMessages head office's broker received (up/+/crossing), parsed, in order. */
  readonly crossings: CrossingMessage[];
  /** VisitMessages it received (up/+/visit). */
  readonly visits: VisitMessage[];
  shopPc(opts: ShopPcOptions): Promise<ShopPc>;
}

/** Registers the rig's beforeAll (head office, subscriptions) and afterAll (stops everything) in the calling file. */
export function useDoorRig(opts: DoorRigOptions): DoorRig {
  let h: Harness | undefined;
  let tmp: string | undefined;
  let n = 0;
  const running: { rtsp?: RtspServer; runtime?: AgentRuntime }[] = [];
  const crossings: CrossingMessage[] = [];
  const visits: VisitMessage[] = [];

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), `footfall-${opts.name}-`));
    [h] = await Promise.all([startHarness(opts.env), ...(opts.prepare?.() ?? [])]);
    const { aedes } = embeddedOf(h.server.broker);
    const collect =
      <T>(into: T[], parse: (v: unknown) => T) =>
      (packet: AedesPublishPacket, done: () => void) => {
        into.push(parse(JSON.parse(packet.payload.toString())));
        done();
      };
    await new Promise<void>((resolve) => aedes.subscribe(upFilterAllShops('crossing'), collect(crossings, (v) => CrossingMessage.parse(v)), resolve));
    await new Promise<void>((resolve) => aedes.subscribe(upFilterAllShops('visit'), collect(visits, (v) => VisitMessage.parse(v)), resolve));
  }, 120_000);

  afterAll(async () => {
    for (const r of running) {
      await r.runtime?.stop().catch(() => undefined);
      await r.rtsp?.stop().catch(() => undefined);
    }
    await h?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const harness = () => {
    if (!h) throw new Error('the door rig is not started (useDoorRig registers a beforeAll)');
    return h;
  };

  async function shopPc(o: ShopPcOptions): Promise<ShopPc> {
    const h = harness();
    const dir = path.join(tmp!, `pc${++n}`);
    const configPath = path.join(dir, 'agent.json');
    const dataDir = path.join(dir, 'data');
    const handles: (typeof running)[number] = {};
    running.push(handles);
    // The RTSP server starts while the shop PC enrols and starts: it plays only once a camera asks.
    const serving = startRtspServer({ file: o.file, mounts: o.mounts, onPlaying: o.onPlaying }).then((s) => (handles.rtsp = s));
    const company = await h.company(o.company);
    const owner = company.ownerToken;
    const shop = await openShop(h, owner, o.shop);
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath, local: { data_dir: dataDir } });
    if (!o.recognition) bodyModelsOnly(path.join(dataDir, 'models'));
    const config = { ...(await loadAgentConfig(configPath)), log_level: 'silent' as const };
    const runtime = await AgentRuntime.start({
      config,
      log,
      ...(o.recognition ? { modelsDir: testModelsDir(), visionWorkers: 1 } : { modelsDir: false as const }),
      drainMs: 10_000,
      ...(o.timing ? { timing: o.timing } : {}),
      capture: { backoff: { initialMs: 300, maxMs: 2000 }, firstFrameTimeoutMs: 8000, stallTimeoutMs: 5000, stopGraceMs: 1000 },
    });
    handles.runtime = runtime;
    const rtsp = await serving;
    await waitFor(() => runtime.broker.connected, 10_000);

    return {
      owner,
      shop,
      rtsp,
      runtime,
      dataDir,
      addCamera: (body) => addCamera(h, owner, shop.site_id, { host: '127.0.0.1', port: rtsp.port, ...body }),
      frames(cameraId) {
        const at: number[] = [];
        const untap = runtime.tap(cameraId, (frame) => void at.push(frame.at.getTime()));
        return { at, untap };
      },
      async oneRun(camera, frames, run) {
        await waitFor(() => frames.at.length > 0, 20_000, 50);
        const lastFrame = Math.floor(run.durationS * run.fps) - 2;
        await waitFor(() => frames.at.length >= lastFrame, run.timeoutMs, 100);
        return { runs: runtime.capture.worker(camera.id)!.stats.runs };
      },
      async stop() {
        handles.runtime = undefined;
        await runtime.stop();
      },
    };
  }

  return {
    get h() {
      return harness();
    },
    crossings,
    visits,
    shopPc,
  };
}

/** Clip time 0 in wall-clock ms: frame n of the run is n / fps s into the clip. */
export function clipBase(frameAt: readonly number[], fps: number): number {
  const frameMs = 1000 / fps;
  return Math.min(...frameAt.map((t, n) => t - n * frameMs));
}

/** The crossings, each once (by crossing_id), with their clip time `t` in s from `base`, in time order. */
export function onClip(crossings: readonly CrossingMessage[], base: number): (CrossingMessage & { t: number })[] {
  const seen = [...new Map(crossings.map((c) => [c.crossing_id, c])).values()].map((c) => ({ ...c, t: (Date.parse(c.occurred_at) - base) / 1000 }));
  return seen.sort((a, b) => a.t - b.t);
}

/** `4.0in 9.1in …`: crossings for a test's printout. */
export function timeline(crossings: readonly { t: number; direction: string }[]): string {
  return crossings.map((c) => `${c.t.toFixed(1)}${c.direction}`).join(' ');
}
