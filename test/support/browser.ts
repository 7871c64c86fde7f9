import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { onPath } from '../../agent/capture/ffmpeg-bin.js';
import { noteSkip } from './skips.js';

/**
 * Helpers for the console's browser tests (Debian's chromium driven by playwright-core): a page in a fresh context
 * (empty storage) watched for console errors, uncaught exceptions and CSP violations, signing in, and the stored
 * session. Without `chromium-headless-shell` or `chromium` on PATH (or FOOTFALL_CHROMIUM) the test files skip with a
 * printed reason.
 */

/**
 * FOOTFALL_CHROMIUM, else Debian's `chromium-headless-shell` on PATH, else Debian's `chromium`. The headless shell (the
 * same Chromium without the desktop browser around it, what Playwright itself uses for headless runs) was measured
 * against the full browser on this 2-core machine, 2026-11-29: test/console-dashboard.test.ts alone took 43 s of CPU
 * and 75 s against 66 s and 100 s; console-manage.test.ts 18 s against 24 s.
 */
const CHROMIUM = process.env.FOOTFALL_CHROMIUM ?? onPath('chromium-headless-shell') ?? onPath('chromium') ?? 'chromium';
export const haveChromium = CHROMIUM.includes(path.sep) && fs.existsSync(CHROMIUM);

/**
 * Debian's Chromium, headless, as every console test launches it. Switches that might make it cheaper were measured
 * and left out (test/console-manage.test.ts alone, 2026-11-29): `--disable-gpu`, `--disable-site-isolation-trials
 * --renderer-process-limit=1` took the same 25-27 s of CPU in all as none (renderer 6-8 s, browser process 5 s).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** Notes why a browser test file is skipped (call at the top of the file); printed once, with a count, at the end of the run. */
export function warnIfNoChromium(file: string): void {
  if (!haveChromium) noteSkip(`test/${file}`, 'no chromium (apt-get install chromium-headless-shell, or chromium, or set FOOTFALL_CHROMIUM)');
}

/** Failed fetches the console makes on purpose (a wrong password, an expired token) are logged by Chromium. */
export const EXPECTED_NETWORK = /^Failed to load resource: the server responded with a status of (401|403|404|409|429) /;

export interface Watched {
  page: Page;
  context: BrowserContext;
  problems: string[];
}

/** Opens `url` in a fresh context (`options`: a touch screen, another viewport); every console error or warning, page error and CSP violation is collected. */
export async function openWatched(browser: Browser, url: string, expected: RegExp = EXPECTED_NETWORK, options: BrowserContextOptions = {}): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1024, height: 768 }, ...options });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if ((m.type() === 'error' || m.type() === 'warning') && !expected.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Runs before the console's own code in every document of the page (the CSP does not apply to it).
  await page.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));`);
  await page.goto(url);
  return { page, context, problems };
}

/** Closes the context and fails the test if anything went wrong on the page meanwhile. */
export async function done(w: Watched): Promise<void> {
  await w.context.close();
  expect(w.problems).toEqual([]);
}

export async function signIn(page: Page, email: string, password: string, remember = false): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  if (remember) await page.getByLabel('Keep me signed in on this computer').check();
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The session the console keeps in localStorage or sessionStorage (null when none). */
export async function stored(page: Page, where: 'localStorage' | 'sessionStorage'): Promise<{ access_token: string; refresh_token: string } | null> {
  const text = (await page.evaluate(`${where}.getItem('footfall.session')`)) as string | null;
  return text ? JSON.parse(text) : null;
}

/**
 * Waits until an expression is true in the page. page.waitForFunction would poll it with eval inside the page,
 * which the console's CSP refuses; page.evaluate runs it through the DevTools protocol instead.
 */
export async function until(page: Page, expression: string, timeoutMs = 15_000): Promise<void> {
  // Generous (it returns as soon as the expression holds: only a failure waits it out) and on the monotonic clock:
  // Chromium and head office share 2 loaded cores with the other test files.
  const end = performance.now() + timeoutMs;
  for (;;) {
    if ((await page.evaluate(expression)) === true) return;
    if (performance.now() > end) throw new Error(`timed out waiting for ${expression}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether the page scrolls sideways at its current viewport (it must not at phone width). */
export async function overflowsSideways(page: Page): Promise<boolean> {
  return (await page.evaluate('document.scrollingElement.scrollWidth > window.innerWidth')) as boolean;
}
