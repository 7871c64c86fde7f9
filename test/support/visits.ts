import type { MqttClient } from 'mqtt';
import type { EnrolResponse } from '../../shared/agent-api.js';
import type { VisitMessage } from '../../shared/messages.js';
import { upTopic } from '../../shared/topics.js';
import type { Harness } from './harness.js';
import { connectPc, enrol, openShop, upload, waitFor, type HeadOfficeReach } from './shop-pc.js';
import { pumpSse, type SseEvent } from './sse.js';

/** An opened, enrolled shop whose PC is connected to the broker: publishes visits like the agent (QoS 1). */
export interface ShopPc {
  shop: { site_id: string; slug: string; name: string };
  enrolment: EnrolResponse;
  client: MqttClient;
  companySlug: string;
  publish(msg: VisitMessage | string): Promise<void>;
  /** POST /api/agent/faces with the shop PC's token. */
  uploadFace(jpeg: Buffer): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/**
 * The shops' time zone for a test whose visits, minutes and days ago, must fall on "today", "yesterday" and "two days
 * ago" of the shops' calendar, and stay there while the file runs: Asia/Kolkata (head office's default) unless it is
 * 23:00 to 02:00 there, then America/New_York (12:30 to 16:30 at that moment). Without it such a test fails every day
 * from 18:30 UTC for as long as its visits reach back, when a visit 20 minutes ago was yesterday in Kolkata.
 */
export function zoneAwayFromMidnight(now = new Date()): string {
  const hour = Number(new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Kolkata', hour: 'numeric', hourCycle: 'h23' }).format(now));
  return hour >= 2 && hour < 23 ? 'Asia/Kolkata' : 'America/New_York';
}

export async function shopPc(h: HeadOfficeReach, ownerToken: string, companySlug: string, name: string, timezone?: string): Promise<ShopPc> {
  const shop = await openShop(h, ownerToken, { name, ...(timezone ? { timezone } : {}) });
  const e = await enrol(h, ownerToken, shop.slug);
  const client = await connectPc(h, e);
  const topic = upTopic(companySlug, shop.slug, 'visit');
  return {
    shop,
    enrolment: e,
    client,
    companySlug,
    async publish(msg) {
      await client.publishAsync(topic, typeof msg === 'string' ? msg : JSON.stringify(msg), { qos: 1 });
    },
    uploadFace: (jpeg) => upload(h, 'POST', '/api/agent/faces', e.token, jpeg),
    close: () => client.endAsync(true).catch(() => {}),
  };
}

/** Polls the feed until it holds `n` rows after `cursor` (or the tail), and returns them. */
export async function arrivals(h: Pick<Harness, 'request'>, token: string, n: number, query = '', timeoutMs = 5000): Promise<any[]> {
  let rows: any[] = [];
  await waitFor(
    async () => {
      const r = await h.request('GET', `/api/visits?limit=1000${query}`, { token });
      if (r.status !== 200) throw new Error(`feed: ${r.status} ${JSON.stringify(r.body)}`);
      rows = r.body.arrivals;
      return rows.length >= n;
    },
    timeoutMs,
  );
  return rows;
}

/** Waits until ingest has nothing queued, then a little more for the batch window. */
export async function settled(h: Harness): Promise<void> {
  await new Promise((r) => setTimeout(r, 30));
  await h.server.ingest.drained();
}

/**
 * Reads server-sent events from an open response: `next(n)` resolves with the next n events. `check` (the
 * harness's OpenAPI check) is run on each event `next` hands out.
 */
export function sseReader(res: Response, check?: (e: SseEvent) => Promise<void>) {
  const events: SseEvent[] = [];
  let waiter: (() => void) | undefined;
  const pump = pumpSse(res, (e) => {
    events.push(e);
    waiter?.();
  }).finally(() => waiter?.());
  let taken = 0;
  return {
    events,
    /** The next n `arrival` events (parsed), in order. */
    async next(n: number, timeoutMs = 5000): Promise<{ id: string; arrival: any }[]> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const got = events.slice(taken).filter((e) => e.event === 'arrival');
        if (got.length >= n) {
          const picked = got.slice(0, n);
          taken = events.indexOf(picked[picked.length - 1]!) + 1;
          for (const e of picked) await check?.(e);
          return picked.map((e) => ({ id: e.id!, arrival: JSON.parse(e.data) }));
        }
        if (Date.now() > end) throw new Error(`only ${got.length} of ${n} arrival events in time`);
        await new Promise<void>((r) => {
          waiter = r;
          setTimeout(r, 50);
        });
      }
    },
    async close() {
      await res.body!.cancel().catch(() => {});
      await pump;
    },
  };
}

/** Opens the arrival stream like `curl -N -H "Authorization: Bearer ..."`. */
export async function openStream(h: Pick<Harness, 'url' | 'checkEvent'>, token: string, query = '', headers: Record<string, string> = {}) {
  const ac = new AbortController();
  const res = await fetch(`${h.url}/api/visits/stream${query}`, { headers: { Authorization: `Bearer ${token}`, ...headers }, signal: ac.signal });
  const reader = res.ok ? sseReader(res, (e) => h.checkEvent('/api/visits/stream', e)) : undefined;
  return {
    res,
    reader: reader!,
    async close() {
      ac.abort();
      await reader?.close();
    },
  };
}
