/**
 * The whole product chain with real parts and nothing injected: a real RTSP server on 127.0.0.1 (test/support/rtsp.ts) loops a
 * clip with faces; an enrolled shop PC (the agent runtime in-process: ffmpeg capture, recognition on the real
 * models, durable queue, face uploads, MQTT QoS 1) watches it through a camera added with the API; head office
 * (in-process: broker, ingest thread, matching, SQLite) stores the visits; everything is asserted through the public
 * API (GET /api/visits, /api/visitors, history, image).
 *
 * Two clips:
 * - the stage clip (../shared/faces/short-hamilton-clip.mp4, 9.18 s of video, skipped with a reason when absent):
 *   the stage person must be one customer across loops;
 * - a clip made from the registry photos (always runs): one woman shown twice per loop in two different photos,
 *   four other women once per loop.
 *
 * Loops are told apart by the frames themselves: the test borrows the camera's frames (runtime.tap) and records when
 * each arrived; the camera decodes at 5 fps, so frame n is n x 200 ms into the stream, which gives the stream's clock,
 * and a visit's `occurred_at` (the time of its first frame) its loop and its place in the loop.
 * FOOTFALL_TEST_TIMING=1 prints what was observed.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import type { VisionRecognition } from '../agent/runtime/recognition.js';
import { AgentRuntime } from '../agent/runtime/runtime.js';
import { sharedClip } from '../agent/vision/fixtures.js';
import { REGISTRY_CLIP, registryPersonClip, videoSeconds } from './support/clips.js';
import { startHarness, type Harness } from './support/harness.js';
import { startRtspServer } from './support/rtsp.js';
import { addCamera, enrolmentCode, openShop, waitFor } from './support/shop-pc.js';
import { useCameraSlot } from './support/camera-slot.js';
import { sqliteOf } from '../server/db/open.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
const report = (...args: unknown[]) => {
  if (process.env.FOOTFALL_TEST_TIMING) console.log(...args);
};
/** The camera's detect rate: frame n of the stream is n x FRAME_MS into it. */
const FPS = 5;
const FRAME_MS = 1000 / FPS;

let h: Harness;
let tmp: string;
const cleanups: (() => Promise<void>)[] = [];

// Real-time counting: one such file at a time (test/support/camera-slot.ts).
useCameraSlot();
beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-chain-'));
  [h] = await Promise.all([startHarness({ FOOTFALL_IMAGES: 'local', FOOTFALL_HEARTBEAT_INTERVAL_S: 2, FOOTFALL_VISIT_GAP_S: 0 }), ensureTestModels()]);
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

interface Observed {
  shop: { site_id: string; slug: string; name: string };
  owner: string;
  companyId: string;
  /** Face crops the shop PC uploaded (POST /api/agent/faces). */
  uploads: number;
  loopMs: number;
  /** Complete loops watched. */
  loops: number;
  /** Every stored visit (GET /api/visits), in arrival order, with its loop and its place in the loop (ms). */
  arrivals: (any & { loop: number; phaseMs: number })[];
  /** Visits the shop PC made (recognition -> queue). */
  produced: number;
  /** Frames the camera delivered; frames recognition analysed; faces it saw in them (one per face per frame). */
  frames: number;
  processed: number;
  faces: number;
  ms: Record<string, number>;
}

/**
 * A company, a shop, an enrolled shop PC running with recognition, a camera added through the API on an RTSP
 * server looping `file`; runs until the camera has delivered `loops` whole loops (at most 60 s), stops the shop PC
 * (open tracks end, the queue drains) and reads what head office stored.
 */
