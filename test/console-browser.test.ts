import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { upTopic } from '../shared/topics.js';
import { done, haveChromium, launchChromium, openWatched, signIn, stored, until, warnIfNoChromium, type Watched } from './support/browser.js';
import { startHarness, type Harness, type Company } from './support/harness.js';
import { addCamera, heartbeat, jpeg, openShop, upload, waitFor } from './support/shop-pc.js';
import { settled, shopPc, zoneAwayFromMidnight, type ShopPc } from './support/visits.js';

/**
 * The web console in a real browser (Debian's Chromium, its headless shell first, driven by playwright-core) against a real head office
 * (test harness: SQLite file, broker, HTTP on port 0). One browser for the file; a fresh context (empty storage)
 * per test. Every page is watched for console errors, uncaught exceptions and CSP violations.
 * Without it on PATH (test/support/browser.ts) the file skips with a printed reason (the HTTP tests in console-serve.test.ts still run).
 */

warnIfNoChromium('console-browser.test.ts');

let browser: Browser;
let h: Harness;

const open = (path = '/'): Promise<Watched> => openWatched(browser, h.url + path);

function visit(cameraId: string, minutesAgo = 1) {
  return { visit_id: randomUUID(), occurred_at: new Date(Date.now() - minutesAgo * 60_000).toISOString(), camera_id: cameraId, quality: 0.3, passed_gate: false };
}

