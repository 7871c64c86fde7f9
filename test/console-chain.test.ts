import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { done, haveChromium, launchChromium, openWatched, overflowsSideways, signIn, until, warnIfNoChromium } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { enrol, openShop } from './support/shop-pc.js';

/**
 * The console's chain pages in a real browser against a real head office: a manager sets a shop's opening hours,
 * region and occupancy limit on its page (a malformed day is explained, nothing saved); the overview filters by
 * region; the busiest-hours heatmap marks the closed hours; the bell counts the open alerts (shop PCs enrolled
 * that never report: "shop PC offline") and lists them. Every outcome is checked through the API.
 */

warnIfNoChromium('console-chain.test.ts');

let browser: Browser;
let h: Harness;
let c: Company;

describe.skipIf(!haveChromium)('console: opening hours, regions, alerts', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    h = await startHarness({ FOOTFALL_ALERT_INTERVAL_S: 1, FOOTFALL_HEARTBEAT_INTERVAL_S: 1 });
    c = await h.company('Chain Mart');
    await openShop(h, c.ownerToken, { name: 'Lower Parel', timezone: 'UTC' });
    await openShop(h, c.ownerToken, { name: 'Thane West', timezone: 'UTC' });
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('sets opening hours, region and limit on the shop page; the overview filters by region; the heatmap shows closed hours', async () => {
    const w = await openWatched(browser, `${h.url}/#/shop/lower-parel`, /^Failed to load resource: the server responded with a status of (400|401) /);
    const { page } = w;
    await signIn(page, c.ownerEmail, c.ownerPassword);
    const form = page.locator('#shop-settings');
    await form.waitFor();
    await form.getByLabel('Region').fill('West');
    await form.getByLabel('Occupancy limit').fill('25');
    for (const day of ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']) await form.getByLabel(day, { exact: true }).fill('10:00-20:00');
    await form.getByLabel('Sunday', { exact: true }).fill('noon till late');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText(/Sunday: write the hours as 09:00-21:00/).waitFor();
    expect((await h.request('GET', '/api/sites/lower-parel', { token: c.ownerToken })).body.region).toBeNull();

    await form.getByLabel('Sunday', { exact: true }).fill('');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await form.getByText('Saved.').waitFor();
    const saved = (await h.request('GET', '/api/sites/lower-parel', { token: c.ownerToken })).body;
    expect(saved).toMatchObject({ region: 'West', occupancy_limit: 25 });
    expect(saved.opening_hours.mon).toEqual([{ open: '10:00', close: '20:00' }]);
    expect(saved.opening_hours.sun).toEqual([]);
    await page.locator('#shop-facts').getByText('Mon 10:00-20:00').waitFor();

    // Overview: the region filter keeps West's shop only.
    await page.goto(`${h.url}/#/`);
    const pick = page.locator('#region-filter');
    await pick.waitFor({ state: 'visible' });
    await page.locator('[data-shop="thane-west"]').waitFor();
    await pick.selectOption('West');
    await until(page, `document.querySelector('[data-shop="thane-west"]') === null && document.querySelector('[data-shop="lower-parel"]') !== null`);
    expect(page.url()).toContain('region=West');

    // Reports for the shop: the heatmap marks hours outside 10:00-20:00 as closed. It has a shop PC installed: a shop
    // without one gets no figures, only the way to install one (test/console-states.test.ts).
    await enrol(h, c.ownerToken, 'lower-parel');
    await page.goto(`${h.url}/#/reports?preset=7&site=lower-parel&tz=UTC&bucket=day`);
    await page.locator('#heatmap').waitFor();
    const cells = await page.locator('#heatmap td.heat').evaluateAll((tds) => tds.map((td) => [td.getAttribute('data-day'), Number(td.getAttribute('data-hour')), td.getAttribute('data-open')]));
    expect(cells.length).toBeGreaterThan(0);
    for (const [day, hour, open] of cells) expect(open, `${day} ${hour}`).toBe(String(day !== 'Sun' && hour! >= 10 && hour! < 20));
    await done(w);
  });

  it('the bell counts open alerts and lists them', async () => {
    await enrol(h, c.ownerToken, 'thane-west'); // a shop PC that never reports: offline (Lower Parel's is too)
    const openAlerts = async () => (await h.request('GET', '/api/alerts?state=open', { token: c.ownerToken })).body;
    await until0(async () => (await openAlerts()).alerts.some((a: any) => a.kind === 'shop_offline' && a.site_slug === 'thane-west'));
    const count = (await openAlerts()).open_count as number;
    expect(count).toBe(2);
    const w = await openWatched(browser, `${h.url}/#/`);
    const { page } = w;
    await signIn(page, c.ownerEmail, c.ownerPassword);
    const bell = page.locator('#alert-bell');
    await bell.locator('.count', { hasText: String(count) }).waitFor();
    await bell.click();
    const item = page.locator('#alerts-open li[data-kind="shop_offline"]', { hasText: 'Thane West' });
    await item.waitFor();
    expect(await item.innerText()).toMatch(/Shop PC offline · Thane West/);

    // My account: report e-mails, weekly by default for an owner; opting out.
    await page.goto(`${h.url}/#/account`);
    const emails = page.locator('#report-emails');
    await until(page, `document.querySelector('#report-emails select')?.disabled === false`);
    expect(await emails.locator('select').inputValue()).toBe('weekly');
    await emails.locator('select').selectOption('off');
    await emails.getByRole('button', { name: 'Save' }).click();
    await emails.getByText('You will get no report e-mails.').waitFor();
    expect((await h.request('GET', '/api/reports/subscription', { token: c.ownerToken })).body.frequency).toBe('off');
    await done(w);
  });

  it('at 360 px nothing scrolls sideways: the bell, the shop settings, report e-mails', async () => {
    const w = await openWatched(browser, `${h.url}/#/`, /^Failed to load resource: the server responded with a status of (400|401) /, { viewport: { width: 360, height: 740 } });
    const { page } = w;
    await signIn(page, c.ownerEmail, c.ownerPassword);
    await page.locator('#alert-bell').waitFor();
    await page.locator('[data-shop="lower-parel"]').waitFor();
    expect(await overflowsSideways(page)).toBe(false);
    for (const [hash, ready] of [
      ['#/shop/lower-parel', '#shop-settings'],
      ['#/account', '#report-emails'],
    ]) {
      await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
      await page.locator(ready!).waitFor();
      expect(await overflowsSideways(page), hash).toBe(false);
    }
    await done(w);
  });
});

async function until0(fn: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
