import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { done, haveChromium, launchChromium, openWatched, overflowsSideways, signIn, until, warnIfNoChromium, type Watched } from './support/browser.js';
import { seedChain, type Seeded } from './support/dashboard-seed.js';
import { startHarness, type Harness } from './support/harness.js';
import { addCamera, jpeg, syntheticFace, upload, waitFor } from './support/shop-pc.js';
import { settled } from './support/visits.js';

/**
 * The console as a dashboard (issue 18), in Chromium against a real head office with shop PCs over MQTT: first
 * the states it used to get wrong (each of these tests fails on the console before issue 18), then the headline
 * figures, reports with the heatmap, CSV and the address, customers' order and spend, the live grid, changing my
 * password, and the platform admin's company health. At 1366 and 390 px wide, as an owner and as staff.
 */

warnIfNoChromium('console-dashboard.test.ts');

let browser: Browser;
let h: Harness;
let s: Seeded;

const EXPECTED = /^Failed to load resource: the server responded with a status of (400|401|403|404|409|429) /;
const WIDE = { width: 1366, height: 800 };
const PHONE = { width: 390, height: 844 };

async function as(who: 'owner' | 'staff', size: { width: number; height: number }, path = '/'): Promise<Watched> {
  const w = await openWatched(browser, h.url + path, EXPECTED);
  await w.page.setViewportSize(size);
  // No browser dialog may ever open (one confirmation style: in the page).
  w.page.on('dialog', (d) => {
    w.problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  if (who === 'owner') await signIn(w.page, s.chain.ownerEmail, s.chain.ownerPassword);
  else await signIn(w.page, s.staff.email, s.staff.password);
  return w;
}

const text = (page: Page, sel: string) => page.locator(sel).first().innerText();

/** Whether any word of the element's text is broken across two lines (a line starts inside a word). */
async function breaksMidWord(page: Page, selector: string): Promise<string[]> {
  return (await page.evaluate(`(() => {
    const bad = [];
    for (const el of document.querySelectorAll(${JSON.stringify(selector)})) {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const t = n.textContent;
        let lastTop = null;
        for (let i = 0; i < t.length; i++) {
          const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
          const rect = r.getClientRects()[0];
          if (!rect) continue;
          if (lastTop !== null && rect.top > lastTop + 2 && /\\S/.test(t[i - 1] ?? ' ') && /\\S/.test(t[i])) bad.push(t);
          lastTop = rect.top;
        }
      }
    }
    return bad;
  })()`)) as string[];
}

describe.skipIf(!haveChromium)('console as a dashboard (issue 18)', () => {
  beforeAll(async () => {
    [browser, h] = await Promise.all([launchChromium(), startHarness({ FOOTFALL_HEARTBEAT_INTERVAL_S: 1, FOOTFALL_IMAGES: 'local' })]);
    s = await seedChain(h);
    // Powai's PC said "1 of 1 up, camera connected" and then went quiet: offline after three intervals.
    await waitFor(async () => (await h.request('GET', '/api/sites', { token: s.chain.ownerToken })).body.find((x: any) => x.slug === s.powai.shop.slug)?.online === false, 8000, 200);
  }, 120_000);

  afterAll(async () => {
    await s?.stop();
    await h?.close();
    await browser?.close();
  });

  describe('wrong states', () => {
    it('an offline shop PC’s cameras are not shown as connected (overview and shop page), owner 1366 and staff 390', async () => {
      for (const [who, size] of [['owner', WIDE], ['staff', PHONE]] as const) {
        const w = await as(who, size);
        const powai = w.page.locator(`[data-shop="${s.powai.shop.slug}"]`);
        await powai.getByText('Offline', { exact: true }).waitFor();
        const card = await powai.innerText();
        expect(card).not.toMatch(/Cameras\s+1 of 1 up/);
        expect(card).toMatch(/Cameras\s+unknown: the shop PC is offline/);
        expect(await powai.locator('.dot', { hasText: 'the shop PC is offline' }).getAttribute('class')).toBe('dot unknown');
        await powai.getByRole('link', { name: 'Powai Lakeside Mall' }).click();
        const cam = w.page.locator('[data-camera="gate"]');
        await cam.getByText('unknown: the shop PC is offline').waitFor();
        expect(await cam.locator('.dot.good').count()).toBe(0);
        expect(await overflowsSideways(w.page)).toBe(false);
        await done(w);
      }
    });

    it('live view and "Check connection" give up at once with the reason when the shop PC is offline or missing', async () => {
      const w = await as('owner', WIDE, `/#/shop/${s.powai.shop.slug}`);
      const cam = w.page.locator('[data-camera="gate"]');
      await cam.locator('img.snapshot').waitFor();
      const started = Date.now();
      await cam.getByRole('button', { name: 'Watch live' }).click();
      await cam.getByText(/Live view is not possible now\. The shop PC is offline \(last heard from/).waitFor({ timeout: 2000 });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(await cam.getByRole('button', { name: 'Watch live' }).count()).toBe(1);
      await cam.getByRole('button', { name: 'Check connection' }).click();
      await cam.getByText(/The check cannot run now\. The shop PC is offline/).waitFor({ timeout: 2000 });
      const cams = await h.request('GET', '/api/cameras', { token: s.chain.ownerToken });
      expect(cams.body.find((c: any) => c.camera_id === 'gate').check.state).not.toBe('requested'); // nothing was asked of it
      await done(w);

      const phone = await as('staff', PHONE, `/#/shop/${s.colaba.slug}`);
      const front = phone.page.locator('[data-camera="front"]');
      await front.getByRole('button', { name: 'Watch live' }).click();
      await front.getByText(/This shop has no shop PC yet/).waitFor({ timeout: 2000 });
      expect(await overflowsSideways(phone.page)).toBe(false);
      await done(phone);
    });

    it('live view gives up at once on an offline or missing shop PC for owner and staff at 1366 and 390 px; "Check connection" gives up for the owner and is not offered to staff', async () => {
      for (const [who, size] of [['owner', PHONE], ['staff', WIDE], ['staff', PHONE]] as const) {
        const w = await as(who, size, `/#/shop/${s.powai.shop.slug}`);
        const cam = w.page.locator('[data-camera="gate"]');
        await cam.locator('img.snapshot').waitFor();
        const started = Date.now();
        await cam.getByRole('button', { name: 'Watch live' }).click();
        await cam.getByText(/Live view is not possible now\. The shop PC is offline \(last heard from/).waitFor({ timeout: 2000 });
        expect(Date.now() - started).toBeLessThan(2000);
        expect(await cam.getByRole('button', { name: 'Watch live' }).count()).toBe(1);
        expect(await cam.locator('img.snapshot').count()).toBe(1); // the latest picture stays, not a live frame that never comes
        if (who === 'owner') {
          await cam.getByRole('button', { name: 'Check connection' }).click();
          await cam.getByText(/The check cannot run now\. The shop PC is offline/).waitFor({ timeout: 2000 });
        } else {
          // Staff may watch but not run checks: no button, and head office refuses the request.
          expect(await cam.getByRole('button', { name: 'Check connection' }).count()).toBe(0);
          const cams = await h.request('GET', '/api/cameras', { token: s.staff.token });
          const gate = cams.body.find((c: any) => c.camera_id === 'gate');
          expect((await h.request('POST', `/api/cameras/${gate.id}/check`, { token: s.staff.token, body: { kind: 'connection' } })).status).toBe(403);
        }
        const cams = await h.request('GET', '/api/cameras', { token: s.chain.ownerToken });
        expect(cams.body.find((c: any) => c.camera_id === 'gate').check.state).not.toBe('requested'); // nothing was asked of it
        expect(await overflowsSideways(w.page)).toBe(false);
        await done(w);
      }
      for (const [who, size] of [['owner', WIDE], ['owner', PHONE], ['staff', WIDE]] as const) {
        const w = await as(who, size, `/#/shop/${s.colaba.slug}`);
        const front = w.page.locator('[data-camera="front"]');
        await front.getByRole('button', { name: 'Watch live' }).click();
        await front.getByText(/Live view is not possible now\. This shop has no shop PC yet/).waitFor({ timeout: 2000 });
        if (who === 'owner') {
          await front.getByRole('button', { name: 'Check connection' }).click();
          await front.getByText(/The check cannot run now\. This shop has no shop PC yet/).waitFor({ timeout: 2000 });
        } else {
          expect(await front.getByRole('button', { name: 'Check connection' }).count()).toBe(0);
        }
        expect(await overflowsSideways(w.page)).toBe(false);
        await done(w);
      }
    });

    it('the shop check names the failing step and says what it knows of the steps it skipped (the last visit)', async () => {
      await s.heartbeat({ fraction_below_gate: 0.4 });
      await waitFor(async () => (await h.request('GET', `/api/sites/${s.bandra.shop.slug}/check`, { token: s.chain.ownerToken })).body.steps[3].status === 'fail', 5000, 100);
      for (const [who, size] of [['owner', WIDE], ['staff', PHONE]] as const) {
        const w = await as(who, size, `/#/shop/${s.bandra.shop.slug}`);
        await w.page.getByRole('button', { name: 'Check this shop' }).click();
        const headline = w.page.locator('#shop-check-headline');
        await headline.waitFor();
        expect(await headline.innerText()).toMatch(/^Step 4 needs attention \(Cameras can recognise faces\): 40% of faces are too poor/);
        const step5 = await text(w.page, '#shop-check li[data-step="5"]');
        expect(step5).not.toMatch(/Not checked: an earlier step failed/);
        expect(step5).toMatch(/The last visit arrived (just now|\d+ min ago) \(not checked because step 4 failed\)/);
        expect(await text(w.page, '#shop-facts')).toMatch(/Last visit\s+(just now|\d+ min ago)/);
        await done(w);
      }
      await s.heartbeat({ fraction_below_gate: 0.1 });
    });

    it('reports on a phone: a tall chart with readable labels, no 168 slivers for 7 days by hour, no ISO labels, no names broken mid-word', async () => {
      const w = await as('staff', PHONE, '/#/reports');
      await w.page.locator('#report-chart').waitFor();
      const box = (await w.page.locator('#report-chart').boundingBox())!;
      expect(box.height).toBeGreaterThan(200);
      const tick = (await w.page.evaluate(`(() => { const t = document.querySelector('#report-chart text.tick'); return t.getBoundingClientRect().height; })()`)) as number;
      expect(tick).toBeGreaterThanOrEqual(10);
      // Seven days by hour.
      await w.page.locator('#report-form').getByLabel('Group by', { exact: true }).selectOption('hour');
      await w.page.getByRole('button', { name: 'Show' }).click();
      await until(w.page, `document.querySelector('#report')?.getAttribute('data-query')?.includes('bucket=hour')`);
      await w.page.locator('#too-many-bars').waitFor();
      expect(await w.page.locator('#report-chart g.bar').count()).toBe(0);
      expect(await w.page.locator('#report-table tbody tr').count()).toBe(168);
      expect(await w.page.locator('#report-table').isVisible()).toBe(false); // folded
      await w.page.locator('#heatmap').waitFor();
      const visible = await w.page.locator('#report').innerText();
      expect(visible).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
      const page = (await w.page.evaluate('document.scrollingElement.scrollHeight')) as number;
      expect(page).toBeLessThan(4000);
      expect(await breaksMidWord(w.page, '#report-totals dd, #side-table th, #shops h2, .shop-name')).toEqual([]);
      expect(await overflowsSideways(w.page)).toBe(false);
      await done(w);
    });

    it('a local phone number is taken in the shops’ country (Asia/Kolkata: +91), and times say their zone', async () => {
      const list = await h.request('GET', '/api/visitors?limit=1', { token: s.chain.ownerToken });
      const ref = list.body[0].ref;
      for (const [who, size, typed] of [['staff', PHONE, '98765 43210'], ['owner', WIDE, '098765 43211']] as const) {
        const w = await as(who, size, `/#/customers/${ref}`);
        await w.page.locator('#times-zone').waitFor();
        expect(await text(w.page, '#times-zone')).toBe('Times in Asia/Kolkata, the shops’ time zone.');
        const purchases = await h.request('GET', `/api/visitors/${ref}/purchases`, { token: s.chain.ownerToken });
        if (purchases.body.length > 0) {
          const at = purchases.body[0].created_at;
          const shown = new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Kolkata', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(at));
          expect(await text(w.page, '#purchases tbody tr td')).toContain(shown);
        }
        await w.page.getByRole('button', { name: 'Edit profile…' }).click();
        expect(await w.page.locator('#profile-form').innerText()).toContain('A local number is taken as +91');
        await w.page.getByLabel('Phone').fill(typed);
        await w.page.getByRole('button', { name: 'Save profile' }).click();
        await w.page.locator('#profile-saved').waitFor();
        const after = await h.request('GET', `/api/visitors/${ref}`, { token: s.chain.ownerToken });
        expect(after.body.profile.phone).toBe(`+91${typed.replace(/\D/g, '').replace(/^0/, '')}`);
        await done(w);
      }
    });

    it('"Open a shop" is behind a button; its time zone is a list starting on the company’s zone (the browser is in UTC)', async () => {
      const w = await as('owner', WIDE);
      await w.page.locator(`[data-shop="${s.bandra.shop.slug}"]`).waitFor();
      expect(await w.page.locator('#open-shop').count()).toBe(0);
      expect((await w.page.evaluate('Intl.DateTimeFormat().resolvedOptions().timeZone')) as string).toBe('UTC');
      await w.page.getByRole('button', { name: 'Open a shop…' }).click();
      const tz = w.page.locator('#open-shop').getByLabel('Time zone');
      expect(await tz.evaluate((el) => el.tagName)).toBe('SELECT');
      expect(await tz.inputValue()).toBe('Asia/Kolkata');
      expect(await tz.locator('option').count()).toBeGreaterThan(100);
      await w.page.locator('#open-shop').getByLabel('Shop name').fill('Juhu Beach');
      await tz.selectOption('Asia/Dubai');
      await w.page.getByRole('button', { name: 'Open shop' }).click();
      await w.page.locator('[data-shop="juhu-beach"]').waitFor();
      const made = await h.request('GET', '/api/sites/juhu-beach', { token: s.chain.ownerToken });
      expect(made.body.timezone ?? (await h.request('GET', '/api/sites', { token: s.chain.ownerToken })).body.find((x: any) => x.slug === 'juhu-beach').timezone).toBe('Asia/Dubai');
      expect([200, 204]).toContain((await h.request('DELETE', '/api/sites/juhu-beach', { token: s.chain.ownerToken })).status);
      await done(w);
      const staff = await as('staff', PHONE);
      await staff.page.locator(`[data-shop="${s.bandra.shop.slug}"]`).waitFor();
      expect(await staff.page.getByRole('button', { name: 'Open a shop…' }).count()).toBe(0);
      await done(staff);
    });

    /** Deactivates a member through the page's own confirmation step. */
    async function deactivateInPage(w: Watched, email: string, name: string): Promise<void> {
      await w.page.getByRole('button', { name: `Deactivate ${email}` }).click();
      const step = w.page.getByRole('group', { name: `Confirm deactivating ${email}` });
      await step.waitFor();
      await step.getByRole('button', { name: `Deactivate ${name}` }).click();
      await w.page.getByText(`${name} is deactivated and signed out everywhere.`).waitFor();
    }

    /** Withdraws an invitation through the page's own confirmation step; head office no longer lists it. */
    async function withdrawInPage(w: Watched, invited: string): Promise<void> {
      await w.page.getByRole('button', { name: `Withdraw the invitation of ${invited}` }).click();
      const withdraw = w.page.getByRole('group', { name: `Confirm withdrawing the invitation of ${invited}` });
      await withdraw.getByRole('button', { name: `Withdraw the invitation of ${invited}` }).click();
      await w.page.getByText(`Withdrew the invitation of ${invited}.`).waitFor();
      const pending = await h.request('GET', '/api/team/invitations', { token: s.chain.ownerToken });
      expect(pending.body.some((i: any) => i.email === invited)).toBe(false);
    }

    /** The platform admin suspends a new company through the page's confirmation step (any browser dialog fails). */
    async function suspendInPage(company: string, size?: { width: number; height: number }): Promise<void> {
      const gone = await h.company(company);
      const admin = await openWatched(browser, h.url + '/', EXPECTED);
      if (size) await admin.page.setViewportSize(size);
      admin.page.on('dialog', (d) => {
        admin.problems.push(`dialog: ${d.message()}`);
        void d.dismiss();
      });
      await signIn(admin.page, h.admin.email, h.admin.password);
      await admin.page.getByRole('button', { name: `Suspend ${company}` }).click();
      const confirm = admin.page.getByRole('group', { name: `Confirm suspending ${company}` });
      await confirm.waitFor();
      await confirm.getByRole('button', { name: `Suspend ${company}` }).click();
      await admin.page.getByText(new RegExp(`${company} is suspended`)).waitFor();
      const after = await h.request('GET', '/api/admin/clients', { token: await h.adminToken() });
      expect(after.body.find((c: any) => c.id === gone.id).active).toBe(false);
      await done(admin);
    }

    it('deactivating a member, withdrawing an invitation and suspending a company confirm in the page, never with a browser dialog', async () => {
      const email = `temp-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/members', { token: s.chain.ownerToken, body: { email, full_name: 'Tem Porary', role: 'staff', password: 'temp-password-1' } })).status).toBe(201);
      const w = await as('owner', PHONE, '/#/team');
      await deactivateInPage(w, email, 'Tem Porary');
      // Withdrawing an invitation: the same in-page step.
      const invited = `invited-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/invitations', { token: s.chain.ownerToken, body: { email: invited, full_name: 'In Vited', role: 'staff' } })).status).toBe(201);
      await w.page.evaluate(`location.hash = '#/'`);
      await w.page.evaluate(`location.hash = '#/team'`);
      await withdrawInPage(w, invited);
      await done(w);

      await suspendInPage('Suspend Me');
    });

    it('at 1366 px too: deactivating, withdrawing and suspending confirm in the page; staff are offered none of them and head office refuses them', async () => {
      const email = `temp-wide-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/members', { token: s.chain.ownerToken, body: { email, full_name: 'Wide Temp', role: 'staff', password: 'temp-password-1' } })).status).toBe(201);
      const invited = `invited-wide-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/invitations', { token: s.chain.ownerToken, body: { email: invited, full_name: 'Wide Invite', role: 'staff' } })).status).toBe(201);
      // Staff at both widths: the team list without any of these buttons, and the API says no.
      for (const size of [WIDE, PHONE]) {
        const staff = await as('staff', size, '/#/team');
        await staff.page.locator(`tr[data-member="${email}"]`).waitFor();
        expect(await staff.page.getByRole('button', { name: /^Deactivate / }).count()).toBe(0);
        expect(await staff.page.getByRole('button', { name: /^Withdraw the invitation/ }).count()).toBe(0);
        expect(await overflowsSideways(staff.page)).toBe(false);
        await done(staff);
      }
      const members = await h.request('GET', '/api/team', { token: s.chain.ownerToken });
      const temp = members.body.find((m: any) => m.email === email);
      expect((await h.request('PATCH', `/api/team/${temp.id}`, { token: s.staff.token, body: { active: false } })).status).toBe(403);
      const invitation = (await h.request('GET', '/api/team/invitations', { token: s.chain.ownerToken })).body.find((i: any) => i.email === invited);
      expect((await h.request('DELETE', `/api/team/invitations/${invitation.id}`, { token: s.staff.token })).status).toBe(403);

      const w = await as('owner', WIDE, '/#/team');
      await deactivateInPage(w, email, 'Wide Temp');
      await withdrawInPage(w, invited);
      const after = await h.request('GET', '/api/team', { token: s.chain.ownerToken });
      expect(after.body.find((m: any) => m.email === email).active).toBe(false);
      expect(await overflowsSideways(w.page)).toBe(false);
      await done(w);

      await suspendInPage('Suspend Wide', WIDE);
      expect([403, 404]).toContain((await h.request('GET', '/api/admin/clients', { token: s.chain.ownerToken })).status); // an owner is no platform admin: refused (head office hides the admin routes)
    });

    it('no Assistant tab while the assistant is off (head office says so before any question)', async () => {
      for (const [who, size] of [['owner', WIDE], ['staff', PHONE]] as const) {
        const w = await as(who, size);
        await w.page.locator(`[data-shop="${s.bandra.shop.slug}"]`).waitFor();
        await until(w.page, `sessionStorage.getItem('footfall.assistant-off') === '1'`);
        expect(await w.page.locator('header nav a[href="#/assistant"]').count()).toBe(0);
        await w.page.getByRole('link', { name: 'Reports' }).click();
        await w.page.locator('#report-form').waitFor();
        expect(await w.page.locator('header nav a[href="#/assistant"]').count()).toBe(0);
        await done(w);
      }
    });
  });

  describe('new', () => {
    // Waits 8 s and then up to 20 s on the console's own clocks: it runs beside the three read-only pages after it.
    it.concurrent('live view and a camera check with an online shop PC that does not answer give up within seconds, without the old picture in the frame', async () => {
      const w = await as('owner', WIDE, `/#/shop/${s.bandra.shop.slug}`);
      const cam = w.page.locator('[data-camera="till"]');
      await cam.locator('img.snapshot').waitFor();
      await cam.getByRole('button', { name: 'Watch live' }).click();
      await cam.locator('.snapshot-empty').getByText('Connecting to the shop PC…').waitFor({ timeout: 2000 });
      expect(await cam.locator('.picture img').count()).toBe(0); // the old picture is not posing as live
      const started = Date.now();
      await cam.getByText(/No picture came from the shop PC in 8 seconds/).waitFor({ timeout: 12_000 });
      expect(Date.now() - started).toBeLessThan(11_000);
      expect(await cam.getByRole('button', { name: 'Watch live' }).count()).toBe(1);
      // Head office was told nobody watches any more.
      await waitFor(async () => (await upload(h, 'POST', '/api/agent/live/till/frames', s.bandra.enrolment.token, await jpeg())).body.watching === false, 5000, 100);
      // A connection check the online shop PC does not answer: said within 20 s (not after head office's five minutes).
      await cam.getByRole('button', { name: 'Check connection' }).click();
      await cam.getByText('Connection check requested. Waiting for the shop PC…').waitFor();
      await cam.getByText(/The shop PC has not answered the check in \d+ seconds/).waitFor({ timeout: 26_000 });
      await done(w);
    }, 60_000);

    it.concurrent('overview: today, this week and this month against the period before, with trend lines, and shops ranked', async () => {
      for (const [who, size] of [['owner', WIDE], ['staff', PHONE]] as const) {
        const w = await as(who, size);
        const today = w.page.locator('#headlines [data-period="today"]');
        await today.waitFor();
        const zoneToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Kolkata' }).format(new Date());
        const api = async (path: string) => (await h.request('GET', path, { token: s.chain.ownerToken })).body;
        const ff = await api(`/api/reports/footfall?from=${zoneToday}&to=${zoneToday}&tz=Asia/Kolkata`);
        expect(await today.locator('[data-figure="Visitors"] .value').innerText()).toBe(ff.total.toLocaleString('en-US'));
        const month = w.page.locator('#headlines [data-period="month"]');
        const monthFrom = `${zoneToday.slice(0, 8)}01`;
        const mf = await api(`/api/reports/footfall?from=${monthFrom}&to=${zoneToday}&tz=Asia/Kolkata`);
        expect(await month.locator('[data-figure="Visitors"] .value').innerText()).toBe(mf.total.toLocaleString('en-US'));
        expect(await w.page.locator('#headlines .change').count()).toBeGreaterThanOrEqual(6);
        expect(await w.page.locator('#headlines svg.spark polyline').count()).toBe(3);
        const ranking = w.page.locator('#shop-ranking');
        await ranking.waitFor();
        const order = async () => (await ranking.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-rank-shop'))));
        expect((await order())[0]).toBe(s.bandra.shop.slug);
        await ranking.getByRole('button', { name: 'Revenue' }).click();
        expect(await ranking.getByRole('button', { name: 'Revenue' }).getAttribute('aria-pressed')).toBe('true');
        expect(await order()).toHaveLength(3);
        expect(await overflowsSideways(w.page)).toBe(false);
        await done(w);
      }
    });

    it.concurrent('reports: heatmap, shops side by side, conversion over time (uPlot), settings in the address, CSV download', async () => {
      const w = await as('owner', WIDE, '/#/reports?preset=30&bucket=day&tz=Asia%2FKolkata');
      await until(w.page, `document.querySelector('#report')?.getAttribute('data-query')?.includes('bucket=day')`);
      expect(await w.page.locator('#report-form select[name="preset"]').inputValue()).toBe('30');
      await w.page.locator('#heatmap').waitFor();
      const query = new URLSearchParams((await w.page.locator('#report').getAttribute('data-query'))!);
      const hourly = await h.request('GET', `/api/reports/footfall?from=${query.get('from')}&to=${query.get('to')}&tz=Asia/Kolkata&bucket=hour`, { token: s.chain.ownerToken });
      const cells = (await w.page.locator('#heatmap td.heat').evaluateAll((tds) => tds.map((t) => Number(t.getAttribute('data-visitors'))))) as number[];
      expect(cells.reduce((a, b) => a + b, 0)).toBe(hourly.body.points.reduce((n: number, p: any) => n + p.visitors, 0));
      await w.page.locator('#side-table').waitFor();
      expect(await w.page.locator('#side-table tbody tr').count()).toBe(3);
      await w.page.locator('#over-time-chart canvas').waitFor();
      expect(await w.page.locator('#over-time-table tbody tr').count()).toBe(30);
      // Custom dates go into the address; opening it again shows the same report.
      await w.page.locator('#report-form').getByLabel('Period').selectOption('custom');
      await w.page.locator('#report-form').getByLabel('From', { exact: true }).fill(query.get('from')!);
      await w.page.locator('#report-form').getByLabel('Shop').selectOption(s.bandra.shop.slug);
      await w.page.getByRole('button', { name: 'Show' }).click();
      await until(w.page, `location.hash.includes('site=${s.bandra.shop.slug}') && location.hash.includes('from=')`);
      // The address changes when the form is sent, the results (and their data-query) when the answers are in.
      await until(w.page, `document.querySelector('#report')?.getAttribute('data-query')?.includes('site=${s.bandra.shop.slug}')`);
      const hash = (await w.page.evaluate('location.hash')) as string;
      const shown = await w.page.locator('#report').getAttribute('data-query');
      // CSV download: the API's CSV for the same query.
      const [download] = await Promise.all([w.page.waitForEvent('download'), w.page.locator('[data-csv="footfall"]').click()]);
      const csv = fs.readFileSync((await download.path())!, 'utf8');
      const api = await h.request('GET', `/api/reports/footfall?${shown}&format=csv`, { token: s.chain.ownerToken });
      expect(csv).toBe(api.body);
      // The first columns as before; visits, dwell and bands are additive columns after them (docs/reports.md).
      expect(csv.split('\r\n')[0]).toMatch(/^bucket,visitors,new,returning,not_identified,entries,exits,capture_rate,visits,average_dwell_s,median_dwell_s,age_under_18,/);
      await done(w);
      const again = await as('staff', PHONE, `/${hash}`);
      await until(again.page, `document.querySelector('#report')?.getAttribute('data-query') === ${JSON.stringify(shown)}`);
      expect(await overflowsSideways(again.page)).toBe(false);
      await done(again);
    });

    it.concurrent('customers: photo thumbnails, most visits, top spend, lapsed 30+ days; lifetime spend and visits on the customer page', async () => {
      // A visit with a face picture: its customer has a photo.
      const up = await s.bandra.uploadFace(await jpeg(40, 40, 200));
      expect(up.status).toBe(201);
      await s.bandra.publish({ visit_id: randomUUID(), occurred_at: new Date(Date.now() - 2000).toISOString(), camera_id: 'door', embedding: syntheticFace(3), recognition_model: 'test-model', quality: 0.9, passed_gate: true, face_image_id: up.body.face_image_id });
      await settled(h);
      const pictured = (await h.request('GET', '/api/visitors?limit=1', { token: s.chain.ownerToken })).body[0].ref;
      for (const [who, size] of [['staff', PHONE], ['owner', WIDE]] as const) {
        const w = await as(who, size, '/#/customers');
        await w.page.locator('#customers tbody tr').first().waitFor();
        await until(w.page, `document.querySelector('#customers tr[data-customer="${pictured}"] img.thumb')?.naturalWidth === 40`);
        expect(await w.page.locator('#customers img.thumb').count()).toBe(1); // the others have no photo: nothing shown
        for (const [label, query] of [['Most visits', 'sort=visits'], ['Top spend', 'sort=spend'], ['Lapsed: not seen for 30+ days', 'lapsed_days=30&sort=visits']] as const) {
          await w.page.locator('#customer-search').getByLabel('Show').selectOption({ label });
          const want = (await h.request('GET', `/api/visitors?limit=50&${query}`, { token: s.chain.ownerToken })).body.map((c: any) => c.ref);
          await until(w.page, `JSON.stringify([...document.querySelectorAll('#customers tbody tr')].map((r) => r.getAttribute('data-customer'))) === ${JSON.stringify(JSON.stringify(want))}`);
        }
        await w.page.locator('#customer-search').getByLabel('Show').selectOption({ label: 'Top spend' });
        const top = (await h.request('GET', '/api/visitors?limit=1&sort=spend', { token: s.chain.ownerToken })).body[0];
        await until(w.page, `document.querySelector('#customers tbody tr')?.getAttribute('data-customer') === '${top.ref}'`);
        await w.page.locator('#customers tbody tr').first().getByRole('link', { name: top.ref }).click();
        const spend = w.page.locator('[data-fact="Lifetime spend"]');
        await spend.waitFor();
        expect(await spend.innerText()).toBe(`${new Intl.NumberFormat('en-US', { style: 'currency', currency: 'INR' }).format(top.spend)} (${top.purchases} purchase${top.purchases === 1 ? '' : 's'})`);
        expect(await text(w.page, '[data-fact="Visits"]')).toBe(String(top.visit_count));
        expect(await overflowsSideways(w.page)).toBe(false);
        await done(w);
      }
    });

    it('live grid: every camera of the shop live side by side in one stream (seven cameras: more than a browser\'s six connections), each full screen on demand', async () => {
      const extra = [];
      for (let i = 1; i <= 5; i++) extra.push(await addCamera(h, s.chain.ownerToken, s.bandra.shop.slug, { camera_id: `aisle-${i}` }));
      const all = ['door', 'till', ...extra.map((c) => c.camera_id as string)];
      try {
        for (const [who, size] of [['staff', PHONE], ['owner', WIDE]] as const) {
          const w = await as(who, size, `/#/shop/${s.bandra.shop.slug}`);
          await w.page.getByRole('link', { name: 'Watch all cameras live (grid)' }).click();
          const grid = w.page.locator('#live-grid');
          await grid.locator('[data-camera="door"]').waitFor();
          expect(await grid.locator('.live-tile').count()).toBe(7);
          const frame = await jpeg(96, 54, 220);
          for (const cam of all) {
            await waitFor(async () => (await upload(h, 'POST', `/api/agent/live/${cam}/frames`, s.bandra.enrolment.token, frame)).body.watching === true, 5000, 50);
          }
          let shown = false;
          for (let i = 0; i < 50 && !shown; i++) {
            for (const cam of all) await upload(h, 'POST', `/api/agent/live/${cam}/frames`, s.bandra.enrolment.token, frame);
            shown = (await w.page.evaluate(`[...document.querySelectorAll('#live-grid img.snapshot')].filter((i) => i.naturalWidth === 96).length === 7`)) as boolean;
            if (!shown) await new Promise((r) => setTimeout(r, 100));
          }
          expect(shown).toBe(true);
          await grid.locator('[data-camera="door"]').getByRole('button', { name: 'Full screen: Front door' }).click();
          await until(w.page, `document.fullscreenElement?.getAttribute('data-camera') === 'door'`);
          await w.page.evaluate('document.exitFullscreen()');
          expect(await overflowsSideways(w.page)).toBe(false);
          await w.page.getByRole('link', { name: '← Back to the shop' }).click();
          await waitFor(async () => (await upload(h, 'POST', '/api/agent/live/door/frames', s.bandra.enrolment.token, frame)).body.watching === false, 5000, 100);
          await done(w);
        }
      } finally {
        for (const c of extra) await h.request('DELETE', `/api/cameras/${c.id}`, { token: s.chain.ownerToken });
      }
    }, 60_000);

    it('change my own password: current one required, other devices signed out, this one stays', async () => {
      const email = `pw-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/members', { token: s.chain.ownerToken, body: { email, full_name: 'Pat Word', role: 'staff', password: 'first-password-1' } })).status).toBe(201);
      const elsewhere = await h.login(email, 'first-password-1', 'phone');
      const w = await openWatched(browser, `${h.url}/#/account`, EXPECTED);
      await w.page.setViewportSize(PHONE);
      await signIn(w.page, email, 'first-password-1');
      const form = w.page.locator('#change-password');
      await form.waitFor();
      await form.getByLabel('Current password').fill('wrong-password');
      await form.getByLabel('New password', { exact: true }).fill('second-password-2');
      await form.getByLabel('New password again').fill('second-password-2');
      await form.getByRole('button', { name: 'Change password' }).click();
      await form.getByText('The current password is wrong, so the password was not changed.').waitFor();
      await form.getByLabel('Current password').fill('first-password-1');
      await form.getByRole('button', { name: 'Change password' }).click();
      await form.getByText(/Your password is changed\. 1 other session was signed out\./).waitFor();
      expect((await h.request('GET', '/api/auth/me', { token: elsewhere.access_token })).status).toBe(401);
      await w.page.getByRole('link', { name: 'Customers' }).click();
      await w.page.locator('#customer-search').waitFor(); // still signed in here
      await h.login(email, 'second-password-2');
      w.problems.splice(0, w.problems.length, ...w.problems.filter((p) => !/status of 403/.test(p)));
      await done(w);
    });

    it('change my own password as an owner at 1366 px: current one required, other devices signed out, this one stays', async () => {
      const email = `pw-owner-${process.pid}@shop.test`;
      expect((await h.request('POST', '/api/team/members', { token: s.chain.ownerToken, body: { email, full_name: 'Olive Owner', role: 'owner', password: 'first-password-1' } })).status).toBe(201);
      const elsewhere = await h.login(email, 'first-password-1', 'phone');
      const w = await openWatched(browser, `${h.url}/#/account`, EXPECTED);
      await w.page.setViewportSize(WIDE);
      await signIn(w.page, email, 'first-password-1');
      const form = w.page.locator('#change-password');
      await form.waitFor();
      await form.getByLabel('Current password').fill('wrong-password');
      await form.getByLabel('New password', { exact: true }).fill('second-password-2');
      await form.getByLabel('New password again').fill('second-password-2');
      await form.getByRole('button', { name: 'Change password' }).click();
      await form.getByText('The current password is wrong, so the password was not changed.').waitFor();
      expect((await h.request('GET', '/api/auth/me', { token: elsewhere.access_token })).status).toBe(200); // a refused change revokes nothing
      await form.getByLabel('Current password').fill('first-password-1');
      await form.getByRole('button', { name: 'Change password' }).click();
      await form.getByText(/Your password is changed\. 1 other session was signed out\./).waitFor();
      expect((await h.request('GET', '/api/auth/me', { token: elsewhere.access_token })).status).toBe(401);
      await w.page.getByRole('link', { name: 'Team' }).click();
      await w.page.locator(`tr[data-member="${email}"]`).waitFor(); // still signed in here, as an owner
      await h.login(email, 'second-password-2');
      expect(await overflowsSideways(w.page)).toBe(false);
      w.problems.splice(0, w.problems.length, ...w.problems.filter((p) => !/status of 403/.test(p)));
      await done(w);
    });

    it('full screen from a camera’s live picture on the shop page, owner and staff at 1366 and 390 px', async () => {
      const frame = await jpeg(96, 54, 220);
      for (const [who, size] of [['owner', WIDE], ['staff', PHONE], ['owner', PHONE], ['staff', WIDE]] as const) {
        const w = await as(who, size, `/#/shop/${s.bandra.shop.slug}`);
        const cam = w.page.locator('[data-camera="door"]');
        await cam.locator('img.snapshot').waitFor();
        const full = cam.getByRole('button', { name: 'Full screen', exact: true });
        expect(await full.isVisible()).toBe(false); // nothing live to enlarge yet
        await cam.getByRole('button', { name: 'Watch live' }).click();
        await waitFor(async () => (await upload(h, 'POST', '/api/agent/live/door/frames', s.bandra.enrolment.token, frame)).body.watching === true, 5000, 50);
        let shown = false;
        for (let i = 0; i < 50 && !shown; i++) {
          await upload(h, 'POST', '/api/agent/live/door/frames', s.bandra.enrolment.token, frame);
          shown = (await w.page.evaluate(`document.querySelector('[data-camera="door"] .picture img.snapshot')?.naturalWidth === 96`)) as boolean;
          if (!shown) await new Promise((r) => setTimeout(r, 100));
        }
        expect(shown).toBe(true);
        await full.click();
        await until(w.page, `document.fullscreenElement?.classList.contains('picture') && document.fullscreenElement.closest('[data-camera]')?.getAttribute('data-camera') === 'door'`);
        await w.page.evaluate('document.exitFullscreen()');
        await until(w.page, 'document.fullscreenElement === null');
        expect(await overflowsSideways(w.page)).toBe(false);
        await cam.getByRole('button', { name: 'Stop live view' }).click();
        await waitFor(async () => (await upload(h, 'POST', '/api/agent/live/door/frames', s.bandra.enrolment.token, frame)).body.watching === false, 5000, 100);
        await done(w);
      }
    }, 60_000);

    it('the platform admin sees each company’s health: shop PCs online and the last activity', async () => {
      for (const size of [WIDE, PHONE]) {
        const w = await openWatched(browser, h.url + '/', EXPECTED);
        await w.page.setViewportSize(size);
        await signIn(w.page, h.admin.email, h.admin.password);
        const row = w.page.locator(`[data-company="${s.chain.slug}"]`);
        await row.waitFor();
        expect(await row.locator('[data-health="online"]').innerText()).toBe('1 of 3');
        expect(await row.locator('[data-health="activity"]').innerText()).toMatch(/just now|min ago/);
        expect(await overflowsSideways(w.page)).toBe(false);
        await done(w);
      }
    });
  });
});
