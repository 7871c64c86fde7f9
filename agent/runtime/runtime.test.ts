/**
 * The agent runtime against a real head office in-process (HTTP, broker, SQLite): what happens to the shop PC's
 * own state (queue file, kept camera list) when the PC is enrolled again, possibly for another shop.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { enrolmentCode, openShop, waitFor } from '../../test/support/shop-pc.js';
import { loadAgentConfig, type AgentConfig } from '../config/config.js';
import { enrolShopPc } from '../enrol/enrol.js';
import type { Visit } from '../vision/types.js';
import { AgentRuntime, type AgentRuntimeOptions } from './runtime.js';

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

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

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
    await waitFor(() => moved.queue.stats().queued === 0, 2000);
    // One connection: the broker did not have to refuse anything.
    expect(moved.broker.stats.connects).toBe(1);
    await stop(moved);
  });
});