async function watchLoops(file: string, loops: number, names: { company: string; shop: string; camera: string }): Promise<Observed> {
  const started = Date.now();
  const ms: Record<string, number> = {};
  const mark = (name: string) => (ms[name] = Date.now() - started);
  const [rtsp, loopS, company] = await Promise.all([startRtspServer({ file, mounts: ['/cam'] }), videoSeconds(file), h.company(names.company)]);
  cleanups.push(() => rtsp.stop());
  const loopMs = loopS * 1000;
  const owner = company.ownerToken;
  const shop = await openShop(h, owner, { name: names.shop });
  const dir = path.join(tmp, shop.slug);
  const configPath = path.join(dir, 'agent.json');
  await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath, local: { data_dir: path.join(dir, 'data') } });
  const config = { ...(await loadAgentConfig(configPath)), log_level: 'silent' as const };
  const runtime = await AgentRuntime.start({
    config,
    log,
    modelsDir: testModelsDir(),
    visionWorkers: 1,
    drainMs: 10_000,
    capture: { backoff: { initialMs: 300, maxMs: 2000 }, firstFrameTimeoutMs: 8000, stallTimeoutMs: 5000, stopGraceMs: 1000 },
  });
  let stopped = false;
  cleanups.push(async () => {
    if (!stopped) await runtime.stop();
  });
  expect(runtime.recognition.running).toBe(true);
  await waitFor(() => runtime.broker.connected, 10_000);
  mark('agent running');

  // The camera's frames, as recognition gets them: their times place every visit in the stream.
  const frameAt: number[] = [];
  const untap = runtime.tap(names.camera, (frame) => void frameAt.push(frame.at.getTime()));
  const camera = await addCamera(h, owner, shop.site_id, { camera_id: names.camera, host: '127.0.0.1', port: rtsp.port, path: '/cam', max_width: 640, tuning: { detect_fps: FPS } });
  await waitFor(() => frameAt.length > 0, 20_000, 50);
  mark('first frame');
  // Whole loops, stopping two frames short of the next loop so that no pass of it begins.
  const lastFrame = Math.floor((loops * loopMs) / FRAME_MS) - 2;
  await waitFor(() => frameAt.length >= lastFrame, 60_000, 50);
  mark(`${loops} loops`);
  const worker = runtime.capture.worker(camera.id)!;
  const runs = worker.stats.runs;
  await runtime.stop();
  const vision = (runtime.recognition as VisionRecognition).pipeline.stats();
  stopped = true;
  untap();
  mark('agent stopped');
  // One ffmpeg run: the stream was never reopened, so it started at the clip's first frame exactly once.
  expect(runs).toBe(1);

  const produced = runtime.visits.stats.queued;
  const feed = async () => {
    const r = await h.request('GET', `/api/visits?limit=1000&site=${shop.slug}`, { token: owner });
    expect(r.status).toBe(200);
    return r.body.arrivals as any[];
  };
  // Every visit the shop PC made is stored (the queue drained on stop: the PUBACK means stored).
  await h.server.ingest.drained();
  // (A shortfall is left to checkRows, which says how many.)
  const rows: any[] = (await waitFor(async () => {
    const got = await feed();
    return got.length >= produced ? got : undefined;
  }, 10_000, 100).catch(() => feed()))!;
  mark('stored');

  // Frame n is n x FRAME_MS into the stream; it reaches the shop PC some time later, least late once ffmpeg has
  // settled (the frames buffered while it probes the stream come at once). The least late frame fixes the clock.
  const base = Math.min(...frameAt.map((t, n) => t - n * FRAME_MS));
  const startLagMs = frameAt[0]! - base;
  const arrivals = rows.map((a) => {
    const streamMs = Date.parse(a.occurred_at) - base;
    return { ...a, loop: Math.floor(streamMs / loopMs), phaseMs: streamMs - Math.floor(streamMs / loopMs) * loopMs };
  });
  ms['start lag'] = startLagMs;
  return { shop, owner, companyId: company.id, loopMs, loops, arrivals, produced, uploads: runtime.visits.stats.faces, frames: frameAt.length, faces: vision.faces, processed: vision.frames_processed, ms };
}

/** Fields every stored visit of this camera carries, and no visit stored twice. */
function checkRows(o: Observed, cameraId: string) {
  const ids = o.arrivals.map((a) => a.visit_id);
  expect(new Set(ids).size).toBe(ids.length);
  // Ingest de-duplicates: head office holds exactly the sightings the shop PC made. A visit is a stay: sightings of
  // one customer that overlap (FOOTFALL_VISIT_GAP_S is 0 here: the loops' passes are a second or two apart, and this
  // test counts passes) are one visit, so there may be fewer visits.
  const sightings = sqliteOf(h.server.store).prepare('select count(*) as n from sightings where company_id = ?').get(o.companyId) as { n: number };
  expect(sightings.n).toBe(o.produced);
  expect(ids.length).toBeLessThanOrEqual(o.produced);
  for (const a of o.arrivals) {
    expect(a).toMatchObject({ site_id: o.shop.site_id, site: o.shop.name, site_slug: o.shop.slug, camera_id: cameraId });
    expect(a.loop).toBeLessThanOrEqual(o.loops);
  }
}

/**
 * Photos: every identified visit has its face crop (the shop PC uploads one per visit), and only identified visits
 * keep one: head office discards the upload of a visit that identified nobody, so the company's image folder holds
 * exactly the identified visits' photos.
 */
