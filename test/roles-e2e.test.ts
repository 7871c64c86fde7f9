/**
 * Camera roles end to end with real parts (issue 25, docs/shops-and-cameras.md "Camera roles"): the door video
 * (agent/fixtures/door-video.ts: people crossing a doorway, most of them showing their face) looped by a real RTSP
 * server on 127.0.0.1 under two mounts; an enrolled shop PC (the agent runtime in-process: ffmpeg capture, the real
 * face models and person detector, the disk queue, MQTT QoS 1); head office in-process. Two cameras on it, both with
 * the same counting line: `door` (role door: count only) and `entrance` (role faces: recognition only, its line kept
 * but unused).
 *
 * Asserted: the door camera adds entries and exits and no visitor (no visit message names it; head office stores
 * none); the faces camera adds visitors and no entry; GET /api/cameras shows the door camera's counting health from
 * the shop PC's heartbeat (people counted in the last hour, last crossing, the detector's frames) and none for the
 * faces camera; the footfall report's entries are the door camera's.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DOOR_LINE, ensureDoorVideo } from '../agent/fixtures/door-video.js';
import { ensureTestBodyModels, ensureTestModels } from '../agent/models/test-cache.js';
import { useDoorRig } from './support/door-rig.js';
import { waitFor } from './support/shop-pc.js';
import { zoneAwayFromMidnight } from './support/visits.js';
import { useCameraSlot } from './support/camera-slot.js';
import { visits } from '../server/db/tables.js';

// Real-time counting: one such file at a time (test/support/camera-slot.ts).
useCameraSlot();
const rig = useDoorRig({ name: 'roles', prepare: () => [ensureTestModels().then(() => ensureTestBodyModels()), ensureDoorVideo()] });

describe('camera roles: a door camera counts, a faces camera recognises', () => {
  it('a door-only camera adds entries and exits and no visitors; its counting health shows in GET /api/cameras', { timeout: 150_000 }, async () => {
    const { h, crossings: crossingsSent, visits: visitsSent } = rig;
    const { video } = await ensureDoorVideo();
    // The shop's "today" holds every crossing of the run: a zone where it is not near midnight (in UTC, a run
    // straddling 00:00 UTC would put some entries yesterday and the report below would rightly miss them).
    const zone = zoneAwayFromMidnight();
    const pc = await rig.shopPc({
      company: 'Roles E2E',
      shop: { name: 'Linking Road', timezone: zone },
      file: video,
      mounts: ['/door', '/entrance'],
      recognition: true,
      timing: { heartbeat_interval_s: 1 },
    });
    const { owner, shop, runtime } = pc;
    expect(runtime.recognition.running).toBe(true);

    const door = await pc.addCamera({ camera_id: 'door', path: '/door', max_width: 640, tuning: { detect_fps: 5, line: DOOR_LINE, role: 'door' } });
    const entrance = await pc.addCamera({ camera_id: 'entrance', path: '/entrance', max_width: 640, tuning: { detect_fps: 5, line: DOOR_LINE, role: 'faces' } });
    expect([door.tuning.role, entrance.tuning.role]).toEqual(['door', 'faces']);

    // People cross the door (four entries in the video's first 16 s) and show their faces to the entrance camera.
    // Three entries, whichever pass of the looping video they come from (a busy machine may make the detector miss one).
    await waitFor(() => crossingsSent.filter((c) => c.direction === 'in').length >= 3 && visitsSent.length >= 1, 90_000, 200);
    const health = await waitFor(async () => {
      const list = (await h.request('GET', '/api/cameras', { token: owner })).body as any[];
      const d = list.find((c) => c.camera_id === 'door');
      return d?.counting?.stats?.analysed > 0 && d.counting.counted_last_hour >= 3 ? list : undefined;
    }, 20_000, 250).then((x) => x!);
    const doorStats = runtime.doors.stats();
    await pc.stop();
    await h.server.ingest.drained();

    // The door camera: entries and exits, no visitor. The faces camera: visitors, no entry although it has a line.
    expect(crossingsSent.every((c) => c.camera_id === 'door')).toBe(true);
    expect(crossingsSent.filter((c) => c.direction === 'in').length).toBeGreaterThanOrEqual(3);
    expect(visitsSent.map((v) => v.camera_id)).not.toContain('door');
    expect(visitsSent.length).toBeGreaterThanOrEqual(1);
    expect(Object.keys(doorStats)).toEqual(['door']);
    const stored = await h.server.store.db.select({ cameraId: visits.cameraId }).from(visits).where(eq(visits.shopId, shop.site_id));
    expect(stored.length).toBeGreaterThanOrEqual(1);
    expect(stored.filter((v) => v.cameraId === 'door')).toEqual([]);

    // Counting health, per door camera: what the last hour counted, the last crossing, the detector's frames.
    const byId = Object.fromEntries(health.map((c: any) => [c.camera_id, c]));
    expect(byId.entrance.counting).toBeNull();
    expect(byId.door.counting).toMatchObject({ role: 'door', problem: expect.toSatisfy((p: string | null) => p === null || /drops/.test(p)) });
    expect(byId.door.counting.state).toBe('counting');
    expect(byId.door.counting.last_crossing_at).toEqual(expect.any(String));
    expect(typeof byId.door.counting.detector_keeps_up).toBe('boolean');
    expect(byId.door.counting.stats.frames).toBeGreaterThan(0);

    // The footfall report's entries are the door camera's.
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date());
    const r = await h.request('GET', `/api/reports/footfall?from=${day}&to=${day}&tz=${encodeURIComponent(zone)}&site=${shop.slug}`, { token: owner });
    expect(r.status).toBe(200);
    const ids = new Set(crossingsSent.map((c) => c.crossing_id));
    expect(r.body.entries).toBe([...ids].filter((id) => crossingsSent.find((c) => c.crossing_id === id)!.direction === 'in').length);
  });
});
