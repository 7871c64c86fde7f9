/**
 * Capture against a real RTSP server (test/support/rtsp.ts, 127.0.0.1) with the ffmpeg the agent resolves (ffmpeg-bin.ts): pictures at the detect rate and
 * size, readable reasons for a wrong password, a wrong path and a dead port, reconnection after the server comes
 * back, and no ffmpeg left behind.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatedClip } from '../../test/support/clips.js';
import { startRtspServer, type RtspServer } from '../../test/support/rtsp.js';
import { toJpeg, type Frame } from './frame.js';
import { grabFrame } from './grab.js';
import { CaptureManager, type CameraSpec } from './manager.js';
import { decodeArgs, hasCredentials } from './ffmpeg.js';
import { rtspUrl, type CameraSource } from './source.js';
import { CameraWorker, type CameraState, type CameraWorkerOptions } from './worker.js';
import { closedPort } from '../../test/support/ports.js';

const USER = 'admin';
const PASSWORD = 'pa:ss w0rd/@';

let clip: string;
let rtsp: RtspServer;

beforeAll(async () => {
  clip = await generatedClip();
  rtsp = await startRtspServer({ file: clip, mounts: ['/cam1', '/cam2'], user: USER, password: PASSWORD });
});

afterAll(async () => {
  await rtsp?.stop();
});

function source(path: string, password = PASSWORD, port = rtsp.port): CameraSource {
  return { host: '127.0.0.1', port, path, username: USER, password };
}

/** Fast timings for tests: short backoff and watchdogs. */
const quick: Partial<CameraWorkerOptions> = {
  backoff: { initialMs: 200, maxMs: 1000 },
  firstFrameTimeoutMs: 8000,
  stallTimeoutMs: 3000,
  stopGraceMs: 1000,
};

async function until<T>(what: string, fn: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The command line of process `pid` (via /proc), or undefined once it is gone. */
function commandLine(pid: number | string): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

/** ffmpeg processes opening a URL that contains `fragment`: on their command line, or in the stream script they were given. */
function ffmpegProcesses(fragment: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = commandLine(name);
    if (!cmd?.[0]?.endsWith('ffmpeg')) continue;
    const scripts = cmd.filter((a) => a.endsWith('.ffconcat')).map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : ''));
    if ([...cmd, ...scripts].some((a) => a.includes(fragment))) pids.push(Number(name));
  }
  return pids;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A pino logger writing into an array, to check what gets logged. */
function memoryLog(): { log: pino.Logger; text: () => string } {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(s) });
  return { log, text: () => lines.join('') };
}

