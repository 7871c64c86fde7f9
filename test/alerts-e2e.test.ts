/**
 * Alerts end to end (docs/operations.md, "Alerts"): a real head office, the real shop-PC runtime, a real SMTP
 * server (smtp-server, with a user and password) and a loopback webhook receiver. The shop PC goes away: "shop PC
 * offline" is raised once, e-mailed to the recipients and POSTed, signed, to the webhook (whose first answer is a
 * 500, so the delivery is retried); it comes back: the alert is cleared once, and that is delivered too. A camera
 * that cannot connect raises "camera down". The history pages with a cursor.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { pino } from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, type AgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { AgentRuntime } from '../agent/runtime/runtime.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { closedPort } from './support/ports.js';
import { addCamera, enrolmentCode, memberToken, openShop, waitFor } from './support/shop-pc.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
const SECRET = 'whsec-0123456789abcdef';

let h: Harness;
let c: Company;
let other: Company;
let tmp: string;
let smtp: SMTPServer;
let hook: http.Server;
let hookUrl: string;
const mails: ParsedMail[] = [];
const posts: { headers: http.IncomingHttpHeaders; body: string; status: number }[] = [];
let failNext = 1;
let runtime: AgentRuntime | undefined;

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-alerts-e2e-'));
  smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth(auth, _session, cb) {
      if (auth.username === 'alerts' && auth.password === 'smtp-pass') cb(null, { user: 'alerts' });
      else cb(new Error('bad credentials'));
    },
    onData(stream, _session, cb) {
      simpleParser(stream).then(
        (m) => {
          mails.push(m);
          cb();
        },
        (err: Error) => cb(err),
      );
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const smtpPort = (smtp.server.address() as AddressInfo).port;

  hook = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      const status = failNext > 0 ? (failNext--, 500) : 200;
      posts.push({ headers: req.headers, body, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/footfall`;

  h = await startHarness({
    FOOTFALL_HEARTBEAT_INTERVAL_S: 1,
    FOOTFALL_ALERT_INTERVAL_S: 1,
    FOOTFALL_ALERT_RETRY_BASE_S: 1,
    FOOTFALL_SMTP_HOST: '127.0.0.1',
    FOOTFALL_SMTP_PORT: smtpPort,
    FOOTFALL_SMTP_USER: 'alerts',
    FOOTFALL_SMTP_PASSWORD: 'smtp-pass',
    FOOTFALL_SMTP_FROM: 'Footfall <alerts@footfall.test>',
  });
  [c, other] = await Promise.all([h.company('Alerting Co'), h.company('Quiet Co')]);
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
  await h?.close();
  await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  hook?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const alertsOf = async (token: string, query = '') => (await h.request('GET', `/api/alerts${query}`, { token })).body;
const verify = (p: { headers: http.IncomingHttpHeaders; body: string }) =>
  p.headers['x-footfall-signature'] === `sha256=${createHmac('sha256', SECRET).update(`${String(p.headers['x-footfall-timestamp'])}.${p.body}`).digest('hex')}`;

describe('alerts', () => {
  it('refuses bad settings and keeps another company out', async () => {
    const staff = await memberToken(h, c.ownerToken, 'staff');
    const bad = await h.request('PATCH', '/api/alerts/settings', { token: c.ownerToken, body: { webhook_url: hookUrl } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/webhook_secret/) });
    const rule = await h.request('PATCH', '/api/alerts/settings', { token: c.ownerToken, body: { rules: { camera_down: { after_minutes: -1 } } } });
    expect(rule.status).toBe(400);
    expect(rule.body.message).toMatch(/after_minutes/);
    const byStaff = await h.request('PATCH', '/api/alerts/settings', { token: staff, body: { email_to: null } });
    expect(byStaff.status).toBe(403);
    const cursor = await h.request('GET', '/api/alerts?cursor=nonsense', { token: staff });
    expect(cursor.status).toBe(400);
    expect(cursor.body.error).toBe('invalid_cursor');

    const ok = await h.request('PATCH', '/api/alerts/settings', {
      token: c.ownerToken,
      body: { email_to: ['ops@chain.test', 'lead@chain.test'], webhook_url: hookUrl, webhook_secret: SECRET, rules: { camera_down: { after_minutes: 0 } } },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ email_recipients: ['ops@chain.test', 'lead@chain.test'], webhook_url: hookUrl, webhook_secret_set: true, rules: { camera_down: { enabled: true, after_minutes: 0 } } });
    expect(JSON.stringify(ok.body)).not.toContain(SECRET);
    const theirs = await h.request('GET', '/api/alerts/settings', { token: other.ownerToken });
    expect(theirs.body).toMatchObject({ email_to: null, webhook_url: null, webhook_secret_set: false });
  });

  it('raises "shop PC offline" once when the real shop PC goes away and clears it once when it comes back, by e-mail and webhook', { timeout: 90_000 }, async () => {
    const shop = await openShop(h, c.ownerToken, { name: 'Colaba Causeway', timezone: 'UTC' });
    const configPath = path.join(tmp, 'agent.json');
    await enrolShopPc({ server: h.url, code: await enrolmentCode(h, c.ownerToken, shop.site_id), configPath, local: { data_dir: path.join(tmp, 'data') } });
    const config: AgentConfig = { ...(await loadAgentConfig(configPath)), log_level: 'silent' };
    const start = () => AgentRuntime.start({ config, log, modelsDir: false, brokerBackoff: { initialMs: 50, maxMs: 200 }, capture: { backoff: { initialMs: 300, maxMs: 1000 } } });

    runtime = await start();
    await waitFor(async () => (await h.request('GET', `/api/sites/${shop.slug}`, { token: c.ownerToken })).body.online, 15_000, 100);
    // A camera nothing answers at: "camera down" once the PC reports it.
    const cam = await addCamera(h, c.ownerToken, shop.site_id, { camera_id: 'till', host: '127.0.0.1', port: await closedPort(), path: '/x' });
    await runtime.sync.pull();
    const down = await waitFor(async () => (await alertsOf(c.ownerToken, '?state=open')).alerts.find((a: any) => a.kind === 'camera_down'), 30_000, 200);
    expect(down).toMatchObject({ site_id: shop.site_id, camera: { id: cam.id, camera_id: 'till' }, open: true, cleared_at: null });
    expect((await alertsOf(c.ownerToken)).alerts.filter((a: any) => a.kind === 'shop_offline')).toEqual([]);

    // Delivered by webhook (the receiver's first answer is a 500: retried).
    await waitFor(() => posts.some((p) => p.status === 200 && JSON.parse(p.body).alert.id === down.id), 15_000, 100);
    expect(posts[0]).toMatchObject({ status: 500 });

    // The shop PC goes away (and the webhook fails once more).
    failNext = 1;
    const stopped = Date.now();
    await runtime.stop();
    runtime = undefined;
    const offline = await waitFor(async () => (await alertsOf(c.ownerToken, '?state=open')).alerts.find((a: any) => a.kind === 'shop_offline'), 20_000, 200);
    expect(offline).toMatchObject({ site: 'Colaba Causeway', open: true, title: 'Shop PC offline' });
    expect(offline.message).toMatch(/Colaba Causeway is offline/);
    // Mail to both recipients; the webhook's first answer was a 500, so it was retried and delivered.
    await waitFor(() => mails.filter((m) => m.subject?.includes('Shop PC offline')).length === 2, 15_000, 100);
    const raisedHooks = () => posts.filter((p) => JSON.parse(p.body).event === 'alert.raised' && JSON.parse(p.body).alert.kind === 'shop_offline');
    await waitFor(() => raisedHooks().some((p) => p.status === 200), 15_000, 100);
    const mail = mails.find((m) => m.subject?.includes('Shop PC offline'))!;
    expect(mail.subject).toBe('[Footfall] Shop PC offline: Colaba Causeway');
    expect(mail.from?.text).toContain('alerts@footfall.test');
    expect(mail.text).toMatch(/Colaba Causeway is offline/);
    expect(posts.every(verify)).toBe(true);
    const retried = raisedHooks();
    expect(retried[0]!.status).toBe(500);
    expect(retried.length).toBeGreaterThanOrEqual(2);
    expect(new Set(retried.map((p) => p.headers['x-footfall-delivery'])).size).toBe(1); // the same delivery, retried
    expect(JSON.parse(retried.at(-1)!.body)).toMatchObject({ event: 'alert.raised', alert: { id: offline.id, kind: 'shop_offline', open: true } });
    console.log(`alerts-e2e: offline raised and delivered ${Date.now() - stopped} ms after the shop PC stopped`);

    // It stays raised once however many passes run.
    await new Promise((r) => setTimeout(r, 2500));
    expect((await alertsOf(c.ownerToken)).alerts.filter((a: any) => a.kind === 'shop_offline')).toHaveLength(1);

    // The shop PC comes back: cleared once, delivered once more each way.
    runtime = await start();
    const cleared = await waitFor(async () => (await alertsOf(c.ownerToken)).alerts.find((a: any) => a.id === offline.id && !a.open), 20_000, 200);
    expect(cleared.cleared_at >= cleared.raised_at).toBe(true);
    await waitFor(() => mails.filter((m) => m.subject?.startsWith('[Footfall] Resolved: shop pc offline')).length === 2, 15_000, 100);
    await waitFor(() => posts.some((p) => JSON.parse(p.body).event === 'alert.cleared' && JSON.parse(p.body).alert.id === offline.id), 15_000, 100);
    await new Promise((r) => setTimeout(r, 2000));
    const all = (await alertsOf(c.ownerToken)).alerts;
    expect(all.filter((a: any) => a.kind === 'shop_offline')).toHaveLength(1);
    expect(mails.filter((m) => m.subject?.includes('hop PC offline') || m.subject?.includes('hop pc offline'))).toHaveLength(4);
    expect(posts.every(verify)).toBe(true);

    // Paging: one per page, newest first, then the end; another company sees none and cannot filter on this shop.
    const first = await alertsOf(c.ownerToken, '?limit=1');
    expect(first.alerts).toHaveLength(1);
    const second = await alertsOf(c.ownerToken, `?limit=1&cursor=${first.next_cursor}`);
    expect(second.alerts[0].id).not.toBe(first.alerts[0].id);
    expect(second.next_cursor).toBeNull();
    expect((await alertsOf(other.ownerToken)).alerts).toEqual([]);
    const foreign = await h.request('GET', `/api/alerts?site=${shop.site_id}`, { token: other.ownerToken });
    expect(foreign.status).toBe(400);
  });
});
