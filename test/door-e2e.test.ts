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
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOOR_LINE, DOOR_VIDEO, doorTruth, ensureDoorVideo } from '../agent/fixtures/door-video.js';
import { ensureTestBodyModels } from '../agent/models/test-cache.js';
import { clipBase, onClip, timeline, useDoorRig } from './support/door-rig.js';
import { zoneAwayFromMidnight } from './support/visits.js';
import { useCameraSlot } from './support/camera-slot.js';

const report = (...args: unknown[]) => {
  if (process.env.FOOTFALL_TEST_TIMING) console.log(...args);
};
const FPS = 5;

// Real-time counting: one such file at a time (test/support/camera-slot.ts).
useCameraSlot();
const rig = useDoorRig({ name: 'door', prepare: () => [ensureTestBodyModels(), ensureDoorVideo()] });

describe('door counting on video: entries, exits and occupancy', () => {
  it('counts entries and exits within one of the truth with recognition off and no face models, and head office agrees', { timeout: 180_000 }, async () => {
    const { h } = rig;
    const { video } = await ensureDoorVideo();
    const truth = doorTruth();
    const trueIn = truth.filter((c) => c.direction === 'in').length;
    const trueOut = truth.length - trueIn;
    const started = Date.now();
    // The shop's "today" holds the whole video: a zone where it is not near midnight (at 00:00 UTC a shop in UTC
    // once had 3 of its 7 entries today and the rest yesterday).
    const zone = zoneAwayFromMidnight();
    // Recognition switched off: no face models are looked for.
    const pc = await rig.shopPc({ company: 'Door Co', shop: { name: 'Market Street', timezone: zone }, file: video, mounts: ['/door'], recognition: false });
    const { owner, shop, runtime } = pc;
    // The shop PC's own models folder holds the person model and no face models.
    expect(existsSync(path.join(pc.dataDir, 'models', 'manifest.json'))).toBe(false);
    expect(runtime.recognition.running).toBe(false);

    // The camera with its counting line, as the console sends it.
    const frames = pc.frames('door');
    const camera = await pc.addCamera({ camera_id: 'door', path: '/door', max_width: 640, tuning: { detect_fps: FPS, line: DOOR_LINE } });
    expect(camera.tuning.line).toEqual(DOOR_LINE);
    const { runs } = await pc.oneRun(camera, frames, { durationS: DOOR_VIDEO.durationS, fps: FPS, timeoutMs: 100_000 });
    const doorStats = runtime.doors.stats().door!;
    const detector = runtime.doors.detectorName;
    await pc.stop();
    frames.untap();
    const queued = runtime.crossings.stats;
    expect(runs).toBe(1);
    expect(detector).toBeDefined();

    const seen = onClip(rig.crossings, clipBase(frames.at, FPS));
    report(
      `door e2e (${detector}): ${queued.in} in / ${queued.out} out queued, truth ${trueIn} / ${trueOut}; ${JSON.stringify(doorStats)}; ${Date.now() - started} ms\n` +
        `  counted ${timeline(seen)}\n  truth   ${timeline(truth)}`,
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
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date());
    const r = await h.request('GET', `/api/reports/footfall?from=${day}&to=${day}&tz=${encodeURIComponent(zone)}&site=${shop.slug}`, { token: owner });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ entries, exits, capture_rate: 0 });
    expect(r.body.points.reduce((n: number, p: any) => n + p.entries, 0)).toBe(entries);
    expect(r.body.points.reduce((n: number, p: any) => n + p.exits, 0)).toBe(exits);
  });
});