describe('CameraWorker', () => {
  it('delivers pictures at the detect rate, scaled to max_width, and stop() leaves no ffmpeg', async () => {
    const frames: Frame[] = [];
    const states: CameraState[] = [];
    const worker = new CameraWorker({ ...quick, id: 'u1', cameraId: 'entrance', source: source('/cam1'), maxWidth: 320, fps: 5, consumer: (f) => frames.push(f) });
    worker.on('state', (s) => states.push(s));
    worker.start();
    try {
      await until('connected', () => worker.state.connected);
      expect(worker.state).toMatchObject({ connected: true, code: 'ok' });
      expect(worker.state.reason).toBeUndefined();

      // Rate: count what arrives in 3 s once the stream has settled (the first second may come in a burst).
      // Over the time that really passed: a loaded machine can wake the test late.
      await new Promise((r) => setTimeout(r, 1000));
      const [from, t0] = [frames.length, performance.now()];
      await new Promise((r) => setTimeout(r, 3000));
      const rate = (frames.length - from) / ((performance.now() - t0) / 1000);
      expect(rate).toBeGreaterThanOrEqual(3.7);
      expect(rate).toBeLessThanOrEqual(6.3);

      const frame = frames.at(-1)!;
      expect(frame).toMatchObject({ cameraId: 'entrance', width: 320, height: 180 });
      expect(frame.data.length).toBe(320 * 180 * 3);
      expect(frame.at).toBeInstanceOf(Date);
      expect(worker.latest()).toBe(frame);

      const jpeg = await toJpeg(frame);
      expect(jpeg.subarray(0, 2).toString('hex')).toBe('ffd8');
      expect(await sharp(jpeg).metadata()).toMatchObject({ format: 'jpeg', width: 640, height: 360 });
    } finally {
      const pid = worker.pid!;
      expect(pid).toBeGreaterThan(0);
      await worker.stop();
      expect(alive(pid)).toBe(false);
      expect(ffmpegProcesses(`:${rtsp.port}/cam1`)).toEqual([]);
      expect(worker.pid).toBeUndefined();
    }
    expect(states.map((s) => s.connected)).toEqual([true]);
  });

  it('keeps the camera password off ffmpeg\'s command line (any local user can read that): a 0600 script in a 0700 folder, gone with ffmpeg', async () => {
    const worker = new CameraWorker({ ...quick, id: 'u-cmd', cameraId: 'entrance', source: source('/cam1'), maxWidth: 320, fps: 5, consumer: () => {} });
    worker.start();
    let script = '';
    try {
      await until('connected', () => worker.state.connected);
      const cmd = commandLine(worker.pid!)!;
      expect(cmd.join(' ')).not.toContain(encodeURIComponent(PASSWORD));
      expect(cmd.join(' ')).not.toContain(`${rtsp.port}/cam1`);
      script = cmd[cmd.indexOf('-i') + 1]!;
      expect(script).toMatch(/footfall-cam-[^/]+\/1\.ffconcat$/);
      expect(statSync(script).mode & 0o777).toBe(0o600);
      expect(statSync(dirname(script)).mode & 0o777).toBe(0o700);
      expect(readFileSync(script, 'utf8')).toContain(`:${encodeURIComponent(PASSWORD)}@127.0.0.1:${rtsp.port}/cam1`);
    } finally {
      await worker.stop();
    }
    expect(existsSync(script)).toBe(false);
    // Without a password there is nothing to hide: the URL goes on the command line as before.
    expect(decodeArgs(rtspUrl({ host: 'cam.lan', port: 554, path: '/live' }), { fps: 5, maxWidth: 640 })).toContain('rtsp://cam.lan:554/live');
    expect(hasCredentials(rtspUrl(source('/cam1')))).toBe(true);
  });

  it('a wrong password: not connected, "wrong password", and the password is never logged', async () => {
    const { log, text } = memoryLog();
    const secret = 'not-the-password';
    const worker = new CameraWorker({ ...quick, id: 'u2', cameraId: 'till', source: source('/cam1', secret), maxWidth: 320, log });
    worker.start();
    try {
      const state = await until('a reason', () => (worker.state.code !== 'connecting' ? worker.state : undefined));
      expect(state).toMatchObject({ connected: false, code: 'auth_failed', reason: 'wrong password' });
      expect(state.since).toBeInstanceOf(Date);
    } finally {
      await worker.stop();
    }
    expect(text()).toContain('wrong password');
    expect(text()).toContain('***');
    expect(text()).not.toContain(secret);
    expect(text()).not.toContain(encodeURIComponent(secret));
  });

  it('a wrong path: "stream path not found"', async () => {
    const worker = new CameraWorker({ ...quick, id: 'u3', cameraId: 'back', source: source('/no-such-stream'), maxWidth: 320 });
    worker.start();
    try {
      const state = await until('a reason', () => (worker.state.code !== 'connecting' ? worker.state : undefined));
      expect(state).toMatchObject({ connected: false, code: 'no_stream', reason: 'stream path not found' });
    } finally {
      await worker.stop();
    }
  });

  it('nothing listening: "connection refused", and it keeps retrying', async () => {
    const port = await closedPort();
    const worker = new CameraWorker({ ...quick, id: 'u4', cameraId: 'side', source: source('/cam1', PASSWORD, port), maxWidth: 320 });
    worker.start();
    try {
      const state = await until('a reason', () => (worker.state.code !== 'connecting' ? worker.state : undefined));
      expect(state).toMatchObject({ connected: false, code: 'unreachable', reason: 'connection refused' });
      await until('a retry', () => worker.stats.runs >= 3, 5000);
      expect(worker.state.since).toBe(state.since); // same failure: same state, no new event
    } finally {
      await worker.stop();
    }
    expect(ffmpegProcesses(`:${port}/`)).toEqual([]);
  });

  it('reconnects when a server that went away mid-stream comes back', async () => {
    let server = await startRtspServer({ file: clip, mounts: ['/live'] });
    const port = server.port;
    const states: CameraState[] = [];
    let frames = 0;
    const worker = new CameraWorker({
      ...quick,
      id: 'u5',
      cameraId: 'door',
      source: { host: '127.0.0.1', port, path: '/live' },
      maxWidth: 320,
      consumer: () => frames++,
    });
    worker.on('state', (s) => states.push(s));
    worker.start();
    try {
      await until('connected', () => worker.state.connected);
      await until('pictures', () => frames >= 3);
      await server.stop();
      const down = await until('disconnected', () => (!worker.state.connected ? worker.state : undefined), 10_000);
      expect(down.reason).toMatch(/camera closed the connection|connection refused|camera stopped sending pictures/);
      await until('a failed retry', () => worker.state.reason === 'connection refused', 10_000);

      server = await startRtspServer({ file: clip, mounts: ['/live'], port });
      const before = frames;
      await until('reconnected', () => worker.state.connected, 15_000);
      await until('pictures again', () => frames > before + 2, 5000);
      const connected = states.map((s) => s.connected);
      expect(connected[0]).toBe(true);
      expect(connected.at(-1)).toBe(true);
      expect(connected.slice(1, -1)).toEqual(connected.slice(1, -1).map(() => false));
      expect(connected.length).toBeGreaterThanOrEqual(3);
    } finally {
      await worker.stop();
      await server.stop();
    }
    expect(ffmpegProcesses(`:${port}/live`)).toEqual([]);
  });

  it('live view raises the decode rate while watched; the consumer keeps the detect rate', async () => {
    const detected = new Set<Frame>();
    const worker = new CameraWorker({ ...quick, id: 'u6', cameraId: 'hall', source: source('/cam2'), maxWidth: 320, fps: 5, consumer: (f) => detected.add(f) });
    worker.start();
    try {
      await until('connected', () => worker.state.connected);
      expect(worker.stats.fps).toBe(5);
      const live: Frame[] = [];
      const unwatch = worker.watchLive((f) => live.push(f));
      await until('the live rate', () => worker.stats.fps === 13 && live.length > 0, 10_000);
      await new Promise((r) => setTimeout(r, 500));
      const [l0, t0] = [live.length, performance.now()];
      await new Promise((r) => setTimeout(r, 4000));
      const s = (performance.now() - t0) / 1000;
      const window = live.slice(l0);
      // Live near 13 a second (a loaded 2-core machine delays single frames, not the rate), divided by the time that
      // really passed.
      expect(window.length / s).toBeGreaterThanOrEqual(8);
      // The consumer gets a subset of the live pictures: never more than its 5 a second (one per 200-ms slot, plus the
      // window's two edges) ...
      const mine = window.filter((f) => detected.has(f));
      expect(mine.length).toBeLessThanOrEqual(5 * s + 2);
      // ... and never fewer than the pictures ffmpeg delivered allow: every picture that comes 200 ms or more after the
      // consumer's last one goes to the consumer. This holds however late ffmpeg's pictures come on a loaded machine,
      // where a rate floor measured over 4 s did not (2.25 a second once, under a load average of 5).
      let last = live.slice(0, l0).findLast((f) => detected.has(f))?.at.getTime();
      let due = 0;
      for (const f of window) {
        const t = f.at.getTime();
        if (last !== undefined && t - last >= 200) {
          due++;
          expect(detected.has(f), `a picture ${t - last} ms after the consumer's last`).toBe(true);
        }
        if (detected.has(f)) last = t;
      }
      expect(due).toBeGreaterThan(0);
      expect(mine.length / s).toBeGreaterThanOrEqual(1);
      unwatch();
      await until('the detect rate again', () => worker.stats.fps === 5, 10_000);
      expect(worker.state.connected).toBe(true);
    } finally {
      await worker.stop();
    }
  });

  it('reads pictures from ffmpeg over stdout too (the transport where there are no Unix sockets)', async () => {
    const sizes: number[] = [];
    const worker = new CameraWorker({ ...quick, id: 'u8', cameraId: 'door', source: source('/cam1'), maxWidth: 320, fps: 5, transport: 'pipe', consumer: (f) => sizes.push(f.data.length) });
    worker.start();
    try {
      await until('three pictures', () => sizes.length >= 3);
      expect(new Set(sizes)).toEqual(new Set([320 * 180 * 3]));
      expect(worker.latest()!.width).toBe(320);
    } finally {
      await worker.stop();
    }
  });

  it('fills two picture buffers in turn; latest() and live-view frames are copies that stay intact', async () => {
    const buffers = new Set<ArrayBufferLike>();
    let frames = 0;
    const worker = new CameraWorker({ ...quick, id: 'u7', cameraId: 'till', source: source('/cam2'), maxWidth: 320, fps: 5, consumer: (f) => (frames++, buffers.add(f.data.buffer)) });
    worker.start();
    try {
      await until('six pictures', () => frames >= 6);
      // The consumer's frames share two buffers (no 0.7 MB allocation per picture).
      expect(buffers.size).toBe(2);
      const kept = worker.latest()!;
      expect(buffers.has(kept.data.buffer)).toBe(false);
      const copy = Buffer.from(kept.data);
      const seen = frames;
      await until('three more pictures', () => frames >= seen + 3);
      expect(Buffer.compare(kept.data, copy)).toBe(0);
      expect(buffers.size).toBe(2);
      let live: Frame | undefined;
      const unwatch = worker.watchLive((f) => (live ??= f));
      await until('a live frame', () => live);
      const liveCopy = Buffer.from(live!.data);
      const liveSeen = frames;
      await until('two more pictures', () => frames >= liveSeen + 2);
      expect(Buffer.compare(live!.data, liveCopy)).toBe(0);
      unwatch();
    } finally {
      await worker.stop();
    }
  });
});

