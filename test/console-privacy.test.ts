import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { VisitMessage } from '../shared/messages.js';
import { syntheticFace } from './support/shop-pc.js';
import { done, haveChromium, launchChromium, openWatched, signIn, until, warnIfNoChromium, type Watched } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { settled, shopPc, type ShopPc } from './support/visits.js';

/**
 * The console's privacy parts (issue 29) in Chromium against a real head office: an owner changes the recognition
 * mode on the Privacy page (reached from Team) and reads and filters the audit trail; a manager downloads a customer's
 * data from their page. What the page did is checked through the API and the downloaded file.
 */

warnIfNoChromium('console-privacy.test.ts');

let browser: Browser;
let h: Harness;
let chain: Company;
let pc: ShopPc;
const manager = { email: `manager-${process.pid}@privacy.test`, password: 'manager-password-1' };
const open = (path = '/'): Promise<Watched> => openWatched(browser, h.url + path);

function visit(who: number): VisitMessage {
  return {
    visit_id: randomUUID(),
    occurred_at: new Date(Date.now() - 60_000).toISOString(),
    camera_id: 'door',
    embedding: syntheticFace(who),
    recognition_model: 'test-model',
    quality: 0.9,
    passed_gate: true,
  };
}

describe.skipIf(!haveChromium)('console: privacy settings, audit trail, data export', () => {
  beforeAll(async () => {
    [browser, h] = await Promise.all([launchChromium(), startHarness()]);
    chain = await h.company('Privacy Chain');
    pc = await shopPc(h, chain.ownerToken, chain.slug, 'Dock Road');
    await pc.publish(visit(1));
    await settled(h);
    expect((await h.request('POST', '/api/team/members', { token: chain.ownerToken, body: { email: manager.email, full_name: 'Mo Manager', role: 'manager', password: manager.password } })).status).toBe(201);
  });

  afterAll(async () => {
    await pc?.close();
    await h?.close();
    await browser?.close();
  });

  it('an owner sets count-only from Team → Privacy and finds the change in the audit trail', async () => {
    const w = await open('/#/team');
    const { page } = w;
    await signIn(page, chain.ownerEmail, chain.ownerPassword);
    await page.locator('#privacy-link').click();
    await page.getByRole('heading', { name: 'Privacy', exact: true }).waitFor();
    await page.getByLabel('Recognition').selectOption('off');
    await page.getByLabel('Forget customers without consent after (days unseen)').fill('30');
    await page.getByLabel('Keep visits and door crossings for (days)').fill('400');
    await page.getByRole('button', { name: 'Save privacy settings' }).click();
    await page.locator('#privacy-saved').waitFor();
    const settings = (await h.request('GET', '/api/company/privacy', { token: chain.ownerToken })).body;
    expect(settings).toMatchObject({ recognition: 'off', template_retention_days: 30, visit_retention_days: 400, updated_by: chain.ownerEmail });
    expect(await page.getByLabel('Keep visits and door crossings for (days)').inputValue()).toBe('400');
    await page.locator('#audit-trail tr[data-audit="privacy.update"]').first().waitFor();
    // Filter to sign-ins only.
    await page.getByLabel('What').fill('auth.sign_in');
    await page.getByRole('button', { name: 'Show' }).click();
    await until(page, `[...document.querySelectorAll('#audit-trail tbody tr')].every((r) => r.getAttribute('data-audit') === 'auth.sign_in')`);
    expect(await page.locator('#audit-trail tbody tr').count()).toBeGreaterThan(0);
    await done(w);
  });

  it('a manager downloads a customer’s data, and gets no Privacy link on Team', async () => {
    const w = await open('/#/customers/V-1');
    const { page } = w;
    await signIn(page, manager.email, manager.password);
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: /Download everything held about V-1/ }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('customer-V-1.json');
    const body = JSON.parse(readFileSync((await file.path())!, 'utf8'));
    expect(body.customer.ref).toBe('V-1');
    expect(body.visits).toHaveLength(1);
    expect(body.exported_by).toBe(manager.email);
    await page.goto(`${h.url}/#/team`);
    await page.getByRole('heading', { name: 'Team' }).waitFor();
    expect(await page.locator('#privacy-link').count()).toBe(0);
    await done(w);
  });
});
