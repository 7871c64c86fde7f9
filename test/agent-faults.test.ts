/**
 * The shop PC when the network fails: a real head office in-process, the agent runtime in-process, and a TCP
 * relay between the agent and the broker that the test cuts (connections dropped, new ones refused) and restores.
 *
 * Visits are injected where the recognition pipeline hands them over (runtime.submitVisit -> durable queue ->
 * QoS 1 publish). Arrivals are counted in head office's own view, the arrivals feed (GET /api/visits): ingest
 * de-duplicates on visit_id, so every produced visit must be stored exactly once, re-sends or not. Deliveries (re-sends
 * included) are also counted on the head-office side of the broker, only to say how many duplicates ingest dropped.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AedesPublishPacket } from 'aedes';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, type AgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { AgentRuntime, type AgentRuntimeOptions } from '../agent/runtime/runtime.js';
import type { Visit } from '../agent/vision/types.js';
import { upFilterAllShops } from '../shared/topics.js';
import { startHarness, type Harness } from './support/harness.js';
import { enrolmentCode, openShop, waitFor } from './support/shop-pc.js';
import { embeddedOf } from '../server/broker/embedded.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });

/** A TCP relay to the broker that can be cut (every connection dropped, new ones refused) and restored. */
class Relay {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: number) {}

  async open(): Promise<void> {
    const server = net.createServer((inbound) => {
      const outbound = net.connect(this.target, '127.0.0.1');
      for (const s of [inbound, outbound]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

let h: Harness;
let owner: string;
let shop: { site_id: string; slug: string };
let tmp: string;
let config: AgentConfig;
let relay: Relay;
const running: AgentRuntime[] = [];
/** Visit messages seen by head office's side of the broker (re-sends included). */
let deliveries = 0;

/** Head office's own view: visit_id -> rows holding it in the shop's arrivals feed (GET /api/visits). */
async function stored(): Promise<Map<string, number>> {
  const r = await h.request('GET', `/api/visits?limit=1000&site=${shop.slug}`, { token: owner });
  if (r.status !== 200) throw new Error(`feed: ${r.status} ${JSON.stringify(r.body)}`);
  const rows = new Map<string, number>();
  for (const a of r.body.arrivals as { visit_id: string }[]) rows.set(a.visit_id, (rows.get(a.visit_id) ?? 0) + 1);
  return rows;
}

const total = (rows: Map<string, number>) => [...rows.values()].reduce((a, b) => a + b, 0);

async function start(over: Partial<AgentRuntimeOptions> = {}): Promise<AgentRuntime> {
  const runtime = await AgentRuntime.start({
    config,
    log,
    modelsDir: false,
    timing: { heartbeat_interval_s: 1 },
    brokerBackoff: { initialMs: 100, maxMs: 400 },
    drainMs: 500,
    ...over,
  });
  running.push(runtime);
  return runtime;
}

async function stop(runtime: AgentRuntime): Promise<void> {
  await runtime.stop();
  running.splice(running.indexOf(runtime), 1);
}

let seq = 0;
function visit(): Visit {
  seq++;
  const now = new Date();
  const embedding = new Float32Array(512);
  // A different person each time (hash noise: any two are nearly orthogonal, far under the match threshold), so every
  // visit is its own customer's stay and its own arrival in the feed this test counts. (Sine waves of nearby phases
  // matched each other, and now that a visit is a stay such matches join into one.)
  for (let i = 0; i < 512; i++) embedding[i] = (((Math.sin(seq * 12.9898 + i * 78.233) * 43758.5453) % 1) + 1) % 1 - 0.5;
  return {
    visit_id: randomUUID(),
    occurred_at: now.toISOString(),
    camera_id: 'entrance',
    embedding,
    recognition_model: 'test-model',
    quality: 0.8,
    passed_gate: true,
    attributes: { gender: 'female', age: 31, emotion: 'neutral', raw: { age: 31.2 } },
    track: { id: `t-${seq}`, first_seen_at: now.toISOString(), last_seen_at: now.toISOString(), frames: 12, faces_passed: 5, faces_embedded: 3, ended_by: 'lost' },
  };
}

async function site(): Promise<any> {
  const r = await h.request('GET', '/api/sites', { token: owner });
  return r.body.find((s: any) => s.site_id === shop.site_id);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-agent-faults-'));
  h = await startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1 });
  const company = await h.company('Chai Point');
  owner = company.ownerToken;
  shop = await openShop(h, owner, { name: 'Bandra' });
  const file = path.join(tmp, 'agent.json');
  await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'data'), queue_max_items: 100 } });
  relay = new Relay(h.server.mqttPort);
  await relay.open();
  config = { ...(await loadAgentConfig(file)), log_level: 'silent' };
  // The agent reaches the broker through the relay.
  config.broker = { ...config.broker, host: '127.0.0.1', port: relay.port };

  const record = (_packet: AedesPublishPacket, done: () => void) => {
    deliveries++;
    done();
  };
  await new Promise<void>((resolve) => embeddedOf(h.server.broker).aedes.subscribe(upFilterAllShops('visit'), record, resolve));
});

