/**
 * Counting people, not face tracks, end to end with real parts: the counting video (agent/fixtures/counting-video.ts,
 * 60 s from registry photos: three customers who stay 20-30 s turning away three times each, one of them back
 * later at another place, staff passing five times) looped by a real RTSP server on 127.0.0.1; an enrolled shop PC
 * (the agent runtime in-process: ffmpeg capture, the real models, queue, MQTT QoS 1); head office in-process with
 * FOOTFALL_VISIT_GAP_S=5 (the video's stays are 9 s or more apart). The staff member is marked as staff
 * (PATCH /api/visitors/{id}) as soon as their first visit shows, as a manager would.
 *
 * Asserted through the public API: exactly one arrival per customer stay (A twice: new, then returning; B and C
 * once, new), no arrival of the staff member (their first, shown before marking, is gone too: marking is
 * retroactive), no unidentified arrival, four customers of whom one is staff, and a footfall report that counts
 * three people and four visits.
 */
import { describe, expect, it } from 'vitest';
import { COUNTING_SCRIPT, COUNTING_VIDEO, ensureCountingVideo, trueStays } from '../agent/fixtures/counting-video.js';
import { ensureTestModels } from '../agent/models/test-cache.js';
import type { VisionRecognition } from '../agent/runtime/recognition.js';
import type { Visit } from '../agent/vision/types.js';
import { clipBase, useDoorRig } from './support/door-rig.js';
import { waitFor } from './support/shop-pc.js';
import { zoneAwayFromMidnight } from './support/visits.js';
import { useCameraSlot } from './support/camera-slot.js';

const report = (...args: unknown[]) => {
  if (process.env.FOOTFALL_TEST_TIMING) console.log(...args);
};
const FPS = 5;

// Real-time counting: one such file at a time (test/support/camera-slot.ts).
useCameraSlot();
const rig = useDoorRig({ name: 'counting', env: { FOOTFALL_VISIT_GAP_S: 5 }, prepare: () => [ensureTestModels(), ensureCountingVideo()] });

/** Which stay of which person began at stream second `t` (a visit's occurred_at is its first sighting). */
function stayAt(t: number): { person: string; stay: number } | undefined {
  let best: { person: string; stay: number; d: number } | undefined;
  for (const p of COUNTING_SCRIPT) {
    p.stays.forEach((s, i) => {
      const d = Math.abs(s.from - t);
      if (d <= 1.5 && (!best || d < best.d)) best = { person: p.id, stay: i, d };
    });
  }
  return best && { person: best.person, stay: best.stay };
}

/** A true stay (trueStays) that stream second `t` falls in, from its start to its end, within 1.5 s (stays overlap). */
function stayDuring(t: number): ReturnType<typeof trueStays>[number] | undefined {
  return STAYS.find((s) => t >= s.from - 1.5 && t <= s.to + 1.5);
}
const STAYS = trueStays();

