import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { upTopic } from '../shared/topics.js';
import { done, haveChromium, launchChromium, openWatched, overflowsSideways, signIn, until, warnIfNoChromium, type Watched } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { addCamera, enrol, heartbeat, jpeg, openShop, syntheticFace, upload, waitFor } from './support/shop-pc.js';
import { settled, shopPc, type ShopPc } from './support/visits.js';

/**
 * Body counting in the console (issue 20, docs/console.md "Counting line"), in Debian's chromium through
 * playwright-core against a real head office (SQLite file, broker, HTTP): the counting line drawn on a camera's
 * picture with real pointer events (a mouse drag on a 4:3 picture letterboxed in the 16:9 frame, taps on a touch
 * screen over a camera with no picture yet, the keyboard's numbers), the inside flipped, saved, checked through the
 * API, shown again after a reload, and removed; the overview's people in the shop now, moving while it is open as a
 * shop PC publishes crossings over the real broker, and reading nothing while the page is hidden; the reports'
 * entries, exits and capture rate, equal to the API's answer to the page's own query. Every page is
 * watched for console errors and CSP violations.
 */

warnIfNoChromium('console-bodies.test.ts');

/** Chromium logs the API's expected refusals. */
const EXPECTED = /^Failed to load resource: the server responded with a status of (400|401|404|409) /;
/** How far a drawn point may be from where the pointer went (0..1 of the picture: under a pixel of a 640-px frame is not reachable through a 300-px card, so 1 %). */
const NEAR = 0.01;

let browser: Browser;
let h: Harness;

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where the picture is drawn inside an `object-fit: contain` box (centred, letterboxed). */
function contentBox(box: Box, aspect: number): Box {
  const boxAspect = box.width / box.height;
  if (aspect < boxAspect) {
    const width = box.height * aspect;
    return { x: box.x + (box.width - width) / 2, y: box.y, width, height: box.height };
  }
  const height = box.width / aspect;
  return { x: box.x, y: box.y + (box.height - height) / 2, width: box.width, height };
}

const at = (b: Box, fx: number, fy: number): [number, number] => [b.x + fx * b.width, b.y + fy * b.height];

async function cameraLine(token: string, id: string): Promise<{ a: [number, number]; b: [number, number]; inside: string } | null | undefined> {
  const r = await h.request('GET', '/api/cameras', { token });
  return r.body.find((c: { id: string }) => c.id === id).tuning.line;
}

function expectNear(got: [number, number], want: [number, number]): void {
  expect(Math.abs(got[0] - want[0])).toBeLessThan(NEAR);
  expect(Math.abs(got[1] - want[1])).toBeLessThan(NEAR);
}

