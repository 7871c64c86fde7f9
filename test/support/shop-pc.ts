import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import sharp from 'sharp';
import type { EnrolResponse } from '../../shared/agent-api.js';
import { encodeEmbedding, type Heartbeat } from '../../shared/messages.js';
import type { RunningServer } from '../../server/start.js';
import type { Harness } from './harness.js';

/**
 * Test helpers that act as a shop PC (real HTTP, real MQTT client over TCP) and as people of a company.
 */

let seq = 0;

/** A head office as a shop PC and a test reach it: its API and its broker's port (the harness, or head office in other processes). */
export type HeadOfficeReach = Pick<Harness, 'request' | 'url' | 'login'> & { server: Pick<RunningServer, 'mqttPort'> };

/** A small real JPEG. */
export function jpeg(width = 64, height = 48, shade = 120): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: shade, g: 90, b: 40 } } })
    .jpeg()
    .toBuffer();
}

/** A member of the owner's company with this role; returns their access token. */
export async function memberToken(h: HeadOfficeReach, ownerToken: string, role: 'staff' | 'manager' | 'owner'): Promise<string> {
  seq++;
  const email = `${role}-${process.pid}-${seq}@shop.test`;
  const r = await h.request('POST', '/api/team/members', { token: ownerToken, body: { email, full_name: `${role} ${seq}`, role, password: 'member-password-1' } });
  if (r.status !== 201) throw new Error(`member create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return (await h.login(email, 'member-password-1')).access_token;
}

export async function openShop(h: HeadOfficeReach, token: string, body: Record<string, unknown>): Promise<any> {
  const r = await h.request('POST', '/api/sites', { token, body });
  if (r.status !== 201) throw new Error(`shop open failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function addCamera(h: Harness, token: string, site: string, body: Record<string, unknown>): Promise<any> {
  const r = await h.request('POST', `/api/sites/${site}/cameras`, { token, body: { host: '192.168.1.64', ...body } });
  if (r.status !== 201) throw new Error(`camera add failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function enrolmentCode(h: HeadOfficeReach, token: string, site: string, body: Record<string, unknown> = {}): Promise<string> {
  const r = await h.request('POST', `/api/sites/${site}/enrolment-code`, { token, body });
  if (r.status !== 201) throw new Error(`enrolment code failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.code;
}

/** Creates a code and enrols with it: what the installer does. */
export async function enrol(h: HeadOfficeReach, token: string, site: string): Promise<EnrolResponse> {
  const code = await enrolmentCode(h, token, site);
  const r = await h.request('POST', '/api/agent/enrol', { body: { code, hostname: 'till-pc', agent_version: '1.0.0' } });
  if (r.status !== 201) throw new Error(`enrol failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** The shop PC's broker connection (no automatic reconnect, so a refusal or a kick is visible). */
export function connectPc(h: HeadOfficeReach, e: Pick<EnrolResponse, 'broker'>, over: Partial<IClientOptions> = {}): Promise<MqttClient> {
  return connectAsync(`mqtt://127.0.0.1:${h.server.mqttPort}`, {
    username: e.broker.username,
    password: e.broker.password,
    clientId: `${e.broker.client_id}-${++seq}`,
    reconnectPeriod: 0,
    connectTimeout: 5000,
    ...over,
  });
}

/** The shop PCs' broker connections a test file opens: `track` each, `endAll` in afterAll. */
export function pcClients() {
  const clients: MqttClient[] = [];
  return {
    track: (c: MqttClient) => (clients.push(c), c),
    endAll: () => Promise.all(clients.map((c) => c.endAsync(true).catch(() => {}))),
  };
}

/** Shops "Shop A" and "Shop B" opened (slugs shop-a, shop-b), each enrolled and its shop PC connected (tracked): the ACL tests' set-up. */
export async function twoShopPcs(h: Harness, token: string, track: (c: MqttClient) => MqttClient) {
  const a = await openShop(h, token, { name: 'Shop A' });
  const b = await openShop(h, token, { name: 'Shop B' });
  const ea = await enrol(h, token, a.slug);
  const eb = await enrol(h, token, b.slug);
  const pcA = track(await connectPc(h, ea));
  const pcB = track(await connectPc(h, eb));
  return { ea, eb, pcA, pcB };
}

/** A shop opened and enrolled, its PC connected (tracked), then enrolled again: resolves once the old connection is closed. */
export async function reEnrolled(h: Harness, token: string, name: string, track: (c: MqttClient) => MqttClient) {
  const shop = await openShop(h, token, { name });
  const first = await enrol(h, token, shop.slug);
  const gone = closed(track(await connectPc(h, first)));
  const second = await enrol(h, token, shop.slug);
  await gone;
  return { shop, first, second };
}

export function heartbeat(over: Partial<Heartbeat> = {}): Heartbeat {
  return {
    sent_at: new Date().toISOString(),
    agent_version: '1.2.3',
    recognition_model: 'arcface-test',
    recognition_running: true,
    cameras_up: 1,
    cameras_total: 1,
    queued: 0,
    dropped: 0,
    fraction_below_gate: 0.1,
    ...over,
  };
}

/** Raw body request (pictures). */
export async function upload(h: HeadOfficeReach, method: string, path: string, token: string | undefined, body: Buffer | string, type = 'image/jpeg') {
  const headers: Record<string, string> = { 'Content-Type': type };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(h.url + path, { method, headers, body });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
  return { status: res.status, body: json as any, headers: res.headers };
}

/** Collects a client's messages (JSON payloads) and waits for one that matches. */
export function inbox(client: MqttClient) {
  const seen: { topic: string; body: any }[] = [];
  const waiters: { match: (m: { topic: string; body: any }) => boolean; resolve: (m: { topic: string; body: any }) => void }[] = [];
  client.on('message', (topic, payload) => {
    const m = { topic, body: payload.length ? JSON.parse(payload.toString('utf8')) : null };
    seen.push(m);
    for (const w of [...waiters]) {
      if (w.match(m)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  return {
    seen,
    next(match: (m: { topic: string; body: any }) => boolean, timeoutMs = 3000, since = 0): Promise<{ topic: string; body: any }> {
      const already = seen.slice(since).find(match);
      if (already) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no matching MQTT message in time')), timeoutMs);
        waiters.push({ match, resolve: (m) => (clearTimeout(t), resolve(m)) });
      });
    },
  };
}

/** Polls until fn returns something truthy. */
export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, everyMs = 25): Promise<T> {
  // On the monotonic clock: a test that fakes Date (vi.useFakeTimers({ toFake: ['Date'] })) still times out.
  const end = performance.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (performance.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Resolves when the client is closed by the other side. */
export function closed(client: MqttClient): Promise<void> {
  return new Promise((resolve) => {
    if (!client.connected) return resolve();
    client.once('close', () => resolve());
  });
}

/** A visit's encoded embedding: a unit vector, a face nobody else has (random 512-d vectors are far apart), the same each time for a seed. */
export function syntheticFace(seed: number): string {
  let x = seed * 2654435761;
  const v = new Float32Array(512);
  for (let i = 0; i < v.length; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v[i] = x / 2147483648 - 0.5;
  }
  const n = Math.hypot(...v);
  return encodeEmbedding(v.map((a) => a / n));
}
