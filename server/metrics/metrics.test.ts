import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { loadConfig } from '../config.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { visitOf } from '../../test/support/faces.js';
import { heartbeat, openShop, waitFor } from '../../test/support/shop-pc.js';
import { settled, shopPc, type ShopPc } from '../../test/support/visits.js';

const TOKEN = 'scrape-0123456789abcdef0123456789';

/** The value of one sample of a Prometheus text exposition, by metric name and exact labels (`{a="b"}` or ''). */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics off (the default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  it('GET /metrics is a plain 404, token or not', async () => {
    for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Record<string, string>[]) {
      const r = await h.request('GET', '/metrics', { headers });
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ error: 'not_found' });
    }
  });
});

describe('metrics on (FOOTFALL_METRICS_TOKEN)', () => {
  let h: Harness;
  let a: Company;
  let pc: ShopPc;

  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_METRICS_TOKEN: TOKEN, FOOTFALL_INGEST_BATCH_MS: 5 });
    a = await h.company('Metrics Alpha');
    pc = await shopPc(h, a.ownerToken, a.slug, 'Andheri');
  });
  afterAll(async () => {
    await pc?.close();
    await h?.close();
  });

  const scrape = async (): Promise<string> => {
    const r = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return r.text();
  };

  it('refuses a scrape without the token, or with another, as 401 with a Bearer challenge', async () => {
    for (const [headers, says] of [
      [{}, /Send the metrics token/],
      [{ authorization: `Bearer ${TOKEN}x` }, /not the one/],
      [{ authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }, /Send the metrics token/],
    ] as const) {
      const r = await h.request('GET', '/metrics', { headers });
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ error: 'unauthorized', message: expect.stringMatching(says) });
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="footfall metrics"');
    }
  });

  it('shows the fleet from heartbeats, ingest outcomes, the broker, requests by route template, and the process', async () => {
    // A second shop with no PC yet; a heartbeat from the first shop's PC; visits: two stored, a repeat, a bad one.
    await openShop(h, a.ownerToken, { name: 'Bandra' });
    await pc.client.publishAsync(upTopic(a.slug, pc.shop.slug, 'heartbeat'), JSON.stringify(heartbeat({ cameras_up: 2, cameras_total: 3, queued: 5, dropped: 1 })), { qos: 1 });
    const first = visitOf({ model: 'none' }, undefined);
    await pc.publish(first);
    await pc.publish(first);
    await pc.publish(visitOf({ model: 'none' }, undefined, { visit_id: randomUUID() }));
    await pc.publish('{"not": "a visit"}');
    await settled(h);
    const shop = await h.request('GET', `/api/sites/${pc.shop.slug}/check`, { token: a.ownerToken });
    expect(shop.status).toBe(200);

    let text = '';
    await waitFor(async () => {
      text = await scrape();
      return sample(text, 'footfall_shop_pcs', '{state="online"}') === 1 && sample(text, 'footfall_ingest_received_total') === 4;
    });
    expect(sample(text, 'footfall_shop_pcs', '{state="offline"}')).toBe(0);
    expect(sample(text, 'footfall_shop_pcs', '{state="not_enrolled"}')).toBe(1);
    expect(sample(text, 'footfall_shop_pc_cameras', '{state="up"}')).toBe(2);
    expect(sample(text, 'footfall_shop_pc_cameras', '{state="down"}')).toBe(1);
    expect(sample(text, 'footfall_shop_pc_queued_visits')).toBe(5);
    expect(sample(text, 'footfall_shop_pc_dropped_visits')).toBe(1);
    expect(sample(text, 'footfall_ingest_visits_total', '{outcome="stored"}')).toBe(2);
    expect(sample(text, 'footfall_ingest_visits_total', '{outcome="duplicate"}')).toBe(1);
    expect(sample(text, 'footfall_ingest_visits_total', '{outcome="invalid"}')).toBe(1);
    expect(sample(text, 'footfall_ingest_batches_total')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'footfall_broker_clients')).toBe(1);
    expect(sample(text, 'footfall_arrival_streams')).toBe(0);
    expect(sample(text, 'footfall_live_viewers')).toBe(0);
    // Requests by route template: the shop's slug, the company and ids never become labels.
    expect(sample(text, 'footfall_http_requests_total', '{method="GET",route="/api/sites/:site/check",status="200"}')).toBe(1);
    expect(text).not.toContain(pc.shop.slug);
    expect(text).not.toContain(a.slug);
    expect(text).not.toContain(a.id);
    // The refused scrapes of the test before are counted too (a scraper with the wrong token shows up).
    expect(sample(text, 'footfall_http_requests_total', '{method="GET",route="/metrics",status="401"}')).toBe(3);
    // The process, from prom-client's default metrics.
    expect(sample(text, 'footfall_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(text).toMatch(/^footfall_nodejs_eventloop_lag_p99_seconds /m);
  });

  it('counts crossings by outcome: stored, duplicate, invalid; and those from an unknown camera', async () => {
    const topic = upTopic(a.slug, pc.shop.slug, 'crossing');
    const m = { crossing_id: randomUUID(), occurred_at: new Date().toISOString(), camera_id: 'door', direction: 'in' };
    await pc.client.publishAsync(topic, JSON.stringify(m), { qos: 1 });
    await pc.client.publishAsync(topic, JSON.stringify(m), { qos: 1 });
    await pc.client.publishAsync(topic, '{"direction": "in"}', { qos: 1 });
    const text = await scrape();
    expect(sample(text, 'footfall_ingest_crossings_total', '{outcome="stored"}')).toBe(1);
    expect(sample(text, 'footfall_ingest_crossings_total', '{outcome="duplicate"}')).toBe(1);
    expect(sample(text, 'footfall_ingest_crossings_total', '{outcome="invalid"}')).toBe(1);
    expect(sample(text, 'footfall_ingest_crossings_unknown_camera_total')).toBe(1); // the shop has no camera "door"
  });

  it('counts unknown paths as unmatched, and the scrapes themselves', async () => {
    await h.request('GET', `/api/no-such-thing/${randomUUID()}`);
    const text = await scrape();
    expect(sample(text, 'footfall_http_requests_total', '{method="GET",route="unmatched",status="404"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'footfall_http_requests_total', '{method="GET",route="/metrics",status="200"}')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^footfall_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/metrics"\} /m);
  });

  it('a metrics token must be long, and is never echoed back in the error', () => {
    expect(() => loadConfig({ FOOTFALL_METRICS_TOKEN: 'short-secret' })).toThrow(/FOOTFALL_METRICS_TOKEN.*24 to 512 printable characters/);
    expect(() => loadConfig({ FOOTFALL_METRICS_TOKEN: 'short-secret' })).not.toThrow(/short-secret/);
  });
});
