/**
 * npm run screenshots: refreshes the console's pictures in docs/console.md (docs/img/overview.png, reports.png,
 * live-grid.png). Starts a head office on a temporary folder (test/support/harness.ts), fills it with the browser
 * tests' chain (test/support/dashboard-seed.ts), streams two cameras as a shop PC would, and photographs the pages
 * in Debian's chromium at 1366 px. PNGs are palette-reduced with sharp to stay small.
 */
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import sharp from 'sharp';
import { seedChain } from '../test/support/dashboard-seed.js';
import { startHarness } from '../test/support/harness.js';
import { upload } from '../test/support/shop-pc.js';

const CHROMIUM = process.env.FOOTFALL_CHROMIUM ?? '/usr/bin/chromium';
const OUT = path.join(process.cwd(), 'docs', 'img');

/** A camera-like test picture: a gradient with a label. */
function frame(label: string, shade: number, t: number): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="360"><defs><linearGradient id="g" x1="0" x2="1"><stop offset="0" stop-color="rgb(${shade},${90 + (t % 40)},70)"/><stop offset="1" stop-color="rgb(30,40,${shade})"/></linearGradient></defs><rect width="640" height="360" fill="url(#g)"/><rect x="40" y="250" width="560" height="70" fill="rgba(0,0,0,0.35)"/><text x="60" y="297" font-family="sans-serif" font-size="34" fill="#fff">${label} · 10:${String(t % 60).padStart(2, '0')}</text></svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 70 }).toBuffer();
}

async function shoot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: true });
  const file = path.join(OUT, `${name}.png`);
  await sharp(png).resize({ width: 1100 }).png({ palette: true, quality: 70, compressionLevel: 9 }).toFile(file);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

async function main(): Promise<void> {
  const h = await startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1, FOOTFALL_IMAGES: 'local' });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const s = await seedChain(h);
  try {
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