afterAll(async () => {
  for (const r of [...running]) await r.stop();
  await relay?.cut();
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('agent faults', () => {
  it('visits produced while the agent is cut off from the broker, across an agent restart, arrive exactly once after dedupe', async () => {
    const first = await start();
    await waitFor(() => first.broker.connected, 10_000);
    const produced: string[] = [];

    // 30 visits; the connection is cut after the 10th, while earlier ones may still wait for their PUBACK.
    for (let i = 0; i < 30; i++) {
      if (i === 10) await relay.cut();
      const v = visit();
      produced.push(v.visit_id);
      await first.submitVisit(v);
      await sleep(5);
    }
    await waitFor(() => !first.broker.connected, 5000);
    const queuedWhileCut = first.queue.stats().queued;
    expect(queuedWhileCut).toBeGreaterThanOrEqual(20);
    expect(first.heartbeat()).toMatchObject({ queued: queuedWhileCut, dropped: 0 });

    // The agent restarts while still cut off: the queue file keeps every unacknowledged visit.
    await stop(first);
    const second = await start();
    expect(second.queue.stats().queued).toBe(queuedWhileCut);
    for (let i = 0; i < 10; i++) {
      const v = visit();
      produced.push(v.visit_id);
      await second.submitVisit(v);
    }
    await sleep(300); // reconnection attempts are refused meanwhile
    expect(second.broker.connected).toBe(false);

    await relay.open();
    await waitFor(async () => second.queue.stats().queued === 0 && (await stored()).size >= produced.length, 15_000, 50);
    await h.server.ingest.drained();
    const unique = new Set(produced);
    expect(unique.size).toBe(40);
    // Exactly the produced visits, each stored once: re-sends (PUBACK lost in the cut) are duplicates ingest drops.
    const rows = await stored();
    expect([...rows.keys()].sort()).toEqual([...unique].sort());
    expect(total(rows)).toBe(produced.length);
    if (process.env.FOOTFALL_TEST_TIMING) console.log(`faults: 40 visits, ${deliveries} deliveries, ${deliveries - rows.size} duplicates dropped, ${queuedWhileCut} queued while cut`);

    await waitFor(async () => {
      const s = await site();
      return s.online && s.queued === 0 ? s : undefined;
    }, 5000, 100);
  });

  it('a full queue drops the oldest, counts them, and head office sees `dropped`', async () => {
    const agent = running[0]!;
    await waitFor(() => agent.broker.connected && agent.queue.stats().queued === 0, 10_000);
    await relay.cut();
    await waitFor(() => !agent.broker.connected, 5000);

    const produced: string[] = [];
    for (let i = 0; i < 150; i++) {
      const v = visit();
      produced.push(v.visit_id);
      await agent.submitVisit(v);
    }
    expect(agent.queue.stats()).toEqual({ queued: 100, dropped: 50 });
    expect(agent.heartbeat()).toMatchObject({ queued: 100, dropped: 50 });

    await relay.open();
    const s = await waitFor(async () => {
      const x = await site();
      return x.dropped === 50 && x.queued === 0 ? x : undefined;
    }, 15_000, 100);
    expect(s).toMatchObject({ online: true, dropped: 50, queued: 0 });
    // The newest 100 are stored, each once; the 50 oldest were dropped on the shop PC (and said so).
    await waitFor(async () => {
      const now = await stored();
      return produced.slice(50).every((id) => now.has(id));
    }, 10_000, 50);
    await h.server.ingest.drained();
    const rows = await stored();
    expect(produced.slice(50).map((id) => rows.get(id))).toEqual(produced.slice(50).map(() => 1));
    expect(produced.slice(0, 50).filter((id) => rows.has(id))).toEqual([]);
    // Nothing else was stored: the 40 of the first test and these 100.
    expect(total(rows)).toBe(40 + 100);
  });

  it('another PC enrolled for the shop: this one is refused by the broker and head office, and keeps its queue', async () => {
    const agent = running[0]!;
    await waitFor(() => agent.broker.connected, 10_000);
    const other = path.join(tmp, 'other', 'agent.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: other });
    // Head office closes the old login's connection; reconnecting with the old secret is refused (CONNACK 4).
    await waitFor(() => agent.broker.refusedLogin, 10_000, 50);
    expect(agent.broker.connected).toBe(false);
    const err = await agent.api.claimCheck().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 401, code: 'unauthorized' });
    // Visits are still kept on disk (re-enrolling this PC for the shop delivers them).
    const before = agent.queue.stats().queued;
    await agent.submitVisit(visit());
    expect(agent.queue.stats().queued).toBe(before + 1);
  });
});
