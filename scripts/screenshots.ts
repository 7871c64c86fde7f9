/**
 * npm run screenshots: refreshes the console's pictures in docs/console.md (docs/img/overview.png, reports.png,
 * live-grid.png, line-editor.png). Starts a head office on a temporary folder (test/support/harness.ts), fills it with
 * the browser tests' chain (test/support/dashboard-seed.ts), gives Bandra's door camera a counting line and a month of
 * entries and exits (crossings published as its shop PC would), streams two cameras as a shop PC would, and
 * photographs the pages in Debian's chromium at 1366 px. PNGs are palette-reduced with sharp to stay small.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { launchChromium } from '../test/support/browser.js';
import { seedChain } from '../test/support/dashboard-seed.js';
import { startHarness } from '../test/support/harness.js';
import { upload } from '../test/support/shop-pc.js';
import { settled, type ShopPc } from '../test/support/visits.js';
import type { Harness } from '../test/support/harness.js';
import { upTopic } from '../shared/topics.js';

const OUT = path.join(process.cwd(), 'docs', 'img');

/** A camera-like test picture: a gradient with a label. */
function frame(label: string, shade: number, t: number): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="360"><defs><linearGradient id="g" x1="0" x2="1"><stop offset="0" stop-color="rgb(${shade},${90 + (t % 40)},70)"/><stop offset="1" stop-color="rgb(30,40,${shade})"/></linearGradient></defs><rect width="640" height="360" fill="url(#g)"/><rect x="40" y="250" width="560" height="70" fill="rgba(0,0,0,0.35)"/><text x="60" y="297" font-family="sans-serif" font-size="34" fill="#fff">${label} · 10:${String(t % 60).padStart(2, '0')}</text></svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 70 }).toBuffer();
}

/**
 * Body counting for the pictures: a counting line across Bandra's door (set through the API) and 31 days of people
 * walking in and out at shop hours; today some are still inside.
 */
async function doorCrossings(h: Harness, token: string, companySlug: string, pc: ShopPc): Promise<void> {
  const cams = (await h.request('GET', '/api/cameras', { token })).body as { id: string; camera_id: string; site_id: string }[];
  const door = cams.find((c) => c.camera_id === 'door' && c.site_id === pc.shop.site_id)!;
  const line = { a: [0.12, 0.62], b: [0.9, 0.55], inside: 'right' };
  const r = await h.request('PATCH', `/api/cameras/${door.id}`, { token, body: { tuning: { line } } });
  if (r.status !== 200) throw new Error(`line: ${r.status}`);
  await upload(h, 'PUT', '/api/agent/cameras/door/snapshot', pc.enrolment.token, await frame('Front door', 170, 0));
  const DAY = 86_400_000;
  const now = Date.now();
  const istMidnight = Math.floor((now + 5.5 * 3600_000) / DAY) * DAY - 5.5 * 3600_000;
  let seed = 11;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const topic = upTopic(companySlug, pc.shop.slug, 'crossing');
  const cross = (at: number, direction: 'in' | 'out') =>
    pc.client.publishAsync(topic, JSON.stringify({ crossing_id: randomUUID(), occurred_at: new Date(at).toISOString(), camera_id: 'door', direction }), { qos: 1 });
  for (let d = 30; d >= 0; d--) {
    const n = 10 + Math.floor(rand() * 8);
    for (let i = 0; i < n; i++) {
      const at = istMidnight - d * DAY + (10 + Math.floor(Math.pow(rand(), 0.6) * 11)) * 3600_000 + Math.floor(rand() * 3600_000);
      if (at > now - 60_000) continue;
      await cross(at, 'in');
      const out = at + (5 + Math.floor(rand() * 40)) * 60_000;
      if (out < now - 60_000 && !(d === 0 && i % 3 === 0)) await cross(out, 'out');
    }
  }
  // Today: a few inside just now.
  for (let i = 0; i < 3; i++) await cross(now - (i + 2) * 60_000, 'in');
  await settled(h);
}

async function shoot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: true });
  const file = path.join(OUT, `${name}.png`);
  await sharp(png).resize({ width: 1100 }).png({ palette: true, quality: 70, compressionLevel: 9 }).toFile(file);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

async function main(): Promise<void> {
  const h = await startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1, FOOTFALL_IMAGES: 'local' });
  const browser = await launchChromium();
  const s = await seedChain(h);
  try {
    await doorCrossings(h, s.chain.ownerToken, s.chain.slug, s.bandra);
    const context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
    const page = await context.newPage();
    await page.goto(h.url + '/');
    await page.getByLabel('Email').fill(s.chain.ownerEmail);
    await page.getByLabel('Password').fill(s.chain.ownerPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#shops [data-shop]').first().waitFor({ timeout: 20_000 });
    // How long the pages take to fill (printed for docs/console.md; not a test).
    let t = Date.now();
    await page.evaluate(`location.hash = '#/reports'`);
    await page.locator('#report-form').waitFor();
    await page.evaluate(`location.hash = '#/'`);
    await page.locator('#headlines .headline').first().waitFor({ timeout: 20_000 });
    const headlinesMs = Date.now() - t;
    await page.locator('#shop-ranking').waitFor({ timeout: 20_000 });
    const rankingMs = Date.now() - t;
    await shoot(page, 'overview');

    t = Date.now();
    await page.evaluate(`location.hash = '#/reports?preset=30&bucket=day&tz=Asia%2FKolkata'`);
    await page.locator('#report-totals').waitFor({ timeout: 20_000 });
    const totalsMs = Date.now() - t;
    await page.locator('#heatmap').waitFor({ timeout: 20_000 });
    await page.locator('#over-time-chart canvas').waitFor({ timeout: 20_000 });
    await page.locator('#side-table').waitFor({ timeout: 20_000 });
    const reportMs = Date.now() - t;
    console.log(`overview: headline figures in ${headlinesMs} ms, ranking in ${rankingMs} ms; reports (30 days, 3 shops): totals in ${totalsMs} ms, everything (heatmap, 30 conversion points, side by side) in ${reportMs} ms`);
    await shoot(page, 'reports');

    // The counting line editor on Bandra's door camera.
    await page.evaluate(`location.hash = '#/shop/${s.bandra.shop.slug}'`);
    const card = page.locator('[data-camera="door"]');
    await card.getByRole('button', { name: 'Counting line…' }).click();
    for (let i = 0; i < 100 && !(await page.evaluate(`document.querySelector('[data-camera="door"] .line-stage img.snapshot')?.naturalWidth > 0`)); i++) await new Promise((r) => setTimeout(r, 100));
    const png = await card.screenshot();
    await sharp(png).png({ palette: true, quality: 70, compressionLevel: 9 }).toFile(path.join(OUT, 'line-editor.png'));
    console.log('wrote docs/img/line-editor.png');

    await page.evaluate(`location.hash = '#/live/${s.bandra.shop.slug}'`);
    await page.locator('#live-grid .live-tile').first().waitFor();
    for (let t = 0; t < 40; t++) {
      for (const [cam, label, shade] of [['door', 'Front door', 170], ['till', 'Till', 90]] as const) {
        await upload(h, 'POST', `/api/agent/live/${cam}/frames`, s.bandra.enrolment.token, await frame(label, shade, t));
      }
      const both = await page.evaluate(`[...document.querySelectorAll('#live-grid img.snapshot')].filter((i) => i.naturalWidth > 0).length === 2`);
      if (both && t > 5) break;
      await new Promise((r) => setTimeout(r, 150));
    }
    await shoot(page, 'live-grid');
    await context.close();
  } finally {
    await s.stop();
    await browser.close();
    await h.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
