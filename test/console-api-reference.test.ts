import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { consoleDir } from '../server/console/serve.js';
import { done, haveChromium, launchChromium, openWatched, signIn, until, warnIfNoChromium } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';

/**
 * The API reference page (/console/api-reference.html) in a real browser under the console's CSP: it renders every
 * operation of GET /api/openapi.json with no CSP violation, console error or page error, and the console links to
 * it. Needs `npm run build` (dist/console); without chromium the file skips with a printed reason.
 */

warnIfNoChromium('console-api-reference.test.ts');

let browser: Browser;
let h: Harness;
let co: Company;

describe.skipIf(!haveChromium)('API reference page', () => {
  beforeAll(async () => {
    if (!fs.existsSync(path.join(consoleDir(), 'api-reference.js'))) throw new Error('dist/console has no api-reference.js: run npm run build first');
    browser = await launchChromium();
    h = await startHarness();
    co = await h.company('Reference Co');
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('renders every operation of the document, served locally under the CSP', async () => {
    const doc = (await h.request('GET', '/api/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    const head = await fetch(`${h.url}/console/api-reference.html`);
    expect(head.headers.get('content-security-policy')).toContain("default-src 'self'");
    const w = await openWatched(browser, `${h.url}/console/api-reference.html`);
    await until(w.page, `document.querySelectorAll('article.op[id^="op-"]').length > 0`);
    expect(await w.page.locator('article.op[id^="op-"]').count()).toBe(operations);
    const login = w.page.locator('#op-postApiAuthLogin');
    await expect(login.locator('.path').textContent()).resolves.toBe('/api/auth/login');
    await expect(login.textContent()).resolves.toContain('SessionEnvelope');
    await expect(w.page.locator('#schema-SessionEnvelope').textContent()).resolves.toContain('refresh_token');
    await expect(w.page.locator('#schema-Arrival').textContent()).resolves.toContain('visit_id');
    await expect(w.page.locator('#op-getApiVisitsStream').textContent()).resolves.toContain('event: arrival');
    await done(w);
  });

  it('the console links to it', async () => {
    const w = await openWatched(browser, `${h.url}/`);
    await signIn(w.page, co.ownerEmail, co.ownerPassword);
    const link = w.page.getByRole('link', { name: 'API', exact: true });
    await link.waitFor();
    await expect(link.getAttribute('href')).resolves.toBe('/console/api-reference.html');
    await link.click();
    await until(w.page, `document.querySelectorAll('article.op').length > 0`);
    await done(w);
  });
});
