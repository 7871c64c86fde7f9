/**
 * Counting at the door on REAL footage, end to end with real parts (issue 25): one committed clip of the real set
 * (bench/real-footage/clips.json, `table-walkup-1`: 47 s of intel-iot-devkit's one-by-one-person-detection, CC BY
 * 4.0, 768x432 10 fps, two people one at a time, each leaving across the line) played once by a real RTSP server on
 * 127.0.0.1; an enrolled shop PC (the agent runtime in-process: ffmpeg capture at the camera's default detect_fps, the
 * real person detector, tracker and line with the agent's default door_fps, the disk queue, MQTT QoS 1) with face
 * recognition off and only the person model; head office in-process, the camera added with the clip's line through
 * the API (tuning.line), as the console does.
 *
 * Asserted, the target against the clip's hand labels (the reconciled labels/<id>.json when there is one,
 * else labeller a's): entries and exits each within 5 % of the truth, within one where the truth is under 20; false
 * crossings (counted ones with no true crossing of their direction within 1.5 s, matched one to one) at most 2 % of
 * the truth; head office stored what the shop PC sent.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNING } from '../shared/agent-api.js';
import { ensureTestBodyModels } from '../agent/models/test-cache.js';
import { loadClips, matchCrossings, truthFor } from '../bench/real-footage/clips.js';
import { clipBase, onClip, timeline, useDoorRig } from './support/door-rig.js';
import { useCameraSlot } from './support/camera-slot.js';

const CLIP_ID = 'table-walkup-1';
const FPS = DEFAULT_TUNING.detect_fps;

/** The tolerance on a count: 5 % of the truth, at least one. */
const countTolerance = (truth: number) => Math.max(1, Math.floor(0.05 * truth));

// Real-time counting: one such file at a time (test/support/camera-slot.ts).
useCameraSlot();
const rig = useDoorRig({ name: 'door-real', prepare: () => [ensureTestBodyModels()] });

describe('door counting on real footage', () => {
  it(`counts ${CLIP_ID} within the issue's tolerance of its hand labels`, { timeout: 150_000 }, async () => {
    const { h } = rig;
    const clip = loadClips().find((c) => c.id === CLIP_ID)!;
    const { labels, which } = truthFor(CLIP_ID)!;
    const truth = labels.crossings;
    const trueIn = truth.filter((c) => c.direction === 'in').length;
    const trueOut = truth.length - trueIn;

    const playing: [string, number][] = [];
    const pc = await rig.shopPc({
      company: 'Real Door Co',
      shop: { name: 'Real Street', timezone: 'UTC' },
      file: clip.file,
      mounts: ['/door'],
      onPlaying: (mount, at) => void playing.push([mount, at]),
      recognition: false,
    });
    const { runtime } = pc;

    // The camera with the clip's counting line and otherwise the product's defaults, as the console sends it.
    const frames = pc.frames('door');
    const camera = await pc.addCamera({ camera_id: 'door', path: '/door', max_width: clip.width, tuning: { line: clip.line } });
    expect(camera.tuning.line).toEqual(clip.line);
    // One whole run of the clip (it starts and ends with nobody in view).
    const { runs } = await pc.oneRun(camera, frames, { durationS: clip.duration_s, fps: FPS, timeoutMs: 110_000 });
    const detector = runtime.doors.detectorName;
    // What the door counter did with the frames (printed with the result: a miss says whether the detector saw them).
    const doorStats = runtime.doors.stats().door;
    await pc.stop();
    frames.untap();
    const queued = runtime.crossings.stats;
    expect(runs).toBe(1);
    expect(detector).toBeDefined();

    // Clip time of a crossing: frame n of the run is n / FPS s into the clip.
    const base = clipBase(frames.at, FPS);
    // The server's clip time 0 (what bench door-real times crossings from) is one moment per stream, before frame 0
    // reached the agent: the stream's latency (base - that moment) is positive and under the first-frame timeout.
    expect(playing.map(([m]) => m)).toEqual(['/door']);
    expect(base - playing[0]![1]).toBeGreaterThan(0);
    expect(base - playing[0]![1]).toBeLessThan(8000);
    const seen = onClip(rig.crossings, base);
    const { pairs, onlyA: missed, onlyB: falses } = matchCrossings(truth, seen, 1.5);
    const entries = seen.filter((c) => c.direction === 'in').length;
    const exits = seen.length - entries;
    const summary =
      `${CLIP_ID} (${detector}, truth ${which}): counted ${entries} in / ${exits} out, truth ${trueIn} / ${trueOut}; ` +
      `${pairs.length} matched, ${missed.length} missed, ${falses.length} false\n` +
      `  door counter: ${JSON.stringify(doorStats)}\n` +
      `  counted ${timeline(seen) || '-'}\n  truth   ${timeline(truth)}`;
    console.log(summary);

    expect(queued).toMatchObject({ in: entries, out: exits, invalid: 0 });
    expect(h.server.crossings.stats.stored).toBe(seen.length);
    expect(Math.abs(entries - trueIn), `entries: ${summary}`).toBeLessThanOrEqual(countTolerance(trueIn));
    expect(Math.abs(exits - trueOut), `exits: ${summary}`).toBeLessThanOrEqual(countTolerance(trueOut));
    expect(falses.length, `false crossings: ${summary}`).toBeLessThanOrEqual(Math.floor(0.02 * truth.length));
  });
});
