import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { VisitMessage } from '../shared/messages.js';
import { done, haveChromium, launchChromium, openWatched, overflowsSideways, signIn, until, warnIfNoChromium } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { settled, shopPc, zoneAwayFromMidnight, type ShopPc } from './support/visits.js';

/**
 * The reports page's comparison with the period before, visit length and age and gender bands, and the overview's
 * headline figures under the region filter, in Chromium against a real head office (SQLite, broker, HTTP) with
 * real shop PCs publishing visits over MQTT at known times. Every figure on the page is compared with the API's
 * answer to the same query.
 */

warnIfNoChromium('console-compare.test.ts');

let browser: Browser;
let h: Harness;
let c: Company;
let north: ShopPc;
let south: ShopPc;
/** The shops' zone: their "today" holds the visits of the last half hour (test/support/visits.ts). */
const zone = zoneAwayFromMidnight();

/** An unidentified visit `minutesAgo` that lasted `dwell` seconds, with the given attributes. */
function visit(minutesAgo: number, dwell: number, attributes: VisitMessage['attributes']): VisitMessage {
  const start = new Date(Date.now() - minutesAgo * 60_000);
  const end = new Date(start.getTime() + dwell * 1000).toISOString();
  return {
    visit_id: randomUUID(),
    occurred_at: start.toISOString(),
    camera_id: 'door',
    quality: 0.2,
    passed_gate: false,
    ...(attributes ? { attributes } : {}),
    track: { id: randomUUID(), first_seen_at: start.toISOString(), last_seen_at: end, frames: 5 },
  };
}