describe('grabFrame', () => {
  it('returns one picture, or why not', async () => {
    const ok = await grabFrame(source('/cam1'), 10_000, { maxWidth: 640 });
    expect(ok).toMatchObject({ ok: true, image: { width: 640, height: 360 } });

    const url = rtsp.url('/cam1', { user: USER, password: 'wrong' });
    expect(await grabFrame(url, 10_000)).toMatchObject({ ok: false, code: 'auth_failed', reason: 'wrong password' });
    expect(await grabFrame(source('/nope'), 10_000)).toMatchObject({ ok: false, code: 'no_stream', reason: 'stream path not found' });
  });

  it('gives up on a camera that accepts the connection and never answers', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const result = await grabFrame({ host: '127.0.0.1', port, path: '/x' }, 1500);
      expect(result).toMatchObject({ ok: false, code: 'timeout', reason: 'camera did not answer in time' });
      expect(result.ms).toBeLessThan(5000);
    } finally {
      silent.close();
    }
    expect(ffmpegProcesses(`:${port}/x`)).toEqual([]);
  });

  it('stops when aborted (the agent shutting down): ffmpeg gone, and the folder with the password with it', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('footfall-grab-')));
    const stop = new AbortController();
    try {
      const pending = grabFrame({ host: '127.0.0.1', port, path: '/y', username: USER, password: PASSWORD }, 20_000, { signal: stop.signal });
      await until('ffmpeg running', () => ffmpegProcesses(`:${port}/y`).length === 1);
      expect(readdirSync(tmpdir()).filter((n) => n.startsWith('footfall-grab-') && !before.has(n))).toHaveLength(1);
      stop.abort();
      const result = await pending;
      expect(result).toMatchObject({ ok: false, code: 'failed', reason: 'stopped' });
      expect(result.ms).toBeLessThan(5000);
    } finally {
      silent.close();
    }
    expect(ffmpegProcesses(`:${port}/y`)).toEqual([]);
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith('footfall-grab-') && !before.has(n))).toEqual([]);
  });
});

