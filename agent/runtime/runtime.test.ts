/**
 * The agent runtime against a real head office in-process (HTTP, broker, SQLite): what happens to the shop PC's
 * own state (queue file, kept camera list) when the PC is enrolled again, possibly for another shop.
 */
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addCamera, enrolmentCode, openShop, waitFor } from '../../test/support/shop-pc.js';
import { loadAgentConfig, queueFile, type AgentConfig } from '../config/config.js';
import { enrolShopPc } from '../enrol/enrol.js';
import { repoRoot, testModelsDir } from '../models/test-cache.js';
import { DurableQueue } from '../queue/queue.js';
import type { Visit } from '../vision/types.js';
import { AgentRuntime, type AgentRuntimeOptions } from './runtime.js';
import { closedPort, silentServer } from '../../test/support/ports.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });

let h: Harness;
let owner: string;
let tmp: string;
const running: AgentRuntime[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-runtime-'));
  h = await startHarness();
  owner = (await h.company('Chai Point')).ownerToken;
});

afterAll(async () => {
  for (const r of running.splice(0)) await r.stop();
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function start(config: AgentConfig, over: Partial<AgentRuntimeOptions> = {}): Promise<AgentRuntime> {
  const runtime = await AgentRuntime.start({ config: { ...config, log_level: 'silent' }, log, modelsDir: false, brokerBackoff: { initialMs: 50, maxMs: 200 }, drainMs: 200, ...over });
  running.push(runtime);
  return runtime;
}

async function stop(runtime: AgentRuntime): Promise<void> {
  await runtime.stop();
  running.splice(running.indexOf(runtime), 1);
}

function visit(): Visit {
  const now = new Date().toISOString();
  return {
    visit_id: randomUUID(),
    occurred_at: now,
    camera_id: 'entrance',
    quality: 0.3,
    passed_gate: false,
    track: { id: `t-${randomUUID()}`, first_seen_at: now, last_seen_at: now, frames: 4, faces_passed: 0, faces_embedded: 0, ended_by: 'lost' },
  };
}

/** visit_ids in a shop's arrivals feed (head office's own view). */
async function stored(site: string): Promise<Set<string>> {
  const r = await h.request('GET', `/api/visits?limit=1000&site=${site}`, { token: owner });
  if (r.status !== 200) throw new Error(`feed: ${r.status} ${JSON.stringify(r.body)}`);
  return new Set((r.body.arrivals as { visit_id: string }[]).map((a) => a.visit_id));
}

/** An HTTP relay in front of head office that counts the requests it passes on, by path. */
async function countingRelay(target: string): Promise<{ url: string; counts: Map<string, number>; close(): Promise<void> }> {
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const p = (req.url ?? '').split('?')[0]!;
    counts.set(p, (counts.get(p) ?? 0) + 1);
    const out = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    counts,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** ffmpeg processes started by this (test) process. */
function ffmpegChildren(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // pid (comm) state ppid ...
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [comm, rest] = [stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), stat.slice(stat.lastIndexOf(')') + 2).split(' ')];
      if (comm === 'ffmpeg' && Number(rest[1]) === process.pid && rest[0] !== 'Z') pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The queue file can be opened: no agent holds the data folder. */
function queueIsFree(config: AgentConfig): boolean {
  const queue = new DurableQueue({ file: queueFile(config) });
  queue.close();
  return true;
}

/** A logger whose lines are kept, and which calls `on(msg)` as each line is written (inside the logging call). */
function watchedLog(on: (msg: string) => void = () => undefined): { log: Logger; msgs: string[] } {
  const msgs: string[] = [];
  const log = pino({ level: 'info' }, {
    write: (line: string) => {
      const { msg } = JSON.parse(line) as { msg: string };
      msgs.push(msg);
      on(msg);
    },
  });
  return { log, msgs };
}

describe('a stop during start-up (SIGTERM before start() is done)', () => {
  it('while head office does not answer: start() ends at once, the queue file closed, nothing else opened', async () => {
    const shop = await openShop(h, owner, { name: 'Thane' });
    const file = path.join(tmp, 'stop-early', 'agent.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'stop-early', 'data') } });
    const headOffice = await silentServer();
    try {
      const config = { ...(await loadAgentConfig(file)), server_url: headOffice.url };
      const stop = new AbortController();
      const { log: watched, msgs } = watchedLog();
      const starting = AgentRuntime.start({ config, log: watched, modelsDir: false, signal: stop.signal });
      // Waiting for GET /api/agent/me (5 s at most); the data folder is taken already.
      await waitFor(() => headOffice.connections() >= 1, 5000, 10);
      expect(() => queueIsFree(config)).toThrow(/in use by another footfall agent/);
      const asked = Date.now();
      stop.abort(new Error('SIGTERM'));
      await expect(starting).rejects.toThrow('SIGTERM');
      expect(Date.now() - asked).toBeLessThan(1000);
      expect(queueIsFree(config)).toBe(true);
      expect(msgs).toContain('agent stopped');
      // Given up before the broker and the cameras: nothing of them was started.
      expect(msgs).not.toContain('connecting to the broker');
      expect(msgs).not.toContain('agent starting');
    } finally {
      await headOffice.close();
    }
  });

  it('while the kept cameras start: they are stopped again (no ffmpeg left), nothing runs on, the queue file is closed', async () => {
    const shop = await openShop(h, owner, { name: 'Vashi' });
    const camera = await silentServer(); // a camera that accepts the connection and sends nothing: ffmpeg waits on it
    try {
      await addCamera(h, owner, shop.site_id, { camera_id: 'entrance', host: '127.0.0.1', port: camera.port, path: '/cam' });
      const file = path.join(tmp, 'stop-cameras', 'agent.json');
      const dataDir = path.join(tmp, 'stop-cameras', 'data');
      await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: dataDir } });
      const config = await loadAgentConfig(file);
      // A first run keeps the camera list on disk.
      const before = await start(config);
      await waitFor(() => existsSync(path.join(dataDir, 'cameras.json')) && camera.open() > 0, 10_000);
      await stop(before);
      await waitFor(() => camera.open() === 0 && ffmpegChildren().length === 0, 5000);

      // The next start is stopped just as the kept list's cameras are being started (the broker out of reach: a
      // connection would pull head office's list, which may win the race against the kept one).
      const halt = new AbortController();
      const { log: watched, msgs } = watchedLog((msg) => {
        // Inside that step: its worst moment.
        if (msg === 'starting the cameras of the last known list') halt.abort(new Error('SIGTERM'));
      });
      const relay = await countingRelay(h.url);
      try {
        const fast = { heartbeat_interval_s: 0.2, camera_sync_s: 0.2, snapshot_interval_s: 0.2, live_renew_s: 0.2 };
        const counted = { ...config, server_url: relay.url, broker: { ...config.broker, host: '127.0.0.1', port: await closedPort() } };
        await expect(AgentRuntime.start({ config: counted, log: watched, modelsDir: false, signal: halt.signal, timing: fast, brokerBackoff: { initialMs: 50, maxMs: 200 } })).rejects.toThrow(
          'SIGTERM',
        );
        expect(msgs).toEqual(expect.arrayContaining(['agent starting', 'kept camera list applied', 'agent stopping', 'agent stopped']));
        expect(msgs.indexOf('agent stopped')).toBeGreaterThan(msgs.indexOf('kept camera list applied'));
        expect(ffmpegChildren()).toEqual([]);
        expect(queueIsFree(config)).toBe(true);
        // Nothing runs on after start() gave up: no camera reconnects, no calls to head office, no log lines.
        relay.counts.clear();
        await new Promise((r) => setTimeout(r, 1500));
        expect(ffmpegChildren()).toEqual([]);
        expect(camera.open()).toBe(0);
        expect(Object.fromEntries(relay.counts)).toEqual({});
        expect(msgs.slice(msgs.indexOf('agent stopped') + 1)).toEqual([]);
      } finally {
        await relay.close();
      }
    } finally {
      await camera.close();
    }
  });
});

describe('a stop during start-up, with face models', () => {
  it('while the models load: the stop waits for them and closes them (nothing happens after "agent stopped")', async (ctx) => {
    if (!existsSync(path.join(testModelsDir(), 'manifest.json'))) {
      console.warn(`skipped: no face models in ${testModelsDir()} (the vision tests install them)`);
      return ctx.skip();
    }
    const shop = await openShop(h, owner, { name: 'Kurla' });
    const file = path.join(tmp, 'stop-models', 'agent.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'stop-models', 'data') } });
    const config = await loadAgentConfig(file);
    const halt = new AbortController();
    const { log: watched, msgs } = watchedLog((msg) => {
      // The signal arrives as its own event, while the models load.
      if (msg === 'agent starting') setImmediate(() => halt.abort(new Error('SIGTERM')));
    });
    await expect(AgentRuntime.start({ config, log: watched, modelsDir: testModelsDir(), visionWorkers: 1, signal: halt.signal })).rejects.toThrow('SIGTERM');
    expect(msgs).toEqual(expect.arrayContaining(['agent stopping', 'recognition running', 'agent stopped']));
    // The loaded models were closed by the stop (it closes the recognition last before the queue), not left running.
    expect(msgs.indexOf('recognition running')).toBeLessThan(msgs.indexOf('agent stopped'));
    expect(queueIsFree(config)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(msgs.slice(msgs.indexOf('agent stopped') + 1)).toEqual([]);
  });
});

describe('a shop PC head office no longer accepts', () => {
  it('stops calling head office (401), except for the camera list pulls that would see the token accepted again', async () => {
    const shop = await openShop(h, owner, { name: 'Colaba' });
    const file = path.join(tmp, 'revoked', 'agent.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'revoked', 'data') } });
    const relay = await countingRelay(h.url);
    try {
      const old = await start({ ...(await loadAgentConfig(file)), server_url: relay.url }, { timing: { live_renew_s: 0.2, camera_sync_s: 1 } });
      await waitFor(() => old.broker.connected, 5000);
      // Another PC is enrolled for the shop: this one's token and broker login stop working.
      await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: path.join(tmp, 'revoked', 'other.json') });
      await waitFor(() => old.broker.refusedLogin, 5000, 50);
      // A call meets the 401 (awaited: on a loaded machine the round trip through the relay can take seconds), then
      // the requests already on the loopback wire arrive before the count starts.
      await waitFor(() => old.api.unauthorized, 10_000, 50);
      await new Promise((r) => setTimeout(r, 300));
      relay.counts.clear();
      await new Promise((r) => setTimeout(r, 2000));
      // The live demands were polled every 0.2 s while the broker refused the PC: ten refusals a second at scale.
      expect(relay.counts.get('/api/agent/live') ?? 0).toBe(0);
      await waitFor(() => (relay.counts.get('/api/agent/cameras') ?? 0) >= 1, 10_000, 50);
      await stop(old);
    } finally {
      await relay.close();
    }
  });
});

describe('a shop PC enrolled again', () => {
  it('for another shop: visits still queued for the old shop do not block the new shop\'s visits', async () => {
    const andheri = await openShop(h, owner, { name: 'Andheri' });
    const bandra = await openShop(h, owner, { name: 'Bandra' });
    const file = path.join(tmp, 'moved', 'agent.json');
    const dataDir = path.join(tmp, 'moved', 'data');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, andheri.site_id), configPath: file, local: { data_dir: dataDir } });

    // Counting in Andheri while head office's broker is out of reach: the visits wait in the queue file.
    const first = await loadAgentConfig(file);
    const cut = await start({ ...first, broker: { ...first.broker, host: '127.0.0.1', port: await closedPort() } });
    for (let i = 0; i < 3; i++) await cut.submitVisit(visit());
    expect(cut.queue.stats().queued).toBe(3);
    await stop(cut);

    // The PC moves to Bandra (same data folder) and counts there.
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, bandra.site_id), configPath: file, force: true, local: { data_dir: dataDir } });
    const moved = await start(await loadAgentConfig(file));
    const v = visit();
    await moved.submitVisit(v);
    await waitFor(async () => (await stored(bandra.slug)).has(v.visit_id), 5000, 50);
    await waitFor(() => moved.queue.stats().queued === 0);
    // One connection: the broker did not have to refuse anything.
    expect(moved.broker.stats.connects).toBe(1);
    await stop(moved);
  });

  it("for another shop: the new shop does not report the old shop's dropped visits; the old shop's count stays its own", async () => {
    const dadar = await openShop(h, owner, { name: 'Dadar' });
    const worli = await openShop(h, owner, { name: 'Worli' });
    const file = path.join(tmp, 'dropped', 'agent.json');
    const local = { data_dir: path.join(tmp, 'dropped', 'data'), queue_max_items: 100 };
    const unreachable = async (config: AgentConfig): Promise<AgentConfig> => ({ ...config, broker: { ...config.broker, host: '127.0.0.1', port: await closedPort() } });

    // Dadar's head office is out of reach long enough for the queue to overflow: 3 visits are lost.
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, dadar.site_id), configPath: file, local });
    const inDadar = await start(await unreachable(await loadAgentConfig(file)));
    for (let i = 0; i < 103; i++) await inDadar.submitVisit(visit());
    expect(inDadar.heartbeat()).toMatchObject({ queued: 100, dropped: 3 });
    await stop(inDadar);

    // The PC moves to Worli (same data folder): Worli lost nothing, and head office hears so.
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, worli.site_id), configPath: file, force: true });
    const inWorli = await start(await loadAgentConfig(file));
    expect(inWorli.heartbeat()).toMatchObject({ queued: 0, dropped: 0 });
    await waitFor(() => inWorli.heartbeatsSent >= 1, 5000);
    const worliRow = await waitFor(async () => {
      const shops = (await h.request('GET', '/api/sites', { token: owner })).body as { slug: string; last_heartbeat_at: string | null; dropped: number }[];
      return shops.find((s) => s.slug === worli.slug && s.last_heartbeat_at !== null);
    }, 5000);
    expect(worliRow?.dropped).toBe(0);
    await stop(inWorli);

    // Back in Dadar, and enrolled once more for Dadar: Dadar's 3 are still Dadar's (its count never goes down).
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, dadar.site_id), configPath: file, force: true });
    const backInDadar = await start(await unreachable(await loadAgentConfig(file)));
    expect(backInDadar.heartbeat().dropped).toBe(3);
    await stop(backInDadar);
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, dadar.site_id), configPath: file, force: true });
    const reinstalled = await start(await unreachable(await loadAgentConfig(file)));
    expect(reinstalled.heartbeat().dropped).toBe(3);
    await stop(reinstalled);
  });

  it("for another shop: the old shop's kept camera list is not started while head office is out of reach", async () => {
    const juhu = await openShop(h, owner, { name: 'Juhu' });
    const powai = await openShop(h, owner, { name: 'Powai' });
    const camera = await addCamera(h, owner, juhu.site_id, { camera_id: 'entrance', host: '127.0.0.1', port: await closedPort(), path: '/cam', username: 'admin', password: 'juhu-camera-pw' });
    const file = path.join(tmp, 'camera-list', 'agent.json');
    const dataDir = path.join(tmp, 'camera-list', 'data');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, juhu.site_id), configPath: file, local: { data_dir: dataDir } });
    const inJuhu = await start(await loadAgentConfig(file));
    await waitFor(() => inJuhu.capture.worker(camera.id) && existsSync(path.join(dataDir, 'cameras.json')), 5000);
    await stop(inJuhu);

    // Moved to Powai; the first start there cannot reach head office.
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, powai.site_id), configPath: file, force: true });
    const moved = await loadAgentConfig(file);
    const away = `http://127.0.0.1:${await closedPort()}`;
    const inPowai = await start({ ...moved, server_url: away, broker: { ...moved.broker, host: '127.0.0.1', port: await closedPort() } });
    // Juhu's camera (and its password) stays out of Powai's network.
    expect(inPowai.capture.statuses()).toEqual([]);
    await stop(inPowai);

    // Back in Juhu, the list kept there is its own again.
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, juhu.site_id), configPath: file, force: true });
    const back = await loadAgentConfig(file);
    const inJuhuAgain = await start({ ...back, server_url: away, broker: { ...back.broker, host: '127.0.0.1', port: await closedPort() } });
    expect(inJuhuAgain.capture.statuses().map((s) => s.id)).toEqual([camera.id]);
    await stop(inJuhuAgain);

    // A list kept by an older agent (no shop id) is started, and written again with the id at the next pull.
    const kept = path.join(dataDir, 'cameras.json');
    const { site_id, ...older } = JSON.parse(await readFile(kept, 'utf8'));
    expect(site_id).toBe(juhu.site_id);
    await writeFile(kept, JSON.stringify(older));
    const upgraded = await start(back);
    expect(upgraded.capture.statuses().map((s) => s.id)).toEqual([camera.id]);
    await waitFor(async () => JSON.parse(await readFile(kept, 'utf8')).site_id === juhu.site_id, 5000);
    await stop(upgraded);
  });
});