describe.skipIf(!haveChromium)('console: the period before, visit length, age and gender bands; the overview by region', () => {
  beforeAll(async () => {
    [browser, h] = await Promise.all([launchChromium(), startHarness()]);
    c = await h.company('Compare Mart');
    north = await shopPc(h, c.ownerToken, c.slug, 'North Mall', zone);
    south = await shopPc(h, c.ownerToken, c.slug, 'South Mall', zone);
    for (const [pc, region] of [
      [north, 'North'],
      [south, 'South'],
    ] as const) {
      expect((await h.request('PATCH', `/api/sites/${pc.shop.slug}`, { token: c.ownerToken, body: { region } })).status).toBe(200);
    }
    // The last minutes: three visits in North, one in South. Nine days ago (the seven days before): one in North.
    await north.publish(visit(30, 60, { gender: 'female', age: 30 }));
    await north.publish(visit(25, 120, { age: 16 }));
    await north.publish(visit(20, 600, { gender: 'male', age: 70 }));
    await south.publish(visit(15, 30, { gender: 'female', age: 22 }));
    await north.publish(visit(9 * 24 * 60, 100, { age: 50 }));
    await settled(h);
  });

  afterAll(async () => {
    await north?.close();
    await south?.close();
    await h?.close();
    await browser?.close();
  });

  it('reports: "+300 % vs previous 7 days", mean and median visit, bands per band and per shop, as the API says', async () => {
    const w = await openWatched(browser, `${h.url}/#/reports`);
    const { page } = w;
    await signIn(page, c.ownerEmail, c.ownerPassword);
    await page.locator('#report[data-query]').waitFor();
    await page.locator('#report-mix').waitFor();
    const query = await page.locator('#report').getAttribute('data-query');
    const r = (await h.request('GET', `/api/reports/footfall?${query}`, { token: c.ownerToken })).body;
    expect(r).toMatchObject({ visits: 4, previous: { visits: 1 }, change: { visits: 3, total: 3 } });

    // The change against the period before, after the figure: the API's ratio as a percentage.
    const visitors = page.locator('#report-totals [data-total="Visitors"]');
    expect(await visitors.locator('.value').innerText()).toBe('4');
    expect(await visitors.locator('.change').innerText()).toBe('+300 % vs previous 7 days');
    expect(await visitors.locator('.change').getAttribute('data-change')).toBe(String(r.change.total));
    expect(await page.locator('#report-totals p.muted').innerText()).toContain(`Compared with the previous 7 days, ${r.previous.from} to ${r.previous.to}.`);

    // Visit length: stays of 30, 60, 120 and 600 s.
    const mix = page.locator('#report-mix');
    expect(r).toMatchObject({ average_dwell_s: 202.5, median_dwell_s: 90 });
    expect(await mix.locator('[data-mix="average_dwell_s"]').getAttribute('data-seconds')).toBe('202.5');
    expect(await mix.locator('[data-mix="median_dwell_s"]').getAttribute('data-seconds')).toBe('90');
    expect(await mix.locator('[data-mix="median_dwell_s"] .value').innerText()).toBe('1 min 30 s');
    // The median against the period before (one stay of 100 s): −10 %.
    expect(await mix.locator('[data-mix="median_dwell_s"] .change').innerText()).toBe(`${Math.round(r.change.median_dwell_s * 100) > 0 ? '+' : '−'}${Math.abs(Math.round(r.change.median_dwell_s * 100))} % vs previous 7 days`);
    expect(await mix.locator('[data-known="gender-bands"]').innerText()).toBe(`(${r.with_gender * 100} % of visits had one)`);
    expect(await mix.locator('[data-known="age-bands"]').innerText()).toBe(`(${r.with_age * 100} % of visits had one)`);

    // Bands: each row the API's count, unknown included.
    const bands = async (id: string) => Object.fromEntries(await page.locator(`#${id} tbody tr`).evaluateAll((rows) => rows.map((tr) => [tr.getAttribute('data-band'), Number(tr.querySelector('[data-visits]')!.getAttribute('data-visits'))])));
    expect(await bands('age-bands')).toEqual(r.age);
    expect(await bands('gender-bands')).toEqual(r.gender);
    expect(r.gender).toEqual({ female: 2, male: 1, unknown: 1 });
    expect(r.age).toMatchObject({ under_18: 1, '18_24': 1, '25_34': 1, '65_plus': 1, unknown: 0 });

    // Per shop: visits and median as the report's `sites`.
    const shops = await page.locator('#mix-by-shop tbody tr').evaluateAll((rows) => rows.map((tr) => [tr.getAttribute('data-shop'), tr.children[1]!.textContent, tr.children[3]!.getAttribute('data-seconds')]));
    expect(shops).toEqual(r.sites.map((s: any) => [s.slug, String(s.visits), String(s.median_dwell_s)]));
    // The table per day: visits and the median visit of each day.
    const days = await page.locator('#report-table tbody tr').evaluateAll((rows) => rows.map((tr) => [tr.getAttribute('data-bucket'), tr.children[5]!.textContent, tr.children[6]!.getAttribute('data-seconds')]));
    expect(days).toEqual(r.points.map((p: any) => [p.bucket, String(p.visits), String(p.median_dwell_s)]));

    // Conversion: the same visitors and change; no purchases either time, so no change of purchasers.
    expect(await page.locator('#report-conversion [data-conversion="Visitors"] .change').innerText()).toBe('+300 % vs previous 7 days');
    expect(await page.locator('#report-conversion [data-conversion="Purchasers"] .change').count()).toBe(0);

    // On a phone (360 px) the page does not scroll sideways: the changes wrap, the tables stack (regions included).
    await page.setViewportSize({ width: 360, height: 740 });
    await page.locator('#regions').waitFor();
    expect(await overflowsSideways(page)).toBe(false);
    await done(w);
  });

  it('overview: the headline figures follow the region filter', async () => {
    const w = await openWatched(browser, `${h.url}/#/`);
    const { page } = w;
    await signIn(page, c.ownerEmail, c.ownerPassword);
    const today = page.locator('#headlines [data-period="today"] [data-figure="Visitors"] .value');
    await today.waitFor();
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date());
    const api = async (extra: string) => (await h.request('GET', `/api/reports/footfall?from=${day}&to=${day}&tz=${zone}${extra}`, { token: c.ownerToken })).body.total;
    const all = await api('');
    expect(await today.innerText()).toBe(String(all));
    await page.locator('#region-filter').selectOption('North');
    await until(page, `document.querySelector('#headlines .headlines')?.getAttribute('data-region') === 'North'`);
    const onlyNorth = await api('&region=North');
    expect(onlyNorth).toBeLessThan(all); // South's visitor is left out
    expect(await today.innerText()).toBe(String(onlyNorth));
    expect(await page.locator('#headlines .headlines-zone').innerText()).toContain('Shops in North only.');
    await done(w);
  });
});