describe('CaptureManager', () => {
  it('starts enabled cameras, restarts only an edited one, stops disabled and removed ones', async () => {
    const seen = new Set<string>();
    const manager = new CaptureManager({ fps: 5, consumer: (f) => seen.add(f.cameraId), worker: quick });
    const cam = (id: string, path: string, extra: Partial<CameraSpec> = {}): CameraSpec => ({
      id,
      camera_id: id.replace('id-', ''),
      host: '127.0.0.1',
      port: rtsp.port,
      path,
      username: USER,
      password: PASSWORD,
      max_width: 320,
      enabled: true,
      revision: 1,
      ...extra,
    });
    try {
      const first = await manager.apply([cam('id-a', '/cam1'), cam('id-b', '/cam2'), cam('id-c', '/cam1', { enabled: false })]);
      expect(first).toEqual({ started: ['id-a', 'id-b'], restarted: [], stopped: [] });
      await until('both connected', () => manager.statuses().every((s) => s.state.connected) && seen.size === 2);
      const workerA = manager.worker('id-a')!;
      const workerB = manager.worker('id-b')!;

      // Same list again: nothing happens.
      expect(await manager.apply([cam('id-a', '/cam1'), cam('id-b', '/cam2')])).toEqual({ started: [], restarted: [], stopped: [] });

      // b edited (revision 2, a wrong password now): only b restarts, a keeps its worker and process.
      const pidA = workerA.pid;
      const edited = await manager.apply([cam('id-a', '/cam1'), cam('id-b', '/cam2', { revision: 2, password: 'changed' })]);
      expect(edited).toEqual({ started: [], restarted: ['id-b'], stopped: [] });
      expect(manager.worker('id-a')).toBe(workerA);
      expect(workerA.pid).toBe(pidA);
      expect(manager.worker('id-b')).not.toBe(workerB);
      await until('b says why', () => manager.statuses().find((s) => s.id === 'id-b')?.state.reason === 'wrong password');

      // b removed (tombstone: absent from the list), a disabled.
      const removed = await manager.apply([cam('id-a', '/cam1', { enabled: false })]);
      expect(removed).toEqual({ started: [], restarted: [], stopped: ['id-a', 'id-b'] });
      expect(manager.statuses()).toEqual([]);
      expect(ffmpegProcesses(`:${rtsp.port}/`)).toEqual([]);
    } finally {
      await manager.stopAll();
    }
  });
});