describe('footfall agent run as root', () => {
  // Needs root (an installer trying the agent by hand with sudo); skipped otherwise.
  it("in the service user's data folder: what it writes there is the service user's, who can read and write it afterwards", async (ctx) => {
    if (process.getuid?.() !== 0) {
      console.warn("skipped: needs root (footfall agent run as root in the service user's data folder)");
      return ctx.skip();
    }
    const service = { uid: 65534, gid: 65534 }; // nobody:nogroup stands for footfall:footfall
    const shop = await openShop(h, owner, { name: 'Malad' });
    await addCamera(h, owner, shop.site_id, { camera_id: 'entrance', host: '127.0.0.1', port: await closedPort(), path: '/cam', username: 'admin', password: 'malad-camera-pw' });
    // A folder the service user can reach (the test's temporary folder is root's, 0700).
    const base = mkdtempSync(path.join(os.tmpdir(), 'footfall-root-run-'));
    try {
      chmodSync(base, 0o711);
      const dataDir = path.join(base, 'var-lib-footfall');
      mkdirSync(dataDir, { mode: 0o700 });
      chownSync(dataDir, service.uid, service.gid);
      const file = path.join(base, 'agent.json');
      await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: dataDir } });

      const asRoot = await start(await loadAgentConfig(file));
      await waitFor(() => existsSync(path.join(dataDir, 'cameras.json')), 5000);
      await asRoot.submitVisit(visit());
      for (const name of ['queue.sqlite', 'queue.sqlite-wal', 'cameras.json']) expect({ name, ...statSync(path.join(dataDir, name)) }).toMatchObject({ name, ...service });
      await stop(asRoot);

      // Files an earlier root run (an older agent) left as root's: the next root run gives them back.
      for (const name of ['queue.sqlite', 'cameras.json']) chownSync(path.join(dataDir, name), 0, 0);
      const again = await start(await loadAgentConfig(file));
      await stop(again);
      for (const name of ['queue.sqlite', 'cameras.json']) expect({ name, ...statSync(path.join(dataDir, name)) }).toMatchObject({ name, ...service });

      // The service user (the next start of the service) reads the kept camera list and writes to the queue file.
      const script = `
        const fs = require('node:fs');
        const path = require('node:path');
        const Database = require('better-sqlite3');
        const dir = process.argv[1];
        JSON.parse(fs.readFileSync(path.join(dir, 'cameras.json'), 'utf8'));
        const db = new Database(path.join(dir, 'queue.sqlite'), { timeout: 0 });
        db.prepare('SELECT COUNT(*) AS n FROM items').get();
        db.exec('BEGIN IMMEDIATE; ROLLBACK');
        db.close();`;
      const asService = spawnSync(process.execPath, ['-e', script, dataDir], { cwd: repoRoot(), uid: service.uid, gid: service.gid, encoding: 'utf8' });
      expect({ status: asService.status, stderr: asService.stderr }).toEqual({ status: 0, stderr: '' });
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