describe.skipIf(!haveChromium)('web console in a browser', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describe('a chain with two shops', () => {
    let chain: Company;
    let pc: ShopPc;

    beforeAll(async () => {
      h = await startHarness();
      chain = await h.company('Chai Point');
      // One shop with a reporting shop PC and three visits today; one shop with nothing installed yet. Both in a zone
      // where the last minutes are today (test/support/visits.ts).
      const timezone = zoneAwayFromMidnight();
      pc = await shopPc(h, chain.ownerToken, chain.slug, 'Bandra West', timezone);
      await pc.client.publishAsync(upTopic(chain.slug, pc.shop.slug, 'heartbeat'), JSON.stringify(heartbeat({ cameras_up: 1, cameras_total: 2, fraction_below_gate: 0.1 })));
      // "Cameras up" comes from each camera's own reported state (issue 28): two cameras, one connected.
      await addCamera(h, chain.ownerToken, pc.shop.slug, { camera_id: 'till', label: 'Till' });
      await addCamera(h, chain.ownerToken, pc.shop.slug, { camera_id: 'aisle', label: 'Aisle' });
      const state = await fetch(h.url + '/api/agent/cameras/state', { method: 'POST', headers: { Authorization: `Bearer ${pc.enrolment.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ cameras: [{ camera: 'till', connected: true, reason: 'ok' }, { camera: 'aisle', connected: false, reason: 'unreachable' }] }) });
      expect(state.status).toBe(200);
      for (let i = 0; i < 3; i++) await pc.publish(visit('door', i + 1));
      await settled(h);
      await openShop(h, chain.ownerToken, { name: 'Powai <Mall>', slug: 'powai', timezone });
    });

    afterAll(async () => {
      await pc?.close();
      await h?.close();
    });

    it('an owner signs in and sees each shop with its state and today’s visitors, then signs out', async () => {
      const w = await open();
      const { page } = w;
      await expect(page.getByRole('heading', { name: 'Sign in to Footfall' }).isVisible()).resolves.toBe(true);
      await signIn(page, chain.ownerEmail, chain.ownerPassword);

      const bandra = page.locator(`[data-shop="${pc.shop.slug}"]`);
      await bandra.getByText('Online').waitFor();
      const text = await bandra.innerText();
      expect(text).toContain('Bandra West');
      expect(text).toMatch(/Cameras\s+1 of 2 up/);
      expect(text).toMatch(/Placement\s+good \(10% of faces too poor to use\)/);
      expect(text).toMatch(/Today\s+3 visitors/);
      expect(text).toMatch(/Last seen\s+just now/);

      const powai = page.locator('[data-shop="powai"]');
      expect(await powai.innerText()).toContain('Powai <Mall>'); // shown as text, not markup
      expect(await powai.innerText()).toContain('No shop PC yet');
      expect(await page.locator('#company-today').innerText()).toBe('Today: 3 visitors across 2 shops');
      expect(await page.locator('header .company').innerText()).toBe('Chai Point');

      // Not kept: the session is in sessionStorage only.
      const session = await stored(page, 'sessionStorage');
      expect(session?.access_token).toMatch(/^ffa_/);
      expect(await stored(page, 'localStorage')).toBeNull();

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('You are signed out.').waitFor();
      expect(await stored(page, 'sessionStorage')).toBeNull();
      // The API revoked the session, not just the page forgetting it.
      expect((await h.request('GET', '/api/auth/me', { token: session!.access_token })).status).toBe(401);
      await done(w);
    });

    it('the watch on each page does catch a CSP violation (so "none seen" means something)', async () => {
      const w = await open();
      await w.page.getByLabel('Email').waitFor();
      await w.page.evaluate(`{ const s = document.createElement('script'); s.textContent = 'window.inlineRan = true'; document.body.append(s); }`);
      // The violation is reported by an event the page dispatches later: awaited, as a loaded Chromium can be slow.
      await waitFor(() => w.problems.some((p) => /CSP violation: script-src/.test(p)), 10_000);
      expect(await w.page.evaluate('window.inlineRan')).toBeUndefined();
      await w.context.close();
      expect(w.problems.join('\n')).toMatch(/CSP violation: script-src/);
    });

    it('a wrong password shows the API’s message and keeps the person on the sign-in page', async () => {
      const w = await open();
      await signIn(w.page, chain.ownerEmail, 'not-the-password');
      const alert = w.page.getByRole('alert');
      await alert.waitFor();
      const r = await h.request('POST', '/api/auth/login', { body: { email: 'nobody@shop.test', password: 'x' } });
      expect(r.body.error).toBe('bad_credentials');
      expect(await alert.innerText()).toBe(r.body.message);
      expect(await w.page.getByLabel('Password').inputValue()).toBe('');
      expect(await stored(w.page, 'sessionStorage')).toBeNull();
      await done(w);
    });

    it('a suspended company’s owner is told so', async () => {
      const gone = await h.company('Closed Chain');
      expect((await h.request('PATCH', `/api/admin/clients/${gone.id}`, { token: await h.adminToken(), body: { active: false } })).status).toBe(200);
      const w = await open();
      await signIn(w.page, gone.ownerEmail, gone.ownerPassword);
      const alert = w.page.getByRole('alert');
      await alert.waitFor();
      expect(await alert.innerText()).toMatch(/suspended/i);
      await done(w);
    });

    it('"keep me signed in" stores the session in localStorage, so a new tab is signed in too', async () => {
      const w = await open();
      await signIn(w.page, chain.ownerEmail, chain.ownerPassword, true);
      await w.page.locator('[data-shop="powai"]').waitFor();
      expect(await stored(w.page, 'localStorage')).not.toBeNull();
      expect(await stored(w.page, 'sessionStorage')).toBeNull();
      const second = await w.context.newPage();
      await second.goto(h.url + '/');
      await second.locator('[data-shop="powai"]').waitFor();
      await second.close();
      await done(w);
    });

    it('an empty company is told how to start, and its owner opens the first shop from the page', async () => {
      const fresh = await h.company('New Chain');
      const w = await open();
      await signIn(w.page, fresh.ownerEmail, fresh.ownerPassword);
      await w.page.locator('#no-shops').getByText('No shops yet').waitFor();
      await w.page.getByLabel('Shop name').fill('Colaba');
      // A company with no shop gets the form open, its zone list starting on head office's default.
      expect(await w.page.getByLabel('Time zone').inputValue()).toBe('Asia/Kolkata');
      await w.page.getByRole('button', { name: 'Open shop' }).click();
      await w.page.locator('[data-shop="colaba"]').waitFor();
      // The same short name again: the API's 409 message in the form's message line, the button usable again,
      // nothing made.
      await w.page.getByLabel('Shop name').fill('Colaba West');
      await w.page.getByLabel('Short name (slug)').fill('colaba');
      await w.page.getByRole('button', { name: 'Open shop' }).click();
      const alert = w.page.locator('#open-shop .notice.error[role="alert"]');
      await alert.waitFor();
      const conflict = await h.request('POST', '/api/sites', { token: fresh.ownerToken, body: { name: 'Colaba West', slug: 'colaba' } });
      expect(conflict.status).toBe(409);
      expect(await alert.textContent()).toBe(conflict.body.message);
      expect(await w.page.getByRole('button', { name: 'Open shop' }).isDisabled()).toBe(false);
      const sites = await h.request('GET', '/api/sites', { token: fresh.ownerToken });
      expect(sites.body.map((s: { slug: string }) => s.slug)).toEqual(['colaba']);
      await done(w);
    });
    it('a shop page: camera status, the latest picture, a camera check answered by the shop PC, live view stopped on leaving', async () => {
      const cam = await addCamera(h, chain.ownerToken, pc.shop.slug, { camera_id: 'door', label: 'Front door' });
      const pcToken = pc.enrolment.token;
      expect((await h.request('POST', '/api/agent/cameras/state', { token: pcToken, body: { cameras: [{ camera: 'door', connected: true }] } })).status).toBe(200);
      expect((await upload(h, 'PUT', '/api/agent/cameras/door/snapshot', pcToken, await jpeg(64, 48))).status).toBe(200);

      const w = await open();
      const { page } = w;
      await signIn(page, chain.ownerEmail, chain.ownerPassword);
      await page.locator('#shops').getByRole('link', { name: 'Bandra West' }).click(); // the shop ranking links it too
      const card = page.locator('[data-camera="door"]');
      await card.getByText('connected').waitFor();
      expect(await card.locator('h3').innerText()).toContain('Front door');
      // The snapshot is fetched with the bearer token and shown from a blob: URL.
      const img = card.locator('img.snapshot');
      await img.waitFor();
      await until(page, `document.querySelector('[data-camera="door"] img.snapshot')?.naturalWidth === 64`);
      expect(await img.getAttribute('src')).toMatch(/^blob:/);

      // Camera check: the page asks, the shop PC (this test) claims and answers, the page shows head office's headline.
      await card.getByRole('button', { name: 'Check connection' }).click();
      await card.getByText('Waiting for the shop PC').waitFor();
      const claim = await h.request('POST', '/api/agent/checks/claim', { token: pcToken });
      expect(claim.body.job.camera_id).toBe('door');
      expect((await h.request('POST', `/api/agent/checks/${claim.body.job.check_id}/answer`, { token: pcToken, body: { verdict: 'good', detail: { faces: 0, fraction_below_gate: null } } })).status).toBe(200);
      const cams = await h.request('GET', '/api/cameras', { token: chain.ownerToken });
      const headline: string = cams.body.find((c: { id: string }) => c.id === cam.id).check.headline;
      expect(headline.length).toBeGreaterThan(0);
      await card.getByText(headline).waitFor({ timeout: 5000 });
      expect(await card.locator('.check-result .notice').getAttribute('class')).toContain('ok');

      // Live view over fetch() streaming: frames the shop PC uploads appear in the <img> as blob: URLs.
      await card.getByRole('button', { name: 'Watch live' }).click();
      const frame = await jpeg(80, 60, 200);
      await waitFor(async () => {
        const r = await upload(h, 'POST', `/api/agent/live/door/frames`, pcToken, frame);
        return r.body.watching === true;
      }, 5000, 50);
      let shown = false;
      for (let i = 0; i < 40 && !shown; i++) {
        await upload(h, 'POST', `/api/agent/live/door/frames`, pcToken, frame);
        shown = await page.evaluate(`document.querySelector('[data-camera="door"] img.snapshot')?.naturalWidth === 80`);
        if (!shown) await new Promise((r) => setTimeout(r, 100));
      }
      expect(shown).toBe(true);
      expect(await card.getByRole('button', { name: 'Stop live view' }).isVisible()).toBe(true);
      // Leaving the page closes the stream: head office tells the shop PC nobody watches any more.
      await page.getByRole('link', { name: '← All shops' }).click();
      await page.locator('[data-shop="powai"]').waitFor();
      await waitFor(async () => (await upload(h, 'POST', `/api/agent/live/door/frames`, pcToken, frame)).body.watching === false, 5000, 100);
      await done(w);
    });

    it('a manager creates an installation code on the shop page, and a shop PC enrols with it', async () => {
      const w = await open('/#/shop/powai');
      await signIn(w.page, chain.ownerEmail, chain.ownerPassword);
      await w.page.getByRole('heading', { name: 'Powai <Mall>' }).waitFor();
      await w.page.getByLabel('Label (optional)').fill('till');
      await w.page.getByRole('button', { name: 'Create installation code' }).click();
      const code = await w.page.locator('#enrolment-code').innerText();
      expect(code).toMatch(/^[A-Z0-9]{6}(-[A-Z0-9]{6}){3}$/);
      expect(await w.page.locator('#enrolment').innerText()).toContain(`footfall enrol --server ${h.url} --code ${code}`);
      const r = await h.request('POST', '/api/agent/enrol', { body: { code, hostname: 'powai-pc', agent_version: '1.0.0' } });
      expect(r.status).toBe(201);
      await done(w);
    });

    it('staff see the shop and its cameras but no manager controls', async () => {
      const email = `staff-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/members', { token: chain.ownerToken, body: { email, full_name: 'Sam Staff', role: 'staff', password: 'staff-password-1' } })).status).toBe(201);
      const w = await open();
      await signIn(w.page, email, 'staff-password-1');
      await w.page.locator(`[data-shop="${pc.shop.slug}"]`).waitFor();
      expect(await w.page.locator('#open-shop').count()).toBe(0);
      await w.page.locator('#shops').getByRole('link', { name: 'Bandra West' }).click(); // the shop ranking links it too
      const card = w.page.locator('[data-camera="door"]');
      await card.waitFor();
      expect(await card.getByRole('button', { name: 'Watch live' }).count()).toBe(1);
      expect(await card.getByRole('button', { name: 'Check connection' }).count()).toBe(0);
      expect(await w.page.locator('#enrolment, #add-camera').count()).toBe(0);
      await done(w);
    });
    it('team: an owner invites by email, the person joins with the link, then gets another role and is deactivated', async () => {
      const w = await open('/#/team');
      const { page } = w;
      page.on('dialog', (d) => void d.dismiss().then(() => w.problems.push(`dialog: ${d.message()}`)));
      await signIn(page, chain.ownerEmail, chain.ownerPassword);
      await page.locator(`[data-member="${chain.ownerEmail}"]`).waitFor();
      expect(await page.locator(`[data-member="${chain.ownerEmail}"]`).innerText()).toContain('(you)');

      const email = `nina-${process.pid}@shop.test`;
      const form = page.locator('#invite');
      await form.getByLabel('Email').fill(email);
      await form.getByLabel('Full name').fill('Nina <b>Rao</b>');
      await form.getByLabel('Role').selectOption('manager');
      await form.getByRole('button', { name: 'Invite' }).click();
      const code = await page.locator('#invitation-code').innerText();
      expect(code).toMatch(/^[A-Z0-9]{6}(-[A-Z0-9]{6}){3}$/);
      const link = await page.locator('#invitation-link').innerText();
      expect(link).toBe(`${h.url}/#/join/${code}`);
      await page.locator(`[data-invitation="${email}"]`).waitFor();
      const pending = await h.request('GET', '/api/team/invitations', { token: chain.ownerToken });
      expect(pending.body.map((i: { email: string }) => i.email)).toContain(email);

      // Nina opens the link in her own browser, picks a password and is signed in.
      const nina = await open(link.slice(h.url.length));
      await nina.page.getByText(/Chai Point invites you to join as manager/).waitFor();
      expect(await nina.page.getByLabel('Your name').inputValue()).toBe('Nina <b>Rao</b>');
      await nina.page.getByLabel('Choose a password').fill('nina-password-1');
      await nina.page.getByRole('button', { name: 'Join and sign in' }).click();
      await nina.page.locator(`[data-shop="${pc.shop.slug}"]`).waitFor();
      expect(await nina.page.locator('header .user').innerText()).toBe('Nina <b>Rao</b>');
      await done(nina);
      expect((await h.request('GET', '/api/team/invitations', { token: chain.ownerToken })).body.map((i: { email: string }) => i.email)).not.toContain(email);

      // Back with the owner: Nina is listed; make her staff, then deactivate her.
      await page.reload();
      const row = page.locator(`[data-member="${email}"]`);
      await row.waitFor();
      await row.getByLabel(`Role of ${email}`).selectOption('staff');
      await page.getByText('Nina <b>Rao</b> is now staff.').waitFor();
      await page.locator(`[data-member="${email}"]`).getByRole('button', { name: `Deactivate ${email}` }).click();
      await page.getByRole('group', { name: `Confirm deactivating ${email}` }).getByRole('button', { name: /^Deactivate / }).click();
      await page.locator(`[data-member="${email}"]`).getByText('inactive').waitFor();
      const team = await h.request('GET', '/api/team', { token: chain.ownerToken });
      const member = team.body.find((m: { email: string }) => m.email === email);
      expect(member).toMatchObject({ role: 'staff', active: false });
      await done(w);
    });

    it('team: the last owner cannot demote themselves; the API’s message is shown and nothing changes', async () => {
      const w = await open('/#/team');
      await signIn(w.page, chain.ownerEmail, chain.ownerPassword);
      const row = w.page.locator(`[data-member="${chain.ownerEmail}"]`);
      await row.waitFor();
      await row.getByLabel(`Role of ${chain.ownerEmail}`).selectOption('manager');
      const alert = w.page.getByRole('alert');
      await alert.waitFor();
      const r = await h.request('PATCH', `/api/team/${chain.ownerEmail}`, { token: chain.ownerToken, body: { role: 'manager' } });
      expect(r.body.error).toBe('last_owner');
      expect(await alert.innerText()).toBe(r.body.message);
      await until(w.page, `document.querySelector('[data-member="${chain.ownerEmail}"] select')?.value === 'owner'`);
      expect((await h.request('GET', '/api/auth/me', { token: chain.ownerToken })).body.role).toBe('owner');
      await done(w);
    });

    it('platform admin: sees companies only, creates a company (the owner’s password works), suspends and reactivates it', async () => {
      const w = await open();
      const { page } = w;
      page.on('dialog', (d) => void d.dismiss().then(() => w.problems.push(`dialog: ${d.message()}`)));
      await signIn(page, h.admin.email, h.admin.password);
      await page.locator(`[data-company="${chain.slug}"]`).waitFor();
      expect(await page.locator('header nav').innerText()).toBe('Companies');

      const form = page.locator('#create-company');
      await form.getByLabel('Company name').fill('Masala & Co');
      await form.getByLabel('Owner’s email').fill(`masala-${process.pid}@shop.test`);
      await form.getByLabel('Owner’s name').fill('Meera');
      await form.getByRole('button', { name: 'Create company' }).click();
      const password = await page.locator('#owner-password').innerText();
      expect(password.length).toBeGreaterThanOrEqual(8);
      const list = await h.request('GET', '/api/admin/clients', { token: await h.adminToken() });
      const created = list.body.find((c: { name: string }) => c.name === 'Masala & Co');
      expect(created).toBeTruthy();
      const owner = await h.login(`masala-${process.pid}@shop.test`, password);
      expect(owner.user.client_name).toBe('Masala & Co');

      const row = page.locator(`[data-company="${created.slug}"]`);
      await row.waitFor();
      await row.getByRole('button', { name: 'Suspend Masala & Co' }).click();
      await page.getByRole('group', { name: 'Confirm suspending Masala & Co' }).getByRole('button', { name: 'Suspend Masala & Co' }).click();
      await page.getByText(/Masala & Co is suspended; 1 session\(s\) signed out\./).waitFor();
      expect((await h.request('GET', '/api/auth/me', { token: owner.access_token })).status).toBe(401);
      await page.locator(`[data-company="${created.slug}"]`).getByRole('button', { name: 'Reactivate Masala & Co' }).click();
      await page.locator(`[data-company="${created.slug}"]`).getByText('active', { exact: true }).waitFor();
      expect((await h.request('GET', '/api/admin/clients', { token: await h.adminToken() })).body.find((c: { slug: string }) => c.slug === created.slug).active).toBe(true);

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('You are signed out.').waitFor();
      await done(w);
    });

    it('works at phone width: the overview fits without sideways scrolling', async () => {
      const w = await open();
      await w.page.setViewportSize({ width: 375, height: 740 });
      await signIn(w.page, chain.ownerEmail, chain.ownerPassword);
      await w.page.locator(`[data-shop="${pc.shop.slug}"]`).waitFor();
      expect(await w.page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await w.page.evaluate("location.hash = '#/team'");
      await w.page.locator('#members').waitFor();
      expect(await w.page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await done(w);
    });
  });

  describe('expired access tokens (a head office whose tokens last 4 s)', () => {
    beforeAll(async () => {
      h = await startHarness({ FOOTFALL_ACCESS_TOKEN_TTL_S: 4 });
    });
    afterAll(async () => {
      await h?.close();
    });

    it('on token_expired the console refreshes once (however many calls failed) and retries', async () => {
      const c = await h.company('Refresh Chain');
      await openShop(h, c.ownerToken, { name: 'Andheri' });
      const w = await open();
      await signIn(w.page, c.ownerEmail, c.ownerPassword);
      await w.page.locator('[data-shop="andheri"]').waitFor();
      const before = await stored(w.page, 'sessionStorage');

      const refreshes: string[] = [];
      w.page.on('request', (r) => {
        if (r.url().endsWith('/api/auth/refresh')) refreshes.push(r.url());
      });
      await new Promise((r) => setTimeout(r, 4300)); // the access token expires
      await w.page.evaluate("location.hash = '#/team'");
      await w.page.evaluate("location.hash = '#/'");
      await w.page.locator('[data-shop="andheri"]').waitFor();
      const after = await stored(w.page, 'sessionStorage');
      expect(after!.refresh_token).not.toBe(before!.refresh_token);
      expect(refreshes.length).toBe(1); // several calls failed at once; one refresh served them all
      expect((await h.request('GET', '/api/auth/me', { token: after!.access_token })).status).toBe(200);
      await done(w);
    });
  });
});
