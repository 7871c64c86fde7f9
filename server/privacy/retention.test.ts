import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import { describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFace } from '../../test/support/faces.js';
import { connectPc, enrol, memberToken, openShop } from '../../test/support/shop-pc.js';
import { settled } from '../../test/support/visits.js';
import { addDays, localToUtc, todayIn } from '../reports/calendar.js';
import { sweepPrivacy, type PrivacySweeper } from './sweep.js';
import { statementOn } from '../db/statement.js';

/**
 * visit_retention_days (docs/privacy.md): old visits and crossings aged into footfall_counts by the privacy sweep, over
 * real ingest (the broker), a real database (either store) and real HTTP; the reports over the whole period before and after.
 */

/** Rows of a shop as stored (head office's own connection, not the API), before and/or from an instant. */
const count = async (h: Harness, table: 'visits' | 'crossings', shopId: string, before?: string, after?: string) => {
  const where = [`shop_id = ?`, before ? `occurred_at < ?` : '', after ? `occurred_at >= ?` : ''].filter(Boolean).join(' and ');
  const params = [shopId, before, after].filter((v) => v !== undefined);
  return (await statementOn(h.server.store, `select count(*) as n from ${table} where ${where}`).get<{ n: number }>(...params))!.n;
};

describe('visit_retention_days', () => {
  it('ages old visits and crossings into daily counts, across a restart mid-sweep, and the reports keep their figures', async () => {
    const faces = await realFaces();
    let h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1, FOOTFALL_METRICS_TOKEN: 'retention-metrics-token-0123456789' }, { keepDataDir: true });
    const dataDir = h.dataDir;
    const clients: MqttClient[] = [];
    try {
      const c: Company = await h.company('Ageing Co');
      const manager = await memberToken(h, c.ownerToken, 'manager');
      // Two shops, two zones: London (whole hours) and Kolkata (half hours: slots of 15 minutes must line up).
      const mk = async (name: string, timezone: string, region: string) => {
        const shop = await openShop(h, c.ownerToken, { name, timezone });
        expect((await h.request('PATCH', `/api/sites/${shop.slug}`, { token: c.ownerToken, body: { region } })).status).toBe(200);
        const e = await enrol(h, c.ownerToken, shop.slug);
        const client = await connectPc(h, e);
        clients.push(client);
        const send = (kind: 'visit' | 'crossing', msg: unknown) => client.publishAsync(upTopic(c.slug, shop.slug, kind), JSON.stringify(msg), { qos: 1 });
        return { shop, client, tz: timezone, send };
      };
      const london = await mk('Harbour', 'Europe/London', 'North');
      const kolkata = await mk('Park Street', 'Asia/Kolkata', 'East');
      const today = todayIn('Europe/London', new Date());
      /** A local wall time in a shop's zone, `daysAgo` days before today (London's date), as UTC ISO. */
      const at = (s: typeof london, daysAgo: number, hour: number, minute = 0) => new Date(localToUtc(s.tz, addDays(today, -daysAgo), hour) + minute * 60_000).toISOString();
      const visit = (s: typeof london, face: RealFace | undefined, when: string, dwellS = 0) => {
        const last = new Date(Date.parse(when) + dwellS * 1000).toISOString();
        return s.send('visit', visitOf(faces, face, { occurred_at: when, track: { id: randomUUID(), first_seen_at: when, last_seen_at: last, frames: 10 } }));
      };
      const cross = (s: typeof london, direction: 'in' | 'out', when: string) => s.send('crossing', { crossing_id: randomUUID(), occurred_at: when, camera_id: 'door', direction, track_id: 't' });
      const [p1, p2] = faces.same; // one person, two photos
      const q = faces.others[0]!;
      const staffFace = faces.others[1]!;
      const r = faces.others[2]!;

      // Ten days ago to yesterday. Retention 3: local days 4 or more days before today are aged.
      await visit(london, p1, at(london, 10, 10, 5), 120); // P's first visit ever
      await visit(london, p2, at(london, 10, 15, 20), 300); // P again that day (a new stay)
      await visit(london, undefined, at(london, 10, 11, 40), 60); // unidentified, below the gate
      await visit(london, q, at(london, 9, 9, 50), 30);
      await visit(london, staffFace, at(london, 9, 12, 0), 600);
      await visit(kolkata, q, at(kolkata, 9, 18, 30), 45); // Q in the other shop on the same London day
      await visit(kolkata, undefined, at(kolkata, 8, 23, 50));
      await visit(london, p1, at(london, 6, 17, 45), 90); // P returns
      await visit(london, r, at(london, 2, 13, 0), 20); // kept (2 days ago)
      await visit(kolkata, undefined, at(kolkata, 1, 10, 15)); // kept
      for (const [s, d, hr, m, dir] of [
        [london, 10, 10, 0, 'in'], [london, 10, 10, 1, 'in'], [london, 10, 16, 0, 'out'], [london, 9, 9, 45, 'in'], [london, 6, 17, 40, 'in'],
        [kolkata, 9, 18, 25, 'in'], [kolkata, 9, 19, 0, 'out'], [kolkata, 8, 23, 45, 'in'], [kolkata, 8, 23, 59, 'out'],
        [london, 2, 12, 55, 'in'], [kolkata, 1, 10, 10, 'in'],
      ] as const)
        await cross(s, dir, at(s, d, hr, m));
      await settled(h);
      const staffId = (await statementOn(h.server.store, 'select customer_id as c from visits where shop_id = ? and occurred_at = ?').get<{ c: string }>(london.shop.site_id, at(london, 9, 12, 0)))!.c;
      expect((await h.request('PATCH', `/api/visitors/${staffId}`, { token: manager, body: { staff: true } })).status).toBe(200);
      expect(await count(h, 'visits', london.shop.site_id)).toBe(7);
      expect(await count(h, 'crossings', kolkata.shop.site_id)).toBe(5);

      // Every report over the whole period, in several zones and buckets.
      const from = addDays(today, -12);
      const urls = [
        `/api/reports/footfall?from=${from}&to=${today}&site=${london.shop.slug}`,
        `/api/reports/footfall?from=${from}&to=${today}&site=${kolkata.shop.slug}`,
        `/api/reports/footfall?from=${from}&to=${today}&site=${kolkata.shop.slug}&tz=Asia/Kolkata`,
        `/api/reports/footfall?from=${addDays(today, -10)}&to=${addDays(today, -9)}&bucket=hour&site=${london.shop.slug}`,
        `/api/reports/footfall?from=${addDays(today, -9)}&to=${addDays(today, -8)}&bucket=hour&site=${kolkata.shop.slug}&tz=Asia/Kolkata`,
        `/api/reports/footfall?from=${from}&to=${today}&region=East`,
        `/api/reports/footfall?from=${from}&to=${today}&site=${london.shop.slug}&format=csv`,
        `/api/reports/footfall?from=${from}&to=${today}&bucket=week`,
        `/api/reports/footfall?from=${from}&to=${today}&bucket=month&tz=Asia/Kolkata`,
        `/api/reports/footfall?from=${from}&to=${today}`,
        `/api/reports/conversion?from=${from}&to=${today}`,
        `/api/reports/conversion?from=${from}&to=${today}&site=${kolkata.shop.slug}&format=csv`,
        `/api/reports/regions?from=${from}&to=${today}`,
      ];
      const reports = async () => {
        const out: unknown[] = [];
        for (const u of urls) {
          const res = await h.request('GET', u, { token: manager });
          expect(res.status).toBe(200);
          out.push(res.body);
        }
        return out;
      };
      // Aged visits keep their count and dwell but no attributes and no single stay: the age and gender bands, the
      // medians and the changes against the period before (which follow the people counted) are left out of the
      // comparison (docs/reports.md, "Dwell time"); the CSV's first ten columns (to average_dwell_s) stay the same.
      const LOST = ['median_dwell_s', 'age', 'gender', 'with_age', 'with_gender', 'change'];
      const kept = (x: any): any =>
        typeof x === 'string' ? x.split('\r\n').map((l) => l.split(',').slice(0, 10).join(',')).join('\r\n') : JSON.parse(JSON.stringify(x, (k, v) => (LOST.includes(k) ? undefined : v)));
      const before = await reports();
      const owner = () => h.login(c.ownerEmail, c.ownerPassword).then((e) => e.access_token);

      // Bad values: the error envelope; other roles: 403.
      const patch = async (token: string, body: unknown) => h.request('PATCH', '/api/company/privacy', { token, body });
      for (const bad of [0, -1, 2.5, 3651, '30', true]) {
        const res = await patch(c.ownerToken, { visit_retention_days: bad });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('visit_retention_days') });
      }
      expect((await patch(manager, { visit_retention_days: 3 })).status).toBe(403);
      expect((await patch(await memberToken(h, c.ownerToken, 'staff'), { visit_retention_days: 3 })).status).toBe(403);

      // The setting, stored with the sweep stopped (its first run is ours, cut short after one shop-day).
      await (h.server.deps.privacy as PrivacySweeper).stop();
      const set = await patch(c.ownerToken, { visit_retention_days: 3 });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ visit_retention_days: 3, sweep_pending: true });
      const agedLondon = at(london, 3, 0);
      const agedKolkata = at(kolkata, 3, 0);
      const old = async () => (await count(h, 'visits', london.shop.site_id, agedLondon)) + (await count(h, 'visits', kolkata.shop.site_id, agedKolkata));
      expect(await old()).toBe(8);
      const cut = await sweepPrivacy(h.server.deps, { maxBatches: 1 });
      expect(cut).toMatchObject({ complete: false, days: 1, visits: expect.any(Number) });
      expect(cut.visits).toBeGreaterThan(0);
      expect(await old()).toBe(8 - cut.visits); // one shop's oldest day aged, nothing else
      // Mid-sweep, the reports already answer the same (one day from counts, the others from rows).
      const mid = await reports();
      expect(mid.slice(1, 7).map(kept)).toEqual(before.slice(1, 7).map(kept));
      expect(kept((mid[0] as any).points)).toEqual(kept((before[0] as any).points));
      await Promise.all(clients.splice(0).map((x) => x.endAsync(true)));
      await h.close();

      // Started again on the same data: the sweep on start finishes the job.
      h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1, FOOTFALL_METRICS_TOKEN: 'retention-metrics-token-0123456789' }, { dataDir, keepDataDir: true });
      await h.server.deps.privacy!.request();
      expect(await count(h, 'visits', london.shop.site_id, agedLondon)).toBe(0);
      expect(await count(h, 'crossings', london.shop.site_id, agedLondon)).toBe(0);
      expect(await count(h, 'visits', kolkata.shop.site_id, agedKolkata)).toBe(0);
      expect(await count(h, 'crossings', kolkata.shop.site_id, agedKolkata)).toBe(0);
      // Newer rows untouched.
      expect(await count(h, 'visits', london.shop.site_id, undefined, agedLondon)).toBe(1);
      expect(await count(h, 'crossings', london.shop.site_id, undefined, agedLondon)).toBe(1);
      expect(await count(h, 'visits', kolkata.shop.site_id, undefined, agedKolkata)).toBe(1);
      expect(await count(h, 'crossings', kolkata.shop.site_id, undefined, agedKolkata)).toBe(1);
      const counted = await statementOn(h.server.store, 'select sum(visits) as v, sum(entries) as e, sum(exits) as x from footfall_counts').get();
      expect(counted).toEqual({ v: 7, e: 6, x: 3 }); // the staff visit is not counted

      const after = await reports();
      const [ldnDay, klkDay, klkLocal, ldnHour, klkHour, east, csv, week, month, company, conversion, convCsv, regions] = after as any[];
      const was = before as any[];
      // Exactly the same: every shop's days, every hour, the CSV, the region of one shop. The London shop's window
      // total counts P twice: once on an aged day and once on a day from rows (people are counted once per shop and
      // local day on aged days: the link between two visits of one person is gone, docs/privacy.md).
      expect(kept(ldnDay)).toEqual(kept({ ...was[0], total: was[0].total + 1 }));
      expect(kept(klkDay)).toEqual(kept(was[1]));
      expect(kept(klkLocal)).toEqual(kept(was[2]));
      expect(kept(ldnHour)).toEqual(kept(was[3]));
      expect(kept(klkHour)).toEqual(kept(was[4]));
      expect(kept(east)).toEqual(kept(was[5]));
      expect(kept(csv)).toEqual(kept(was[6]));
      expect(kept(convCsv)).toEqual(kept(was[11]));
      // Unique people over several days (or across shops on one day) are counted once per shop and local day on aged
      // days: the link between two visits of one person is gone (docs/privacy.md). Everything else is unchanged.
      const people = ['total', 'visitors', 'visitors_per_open_hour'];
      const strip = (x: any) => JSON.parse(JSON.stringify(x, (k, v) => (people.includes(k) || LOST.includes(k) || k === 'points' || k === 'previous' ? undefined : v)));
      for (const [i, now] of [[7, week], [8, month], [9, company]] as const) {
        expect(strip(now)).toEqual(strip(was[i]));
        expect(now.points.map((p: any) => [p.entries, p.exits, p.capture_rate])).toEqual(was[i].points.map((p: any) => [p.entries, p.exits, p.capture_rate]));
      }
      // The company's day report: Q in both shops on one day counts twice; P's two visits of one day once.
      expect(company.points.map((p: any) => p.visitors)).toEqual(was[9].points.map((p: any) => p.visitors + (p.bucket === addDays(today, -9) ? 1 : 0)));
      expect(company.total).toBe(was[9].total + 2); // P on two days, Q in two shops
      expect(kept(conversion)).toEqual(kept({ ...was[10], visitors: was[10].visitors + 2 }));
      expect(regions.regions.map((x: any) => [x.region, x.visits, x.entries])).toEqual(was[12].regions.map((x: any) => [x.region, x.visits, x.entries]));

      // Audited and counted; the setting says it is done.
      const token = await owner();
      const sweeps = (await h.request('GET', '/api/audit?action=privacy.', { token })).body.entries;
      const aged = sweeps.filter((e: any) => e.action === 'privacy.sweep');
      expect(aged.map((e: any) => e.detail.complete)).toEqual([true, false]);
      expect(aged.reduce((n: number, e: any) => n + e.detail.visits_aggregated, 0)).toBe(8); // the staff visit deleted too
      expect(aged.reduce((n: number, e: any) => n + e.detail.crossings_aggregated, 0)).toBe(9);
      expect(aged[0].detail).toMatchObject({ visit_retention_days: 3 });
      expect(sweeps.some((e: any) => e.action === 'privacy.update' && e.detail.to.visit_retention_days === 3)).toBe(true);
      expect((await h.request('GET', '/api/company/privacy', { token })).body).toMatchObject({ visit_retention_days: 3, sweep_pending: false });
      const metrics = await (await fetch(`${h.url}/metrics`, { headers: { Authorization: 'Bearer retention-metrics-token-0123456789' } })).text();
      expect(metrics).toMatch(/^footfall_privacy_removed_total\{kind="visit"\} [1-9]/m);
      expect(metrics).toMatch(/^footfall_privacy_removed_total\{kind="crossing"\} [1-9]/m);

      // Back to keeping everything: nothing more goes, the counts stay.
      expect((await patch(token, { visit_retention_days: null })).body.visit_retention_days).toBeNull();
      await h.server.deps.privacy!.request();
      expect(await count(h, 'visits', london.shop.site_id)).toBe(1);
      expect(await reports().then((x) => x[0])).toEqual(ldnDay);
    } finally {
      await Promise.all(clients.map((x) => x.endAsync(true))).catch(() => {});
      await h.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
