/**
 * Live view demands and the PC's clock: a camera worker of the real capture manager (its ffmpeg finds nothing on a
 * closed port, so no picture comes), head office out of reach. The wall clock is turned back as an NTP correction
 * does on a shop PC whose clock ran ahead.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CaptureManager } from '../capture/manager.js';
import { AgentApi } from './http.js';
import { LiveRelay } from './live.js';
import { closedPort } from '../../test/support/ports.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  vi.useRealTimers();
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const CAMERA = '0b9e5a1c-2d3f-4a5b-8c7d-9e0f1a2b3c4d';

describe('live view', () => {
  it('a demand ends when its time is up, even when the wall clock is turned back meanwhile', async () => {
    const capture = new CaptureManager({ log });
    cleanups.push(() => capture.stopAll());
    const port = await closedPort();
    await capture.apply([{ id: CAMERA, camera_id: 'entrance', host: '127.0.0.1', port, path: '/cam', username: '', password: '', max_width: 640, enabled: true, revision: 1 }]);
    const relay = new LiveRelay({ api: new AgentApi({ serverUrl: `http://127.0.0.1:${port}`, token: 'ffs_x' }), capture, log });
    cleanups.push(() => relay.close());

    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const at = new Date();
    relay.onDemand({ kind: 'live', camera: CAMERA, camera_id: 'entrance', watch: true, at: at.toISOString(), until: new Date(at.getTime() + 300).toISOString() });
    expect(relay.stats.active).toEqual(['entrance']);
    vi.setSystemTime(at.getTime() - 3_600_000); // an hour back
    await new Promise((r) => setTimeout(r, 1200));
    expect(relay.stats.active).toEqual([]);
  });
});