function checkPhotos(o: Observed) {
  const identified = o.arrivals.filter((a) => a.visitor_id);
  for (const a of identified) expect(a.image).toMatchObject({ available: true, url: expect.stringMatching(/^\/api\/faces\//) });
  for (const a of o.arrivals.filter((x) => !x.visitor_id)) expect(a.image.available).toBe(false);
  const dir = path.join(h.dataDir, 'images', o.companyId);
  const files = existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jpg')) : [];
  // A sighting that extends a visit keeps its photo too (the customer's newest).
  expect(files.length).toBeGreaterThanOrEqual(identified.length);
  expect(o.uploads).toBeGreaterThanOrEqual(files.length);
}

async function history(o: Observed, visitorId: string): Promise<any[]> {
  const r = await h.request('GET', `/api/visitors/${visitorId}/history`, { token: o.owner });
  expect(r.status).toBe(200);
  return r.body;
}

const byVisitor = (rows: any[]) => {
  const m = new Map<string, any[]>();
  for (const a of rows) if (a.visitor_id) m.set(a.visitor_id, [...(m.get(a.visitor_id) ?? []), a]);
  return m;
};

function describeRows(o: Observed): string {
  const head = `${o.frames} frames (${o.processed} analysed, ${o.faces} faces) over ${o.loops} loops of ${o.loopMs} ms; ms ${JSON.stringify(o.ms)}; ${o.produced} visits, ${o.uploads} face uploads\n`;
  return head + o.arrivals
    .map((a) => `  loop ${a.loop} +${(a.phaseMs / 1000).toFixed(1)}s ${a.visitor_ref ?? '-'}${a.is_new_visitor ? ' new' : ''} sim ${a.similarity} q ${a.quality} photo ${a.image.available}`)
    .join('\n');
}

const stageClip = sharedClip();
if (!stageClip) console.log('chain-e2e: ../shared/faces/short-hamilton-clip.mp4 is absent (or FOOTFALL_SHARED_FACES=off); the stage clip chain is skipped (the registry photo chain still runs)');

// Each chain watches 2 loops in real time (~42 s of the registry clip) between starting and stopping a shop PC with
// the models: measured 73-80 s in all at load average ~25 (start 16-21 s, stop 12-13 s), so 180 s, not 90, is the budget.
describe('the product chain, RTSP camera to head office API', () => {
  it.skipIf(!stageClip)('the stage clip looped: one visit per pass, and the stage person is one returning customer', { timeout: 180_000 }, async () => {
    const loops = 2;
    const o = await watchLoops(stageClip!, loops, { company: 'Hamilton Tours', shop: 'Richard Rodgers', camera: 'stage' });
    report(`chain stage clip: ${describeRows(o)}`);
    checkRows(o, 'stage');
    checkPhotos(o);

    // One visit per pass, not one per frame: recognition saw faces in most frames, yet each loop gives a handful of
    // visits (the clip holds 7 passes of faces at 5 fps: the stage person twice, a third man, and a wide shot of
    // three small faces; 4 of them with a face good enough for an identity), and at least one.
    expect(o.faces).toBeGreaterThan(4 * o.arrivals.length);
    for (let l = 0; l < loops; l++) {
      const rows = o.arrivals.filter((a) => a.loop === l);
      expect(rows.length).toBeGreaterThanOrEqual(1);
      expect(rows.length).toBeLessThanOrEqual(8);
      expect(rows.filter((a) => a.visitor_id).length).toBeLessThanOrEqual(4);
    }
    expect(o.arrivals.length).toBeLessThanOrEqual(8 * loops + 4);

    // The stage person: the customer with the most visits (earliest first on a tie); seen in the first loop,
    // enrolled once, there.
    const customers = [...byVisitor(o.arrivals).entries()].sort((a, b) => b[1].length - a[1].length || a[1][0].occurred_at.localeCompare(b[1][0].occurred_at));
    const [stageId, stageRows] = customers[0]!;
    // (A later loop may show no arrival of his: the loop's cut joins his last pass to his next one when he is seen
    // again within the shop PC's link window, one pass; agent/vision/pipeline.ts.)
    expect(stageRows.filter((a) => a.loop === 0).length).toBeGreaterThanOrEqual(1);
    expect(stageRows.filter((a) => a.is_new_visitor).map((a) => a.loop)).toEqual([0]);

    const hist = await history(o, stageId);
    expect(hist.map((v) => v.id).sort()).toEqual(stageRows.map((a) => a.visit_id).sort());
    expect(hist.filter((v) => v.is_new_visitor)).toHaveLength(1);
    expect(hist.at(-1)!.is_new_visitor).toBe(true); // newest first: the enrolling visit is the oldest
    for (const v of hist.filter((x) => !x.is_new_visitor)) {
      expect(v.similarity).toBeGreaterThanOrEqual(h.server.deps.config.FOOTFALL_BURST_THRESHOLD);
      expect(v.similarity).toBeLessThan(1);
    }
    for (const v of hist) expect(v).toMatchObject({ site_id: o.shop.site_id, site: o.shop.name, site_slug: o.shop.slug, camera_id: 'stage' });
    const visitor = await h.request('GET', `/api/visitors/${stageId}`, { token: o.owner });
    expect(visitor.body).toMatchObject({ id: stageId, visit_count: stageRows.length });
    // The shop PC uploaded the face crops: the customer has a photo.
    expect((await h.request('GET', `/api/visitors/${stageId}/image`, { token: o.owner })).status).toBe(200);
    report(`stage customer ${stageRows[0].visitor_ref}: similarities ${hist.map((v) => v.similarity).join(', ')} (newest first)`);
  });

  // Runs with either ffmpeg. Under load it once lost the last showing's face (0 visits for 1): the vision worker made
  // the four-face showing's visits before analysing the next frame, and the motion gate held the still photo's later
  // frames meanwhile; both fixed in the product (docs/decisions.md, "The registry photo chain under load", issue 26).
  it('registry photos looped: a woman shown twice a loop in two photos is one customer, four others one each', { timeout: 180_000 }, async () => {
    const loops = 2;
    const file = await registryPersonClip();
    const o = await watchLoops(file, loops, { company: 'Registry Bar', shop: 'Sofa Corner', camera: 'entrance' });
    const seen = `chain registry clip: ${describeRows(o)}`;
    report(seen);
    checkRows(o, 'entrance');
    checkPhotos(o);

    const showingMs = (REGISTRY_CLIP.holdS + REGISTRY_CLIP.blankS) * 1000;
    const showing = (a: { phaseMs: number }) => Math.floor(a.phaseMs / showingMs);
    // One visit per face per showing.
    for (let l = 0; l < loops; l++) {
      const rows = o.arrivals.filter((a) => a.loop === l);
      expect(REGISTRY_CLIP.faces.map((_, s) => rows.filter((a) => showing(a) === s).length), seen).toEqual([...REGISTRY_CLIP.faces]);
    }
    expect(o.arrivals).toHaveLength(loops * REGISTRY_CLIP.faces.reduce((a, b) => a + b, 0));
    // Every face passed the gate and is identified.
    for (const a of o.arrivals) expect(a.visitor_id).toBeDefined();

    // W: the woman of the first showing; her second photo and every later showing are her, returning.
    const w = o.arrivals.filter((a) => (REGISTRY_CLIP.w as readonly number[]).includes(showing(a)));
    const wId = w[0].visitor_id;
    expect(w.map((a) => a.visitor_id)).toEqual(w.map(() => wId));
    expect(w.map((a) => a.is_new_visitor)).toEqual(w.map((_, i) => i === 0));
    // Attributes came along (computed once per visit on the shop PC; rough demographics, so only their shape).
    // Gender and expression only where the models are sure enough (agent/vision/attributes.ts): W is a smiling woman.
    for (const a of w) {
      expect(a.attributes).toMatchObject({ age: expect.any(Number) });
      if (a.attributes.gender !== undefined) expect(a.attributes.gender).toBe('female');
      if (a.attributes.emotion !== undefined) expect(a.attributes.emotion).toMatch(/^(happy|neutral)$/);
    }
    // The four others: one customer each, each enrolled once (first loop) and back on every later loop.
    const customers = byVisitor(o.arrivals);
    expect(customers.size).toBe(1 + REGISTRY_CLIP.faces[1]);
    for (const [id, rows] of customers) {
      if (id === wId) continue;
      expect(rows.map((a) => showing(a))).toEqual(rows.map(() => 1));
      expect(rows.map((a) => a.loop)).toEqual([...Array(loops).keys()]);
      expect(rows.map((a) => a.is_new_visitor)).toEqual(rows.map((_, i) => i === 0));
    }
    const threshold = h.server.deps.config.FOOTFALL_MATCH_THRESHOLD;
    for (const a of o.arrivals.filter((x) => !x.is_new_visitor)) expect(a.similarity).toBeGreaterThanOrEqual(threshold);

    const hist = await history(o, wId);
    expect(hist).toHaveLength(2 * loops);
    expect(hist.filter((v) => v.is_new_visitor)).toHaveLength(1);
    expect(hist.at(-1)!.is_new_visitor).toBe(true);
    for (const v of hist) expect(v).toMatchObject({ site_id: o.shop.site_id, site_slug: o.shop.slug, camera_id: 'entrance' });
    const list = await h.request('GET', '/api/visitors?limit=500', { token: o.owner });
    expect(list.body.map((c: any) => c.id).sort()).toEqual([...customers.keys()].sort());
    expect(list.body.find((c: any) => c.id === wId)).toMatchObject({ visit_count: 2 * loops });
    expect((await h.request('GET', `/api/visitors/${wId}/image`, { token: o.owner })).status).toBe(200);
    report(`W ${w[0].visitor_ref}: similarities ${hist.map((v) => v.similarity).join(', ')} (newest first)`);
  });
});