describe('counting on video: one arrival per stay, staff left out', () => {
  it('counts each customer stay once through turning away and returning, and never the staff member once marked', { timeout: 150_000 }, async () => {
    const { video } = await ensureCountingVideo();
    const started = Date.now();
    // The footfall report below is of the day the whole run falls on: a zone where it is not near midnight (a day
    // of UTC would, at 00:00 UTC, hold only the visits after midnight).
    const zone = zoneAwayFromMidnight();
    const pc = await rig.shopPc({ company: 'Counting Co', shop: { name: 'High Street', timezone: zone }, file: video, mounts: ['/counter'], recognition: true });
    const { h } = rig;
    const { owner, shop, runtime } = pc;
    const frames = pc.frames('counter');
    // Every visit the shop PC makes, as it makes it (the runtime's own listener queues it for head office).
    const made: Visit[] = [];
    runtime.recognition.on('visit', (v: Visit) => made.push(v));
    const camera = await pc.addCamera({ camera_id: 'counter', path: '/counter', max_width: 640, tuning: { detect_fps: FPS } });
    await waitFor(() => frames.at.length > 0, 20_000, 50);

    const feed = async (): Promise<any[]> => {
      const r = await h.request('GET', `/api/visits?limit=1000&site=${shop.slug}`, { token: owner });
      expect(r.status).toBe(200);
      return r.body.arrivals as any[];
    };
    // The first person in the video is the staff member: a manager marks them as soon as their visit shows.
    const first = await waitFor(async () => (await feed())[0], 30_000, 200);
    expect(first.visitor_id).toBeDefined();
    const marked = await h.request('PATCH', `/api/visitors/${first.visitor_id}`, { token: owner, body: { staff: true } });
    expect(marked.status).toBe(200);
    expect(marked.body).toMatchObject({ id: first.visitor_id, staff: true });
    const markedAt = Date.now() - started;

    // One whole run of the video.
    const { runs } = await pc.oneRun(camera, frames, { durationS: COUNTING_VIDEO.durationS, fps: FPS, timeoutMs: 90_000 });
    await pc.stop();
    frames.untap();
    const produced = runtime.visits.stats.queued;
    expect(runs).toBe(1);
    await h.server.ingest.drained();

    const base = clipBase(frames.at, FPS);
    const since = (iso: string) => (Date.parse(iso) - base) / 1000;
    const arrivals = (await feed()).map((a) => ({ ...a, t: since(a.occurred_at) }));
    arrivals.sort((a, b) => a.t - b.t);
    const vision = (runtime.recognition as VisionRecognition).pipeline.stats();
    const stats = { frames_received: vision.frames_received, frames_processed: vision.frames_processed, frames_dropped: vision.frames_dropped, tracks_discarded: vision.tracks_discarded };
    const seen =
      `counting e2e: ${produced} visits from the shop PC, staff marked at ${markedAt} ms, ${Date.now() - started} ms in all; ` +
      `recognition ${JSON.stringify(stats)}\n` +
      arrivals.map((a) => `  ${a.t.toFixed(1)} s ${a.visitor_ref ?? 'unidentified'}${a.is_new_visitor ? ' new' : ''} -> ${JSON.stringify(stayAt(a.t))}`).join('\n') +
      '\nvisits made by the shop PC (first - last sighting, video seconds):\n' +
      made.map((v) => `  ${since(v.track.first_seen_at).toFixed(1)} - ${since(v.track.last_seen_at).toFixed(1)} s, ${v.track.frames} frames -> ${JSON.stringify(stayAt(since(v.track.first_seen_at)) ?? 'mid-stay')}`).join('\n');
    report(seen);

    // The shop PC made a visit for every true stay (it cannot know staff): 5 staff passes, A twice, B, C, each
    // beginning when its stay does. One more may come: on a starved CI box a track once broke in two mid-stay (10 visits
    // for 9 stays), and head office joins the pieces into one stay (FOOTFALL_VISIT_GAP_S), as the arrivals below show;
    // such a piece still lies inside a true stay. (What the shop PC made is in the message: a failure says which stay
    // was split or missed.)
    expect(made.length, seen).toBe(produced);
    const began = made.map((v) => stayAt(since(v.track.first_seen_at)));
    for (const st of STAYS) expect(began.some((b) => b?.person === st.person && b.stay === st.stay), `${seen}\nno visit began ${st.person}'s stay ${st.stay}`).toBe(true);
    expect(produced, seen).toBeLessThanOrEqual(STAYS.length + 1);
    for (const v of made) expect(stayDuring(since(v.track.first_seen_at)), seen).toBeDefined();

    // Every arrival is a stay's beginning, identified: no unidentified extras, no duplicates.
    const placed = arrivals.map((a) => ({ a, at: stayAt(a.t) }));
    for (const { a, at } of placed) {
      expect(at, `arrival at ${a.t.toFixed(1)} s`).toBeDefined();
      expect(a.visitor_id).toBeDefined();
    }
    const keys = placed.map((p) => `${p.at!.person}#${p.at!.stay}`);
    expect(new Set(keys).size).toBe(keys.length);
    const of = (person: string) => placed.filter((p) => p.at!.person === person).map((p) => p.a);
    // Staff: none, not even the first pass (shown before marking): marking is retroactive.
    expect(of('staff')).toEqual([]);
    expect(first.t ?? since(first.occurred_at)).toBeLessThan(COUNTING_SCRIPT[0]!.stays[0]!.to);
    // A: two stays, one customer, new then returning; B and C once each, new.
    const a = of('A');
    expect(a).toHaveLength(2);
    expect(a[1].visitor_id).toBe(a[0].visitor_id);
    expect(a.map((x) => x.is_new_visitor)).toEqual([true, false]);
    for (const p of ['B', 'C']) {
      expect(of(p)).toHaveLength(1);
      expect(of(p)[0].is_new_visitor).toBe(true);
    }
    // Each arrival's dwell is its stay (first to last sighting, through the turning away): within 2 s.
    for (const { a: arrival, at } of placed) {
      const stay = COUNTING_SCRIPT.find((p) => p.id === at!.person)!.stays[at!.stay]!;
      expect(Math.abs(arrival.dwell_s - (stay.to - stay.from)), `dwell of ${at!.person} stay ${at!.stay}: ${arrival.dwell_s} s`).toBeLessThanOrEqual(2);
    }
    const ids = new Set([first.visitor_id, a[0].visitor_id, of('B')[0].visitor_id, of('C')[0].visitor_id]);
    expect(ids.size).toBe(4);

    // Four customers, one of them staff.
    const customers = await h.request('GET', '/api/visitors?limit=500', { token: owner });
    expect(customers.body.map((c: any) => c.id).sort()).toEqual([...ids].sort());
    const staff = await h.request('GET', '/api/visitors?staff=true', { token: owner });
    expect(staff.body.map((c: any) => c.id)).toEqual([first.visitor_id]);

    // Footfall: three people, four visits, three of them new; staff left out (their first visit too).
    // A's two stays: the dwell of each is most of the stay (first to last sighting).
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date());
    const r = await h.request('GET', `/api/reports/footfall?from=${day}&to=${day}&tz=${encodeURIComponent(zone)}&site=${shop.slug}`, { token: owner });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ total: 3, visits: 4 });
    expect(r.body.points.reduce((n: number, p: any) => n + p.new, 0)).toBe(3);
    const trueDwell = COUNTING_SCRIPT.filter((p) => p.role === 'customer').flatMap((p) => p.stays.map((x) => x.to - x.from));
    expect(Math.abs(r.body.average_dwell_s - trueDwell.reduce((x, y) => x + y, 0) / trueDwell.length)).toBeLessThanOrEqual(2);
  });
});