describe.skipIf(!haveChromium)('body counting in the console', () => {
  let chain: Company;
  let pc: ShopPc;
  let door: { id: string };
  let side: { id: string };

  beforeAll(async () => {
    browser = await launchChromium();
    h = await startHarness();
    chain = await h.company('Door Mart');
    pc = await shopPc(h, chain.ownerToken, chain.slug, 'Andheri');
    door = await addCamera(h, chain.ownerToken, pc.shop.slug, { camera_id: 'door', label: 'Front door' });
    side = await addCamera(h, chain.ownerToken, pc.shop.slug, { camera_id: 'side', label: 'Side door' });
    // A 4:3 picture: letterboxed in the card's 16:9 frame, so a line placed on the frame instead of the picture is seen.
    expect((await upload(h, 'PUT', '/api/agent/cameras/door/snapshot', pc.enrolment.token, await jpeg(640, 480))).status).toBe(200);
  });
  afterAll(async () => {
    await browser?.close();
    await pc?.close();
    await h?.close();
  });

  const open = (path: string, options = {}): Promise<Watched> => openWatched(browser, h.url + path, EXPECTED, options);

  async function shopPage(path = `/#/shop/${pc.shop.slug}`, options = {}): Promise<Watched> {
    const w = await open(path, options);
    await signIn(w.page, chain.ownerEmail, chain.ownerPassword);
    await w.page.locator('[data-camera="door"]').getByText('Front door').waitFor();
    return w;
  }

  async function box(page: Page, selector: string): Promise<Box> {
    const b = await page.locator(selector).boundingBox();
    if (!b) throw new Error(`${selector} is not shown`);
    return b;
  }

  it('draws the line on the picture with a mouse drag, flips the inside, saves it; a reload shows it again', async () => {
    const w = await shopPage();
    const { page } = w;
    const card = page.locator('[data-camera="door"]');
    await until(page, `document.querySelector('[data-camera="door"] .picture img.snapshot')?.naturalWidth === 640`);
    expect(await card.locator('.line-info').innerText()).toContain('No counting line');

    await card.getByRole('button', { name: 'Counting line…' }).click();
    const editor = card.getByRole('region', { name: 'Counting line of Front door' });
    await editor.getByText('People whose bodies cross this line are counted').waitFor();
    await until(page, `document.querySelector('[data-camera="door"] .line-stage img.snapshot')?.naturalWidth === 640`);
    expect(await editor.locator('.notice.info').isHidden()).toBe(true); // it has a picture

    // Press, drag and release with the mouse, from 20 %, 30 % to 80 %, 70 % of the picture (not of the 16:9 frame).
    await editor.locator('.line-stage').scrollIntoViewIfNeeded();
    const picture = contentBox(await box(page, '[data-camera="door"] .line-stage img.snapshot'), 4 / 3);
    await page.mouse.move(...at(picture, 0.2, 0.3));
    await page.mouse.down();
    await page.mouse.move(...at(picture, 0.5, 0.5), { steps: 5 });
    await page.mouse.move(...at(picture, 0.8, 0.7), { steps: 5 });
    await page.mouse.up();
    const status = editor.locator('.line-status');
    expect(await status.innerText()).toMatch(/^Line from A \(20(\.\d)?%, 30(\.\d)?%\) to B \(8\d(\.\d)?%, 7\d(\.\d)?%\)\. Inside: above the line/);
    expect(Number(await editor.getByLabel('A: from the left (%)').inputValue())).toBeCloseTo(20, -0.3);
    expect(Number(await editor.getByLabel('B: from the top (%)').inputValue())).toBeCloseTo(70, -0.3);
    // Walking from A (top left) to B (bottom right), the left is above: flipped, the inside is below.
    expect(await editor.getAttribute('data-inside')).toBe('left');
    await editor.getByRole('button', { name: 'Flip inside' }).click();
    expect(await editor.getAttribute('data-inside')).toBe('right');
    expect(await status.innerText()).toContain('Inside: below the line');
    // The arrow labelled "inside" is drawn below the line's middle on the picture.
    const insideLabel = await box(page, '[data-camera="door"] .line-stage .side-name.inside');
    const flipped = contentBox(await box(page, '[data-camera="door"] .line-stage img.snapshot'), 4 / 3);
    expect(insideLabel.y).toBeGreaterThan(flipped.y + 0.5 * flipped.height);

    await editor.getByRole('button', { name: 'Save line' }).click();
    await card.getByText(/^Counting line saved for Front door \(revision \d+\)/).waitFor();
    const saved = await cameraLine(chain.ownerToken, door.id);
    expect(saved?.inside).toBe('right');
    expectNear(saved!.a, [0.2, 0.3]);
    expectNear(saved!.b, [0.8, 0.7]);
    expect(await card.locator('.line-info').innerText()).toContain('Counting entries and exits');

    // A reload: the saved line is drawn over the card's picture at the same place of the picture, and the editor
    // starts from it.
    await page.reload();
    await card.getByText('Front door').waitFor();
    await until(page, `document.querySelector('[data-camera="door"] .picture img.snapshot')?.naturalWidth === 640`);
    await card.locator('.picture .counting-line[data-inside="right"]').waitFor();
    expect(await card.locator('.line-info').innerText()).toMatch(/Counting entries and exits.*the inside is below the line/);
    const shown = contentBox(await box(page, '[data-camera="door"] .picture img.snapshot'), 4 / 3);
    const ends = await card.locator('.picture .line-overlay .end').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => [r.x + r.width / 2, r.y + r.height / 2]));
    expect(ends).toHaveLength(2);
    const [ax, ay] = at(shown, saved!.a[0], saved!.a[1]);
    const [bx, by] = at(shown, saved!.b[0], saved!.b[1]);
    expect(Math.hypot(ends[0]![0]! - ax, ends[0]![1]! - ay)).toBeLessThan(2);
    expect(Math.hypot(ends[1]![0]! - bx, ends[1]![1]! - by)).toBeLessThan(2);
    await card.getByRole('button', { name: 'Counting line…' }).click();
    expect(Number(await editor.getByLabel('A: from the top (%)').inputValue())).toBeCloseTo(saved!.a[1] * 100, 1);
    expect(await editor.getAttribute('data-inside')).toBe('right');

    // Dragging an end moves only that end.
    await editor.locator('.line-stage').scrollIntoViewIfNeeded();
    const again = contentBox(await box(page, '[data-camera="door"] .line-stage img.snapshot'), 4 / 3);
    await page.mouse.move(...at(again, saved!.b[0], saved!.b[1]));
    await page.mouse.down();
    await page.mouse.move(...at(again, 0.9, 0.5), { steps: 5 });
    await page.mouse.up();
    expect(Number(await editor.getByLabel('B: from the left (%)').inputValue())).toBeCloseTo(90, -0.3);
    expect(Number(await editor.getByLabel('A: from the left (%)').inputValue())).toBeCloseTo(saved!.a[0] * 100, 1);
    await editor.getByRole('button', { name: 'Close' }).click();
    expect(await editor.count()).toBe(0);
    expect((await cameraLine(chain.ownerToken, door.id))?.b[0]).toBe(saved!.b[0]); // closed without saving
    await done(w);
  });

  it('on a touch screen, a camera with no picture yet: a blank frame, two taps make the line', async () => {
    const w = await shopPage(`/#/shop/${pc.shop.slug}`, { hasTouch: true, isMobile: true, viewport: { width: 390, height: 844 } });
    const { page } = w;
    const card = page.locator('[data-camera="side"]');
    await card.getByRole('button', { name: 'Counting line…' }).tap();
    const editor = card.getByRole('region', { name: 'Counting line of Side door' });
    expect(await editor.locator('.notice.info').innerText()).toMatch(/^Side door has sent no picture yet .* blank frame of the usual 16:9 shape/);
    const frame = await box(page, '[data-camera="side"] .line-stage .snapshot-blank');
    expect(frame.width / frame.height).toBeCloseTo(16 / 9, 1);
    expect(await overflowsSideways(page)).toBe(false); // the editor fits a phone
    await editor.locator('.line-overlay').scrollIntoViewIfNeeded();
    const blank = await box(page, '[data-camera="side"] .line-stage .snapshot-blank');
    await page.touchscreen.tap(...at(blank, 0.5, 0.1));
    expect(await editor.locator('.line-status').innerText()).toMatch(/^First end at 50%, 1\d(\.\d)?%: now click or tap the other end\.$/);
    await page.touchscreen.tap(...at(blank, 0.5, 0.9));
    expect(await editor.locator('.line-status').innerText()).toMatch(/^Line from A .* Inside: to the right of the line\.$/); // walking down, the left is the picture's right
    await editor.getByRole('button', { name: 'Save line' }).tap();
    await card.getByText(/^Counting line saved for Side door/).waitFor();
    const saved = await cameraLine(chain.ownerToken, side.id);
    expect(saved?.inside).toBe('left');
    expectNear(saved!.a, [0.5, 0.1]);
    expectNear(saved!.b, [0.5, 0.9]);
    await done(w);
  });

  it('by keyboard: the ends typed in percent; a too-short line is refused in the page; the line removed', async () => {
    const w = await shopPage();
    const { page } = w;
    const card = page.locator('[data-camera="side"]');
    await card.getByRole('button', { name: 'Counting line…' }).focus();
    await page.keyboard.press('Enter');
    const editor = card.getByRole('region', { name: 'Counting line of Side door' });
    await editor.getByLabel('A: from the left (%)').waitFor();
    const type = async (label: string, value: string) => {
      await editor.getByLabel(label).focus();
      await page.keyboard.press('Control+A');
      await page.keyboard.type(value);
    };
    await type('A: from the left (%)', '10');
    await type('A: from the top (%)', '60');
    await type('B: from the left (%)', '12');
    await type('B: from the top (%)', '61');
    await editor.getByRole('button', { name: 'Save line' }).focus();
    await page.keyboard.press('Enter');
    await editor.getByText('The line is too short').waitFor();
    await type('B: from the left (%)', '90');
    await page.keyboard.press('ArrowUp'); // the number steps by 0.1
    expect(await editor.locator('.line-status').innerText()).toMatch(/^Line from A \(10%, 60%\) to B \(90\.1%, 61%\)\. Inside: above the line/);
    await editor.getByRole('button', { name: 'Save line' }).focus();
    await page.keyboard.press('Enter');
    await card.getByText(/^Counting line saved for Side door/).waitFor();
    expect(await cameraLine(chain.ownerToken, side.id)).toEqual({ a: [0.1, 0.6], b: [0.901, 0.61], inside: 'left' });

    // Removing it: a confirmation in the page, then the API has no line and the card says so.
    await card.getByRole('button', { name: 'Counting line…' }).click();
    await editor.getByRole('button', { name: 'Remove line…' }).click();
    await editor.getByRole('group', { name: 'Confirm removing the counting line of Side door' }).getByRole('button', { name: 'Remove line' }).click();
    await card.getByText('Counting line removed from Side door: it counts no entries or exits now.').waitFor();
    expect(await cameraLine(chain.ownerToken, side.id)).toBeNull();
    expect(await card.locator('.line-info').innerText()).toContain('No counting line');
    expect(await card.locator('.picture .counting-line').count()).toBe(0);
    await done(w);
  });

  it('the overview: people in the shop now and today’s entries and exits, live while visible; a shop without a line gets a hint', async () => {
    // A company of its own: two shops, one with a counting line (set through the API), one without.
    const own = await h.company('Count Co');
    const juhu = await shopPc(h, own.ownerToken, own.slug, 'Juhu');
    const bandra = await shopPc(h, own.ownerToken, own.slug, 'Bandra');
    try {
      const cam = await addCamera(h, own.ownerToken, juhu.shop.slug, { camera_id: 'entrance' });
      await addCamera(h, own.ownerToken, bandra.shop.slug, { camera_id: 'entrance' });
      const line = { a: [0.1, 0.5], b: [0.9, 0.5], inside: 'right' };
      expect((await h.request('PATCH', `/api/cameras/${cam.id}`, { token: own.ownerToken, body: { tuning: { line } } })).status).toBe(200);
      const topic = upTopic(own.slug, juhu.shop.slug, 'crossing');
      const cross = (direction: 'in' | 'out') =>
        juhu.client.publishAsync(topic, JSON.stringify({ crossing_id: randomUUID(), occurred_at: new Date(Date.now() - 2000).toISOString(), camera_id: 'entrance', direction, track_id: `t${randomUUID().slice(0, 8)}` }), { qos: 1 });

      const w = await open('/');
      const { page } = w;
      await signIn(page, own.ownerEmail, own.ownerPassword);
      const juhuCard = page.locator(`[data-shop="${juhu.shop.slug}"]`);
      await juhuCard.locator('.door[data-occupancy="0"]').waitFor();
      expect(await juhuCard.locator('.door').innerText()).toMatch(/^0 in the shop now\s+Today: 0 entries, 0 exits$/);
      const bandraCard = page.locator(`[data-shop="${bandra.shop.slug}"]`);
      expect(await bandraCard.locator('.door').innerText()).toMatch(/^Draw a counting line to count entries/);
      expect(await bandraCard.getByRole('link', { name: 'Draw a counting line to count entries' }).getAttribute('href')).toBe(`#/shop/${bandra.shop.slug}`);
      expect(await bandraCard.locator('[data-occupancy]').count()).toBe(0); // no 0 that looks like an empty shop

      // Three people walk in and one out, published by the shop PC: the open page shows it without a reload.
      for (const d of ['in', 'in', 'out', 'in'] as const) await cross(d);
      await until(page, `document.querySelector('[data-shop="${juhu.shop.slug}"] .door')?.getAttribute('data-occupancy') === '2'`, 15_000);
      expect(await juhuCard.locator('.door').innerText()).toMatch(/^2 in the shop now\s+Today: 3 entries, 1 exit$/);
      const sites = (await h.request('GET', '/api/sites', { token: own.ownerToken })).body as { slug: string; occupancy: number | null; entries_today: number | null; exits_today: number | null }[];
      expect(sites.find((x) => x.slug === juhu.shop.slug)).toMatchObject({ occupancy: 2, entries_today: 3, exits_today: 1 });
      expect(sites.find((x) => x.slug === bandra.shop.slug)).toMatchObject({ occupancy: null, entries_today: null, exits_today: null });

      // Hidden (another tab in front): the page asks head office nothing, so it still shows 2 after two more exits.
      // Counted from the moment it is hidden: a live read the page started just before is not one it asked hidden.
      const asked: string[] = [];
      await page.evaluate(`Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' }); document.dispatchEvent(new Event('visibilitychange'))`);
      page.on('request', (r) => asked.push(r.url()));
      await cross('out');
      await cross('out');
      await settled(h);
      await new Promise((r) => setTimeout(r, 6500)); // longer than the 5-s live period
      expect(asked.filter((u) => u.includes('/api/'))).toEqual([]);
      expect(await juhuCard.locator('.door').getAttribute('data-occupancy')).toBe('2');
      // Visible again: read at once.
      await page.evaluate(`Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' }); document.dispatchEvent(new Event('visibilitychange'))`);
      await until(page, `document.querySelector('[data-shop="${juhu.shop.slug}"] .door')?.getAttribute('data-occupancy') === '0'`);
      expect(await juhuCard.locator('.door').innerText()).toMatch(/^0 in the shop now\s+Today: 3 entries, 3 exits$/);
      expect(asked.filter((u) => u.endsWith('/api/sites')).length).toBeGreaterThanOrEqual(1);

      // The shop PC cannot count (its person model is missing): its heartbeat says so and the card shows it, live.
      const problem = 'person detector would not load: No person detector model installed in /var/lib/footfall/models (bodies.json is missing). Run footfall models fetch first';
      await juhu.client.publishAsync(upTopic(own.slug, juhu.shop.slug, 'heartbeat'), JSON.stringify(heartbeat({ door_counting_problem: problem })));
      await juhuCard.locator('.door-problem').waitFor({ timeout: 15_000 });
      expect(await juhuCard.locator('.door-problem').innerText()).toBe(`Entries and exits are not being counted now. The shop PC says: ${problem}.`);
      await juhu.client.publishAsync(upTopic(own.slug, juhu.shop.slug, 'heartbeat'), JSON.stringify(heartbeat()));
      await juhuCard.locator('.door-problem').waitFor({ state: 'detached', timeout: 15_000 });
      await done(w);
    } finally {
      await juhu.close();
      await bandra.close();
    }
  });

  it('reports: entries, exits and capture rate in the totals, the chart and the table, as the API answers; a shop without a line gets the hint', async () => {
    const own = await h.company('Report Co');
    const powai = await shopPc(h, own.ownerToken, own.slug, 'Powai');
    try {
      const thane = await openShop(h, own.ownerToken, { name: 'Thane' });
      await enrol(h, own.ownerToken, thane.slug); // a shop PC installed: a shop without one gets no figures at all
      const cam = await addCamera(h, own.ownerToken, powai.shop.slug, { camera_id: 'door' });
      expect((await h.request('PATCH', `/api/cameras/${cam.id}`, { token: own.ownerToken, body: { tuning: { line: { a: [0, 0.6], b: [1, 0.6], inside: 'left' } } } })).status).toBe(200);
      const now = () => new Date(Date.now() - 2000).toISOString();
      // Four people in, one out; two faces recognised (two customers) and one person not identified.
      for (const direction of ['in', 'in', 'in', 'out', 'in']) {
        await powai.client.publishAsync(upTopic(own.slug, powai.shop.slug, 'crossing'), JSON.stringify({ crossing_id: randomUUID(), occurred_at: now(), camera_id: 'door', direction }), { qos: 1 });
      }
      for (const who of [1, 2, null]) {
        await powai.publish({ visit_id: randomUUID(), occurred_at: now(), camera_id: 'door', ...(who === null ? { quality: 0.2, passed_gate: false } : { embedding: syntheticFace(who), recognition_model: 'test-model', quality: 0.9, passed_gate: true }) });
      }
      await settled(h);
      await waitFor(async () => (await h.request('GET', `/api/reports/footfall?site=${powai.shop.slug}`, { token: own.ownerToken })).body.total === 3, 5000);

      const w = await open(`/#/reports?preset=7&bucket=day&site=${powai.shop.slug}`);
      const { page } = w;
      await signIn(page, own.ownerEmail, own.ownerPassword);
      await page.locator('#door-report').waitFor();
      const query = await page.locator('#report').getAttribute('data-query');
      const api = (await h.request('GET', `/api/reports/footfall?${query}`, { token: own.ownerToken })).body as { entries: number; exits: number; capture_rate: number | null; points: { bucket: string; entries: number; exits: number; capture_rate: number | null }[] };
      expect(api).toMatchObject({ entries: 4, exits: 1, capture_rate: 0.5 });
      expect(await page.locator('[data-total="Entries"]').innerText()).toBe('4');
      expect(await page.locator('[data-total="Exits"]').innerText()).toBe('1');
      expect(await page.locator('[data-total="Capture rate"]').innerText()).toBe('50%');
      // One pair of bars and one table row per point, with the API's numbers.
      const pairs = await page.locator('#door-chart g.pair').evaluateAll((els) => els.map((e) => [e.getAttribute('data-bucket'), Number(e.getAttribute('data-entries')), Number(e.getAttribute('data-exits'))]));
      expect(pairs).toEqual(api.points.map((p) => [p.bucket, p.entries, p.exits]));
      const rows = await page.locator('#door-table tbody tr').evaluateAll((els) => els.map((e) => [e.getAttribute('data-bucket'), ...Array.from(e.querySelectorAll('td')).map((td) => (td as { textContent: string | null }).textContent)]));
      expect(rows).toEqual(api.points.map((p) => [p.bucket, String(p.entries), String(p.exits), p.capture_rate === null ? '—' : `${Math.round(p.capture_rate * 1000) / 10}%`]));
      expect(rows.filter((r) => r[1] !== '0')).toHaveLength(1); // today's
      const today = api.points.find((p) => p.entries > 0)!;
      expect(await page.locator(`#door-chart g.pair[data-bucket="${today.bucket}"] title`).textContent()).toBe(`${today.bucket}: 4 entries, 1 exit, capture rate 50%`);
      // The entries bar is four times as tall as the exits bar.
      const heights = await page.locator(`#door-chart g.pair[data-bucket="${today.bucket}"] rect:not(.hit)`).evaluateAll((els) => els.map((e) => Number(e.getAttribute('height'))));
      expect(heights[0]! / heights[1]!).toBeCloseTo(4, 5);

      // A shop with no counting line: the hint, no zeros.
      await page.getByLabel('Shop').selectOption(thane.slug);
      await page.getByRole('button', { name: 'Show' }).click();
      await page.locator('#door-report').getByText('No camera of this shop has a counting line').waitFor();
      await page.locator('#report[data-query*="site=thane"]').waitFor();
      expect(await page.locator('[data-total="Entries"]').count()).toBe(0);
      expect(await page.locator('#door-chart').count()).toBe(0);
      await done(w);
    } finally {
      await powai.close();
    }
  });
});
