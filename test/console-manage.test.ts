import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { done, haveChromium, launchChromium, openWatched, signIn, stored, warnIfNoChromium, type Watched } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { addCamera, enrol, openShop } from './support/shop-pc.js';

/**
 * The console's management pages in a real browser (Debian's chromium through playwright-core) against a real head
 * office (test harness: SQLite file, broker, HTTP): my account and its devices, adding members and resetting their
 * passwords, editing and removing cameras, removing a shop, the platform admin's owner-password reset and company
 * deletion, and the assistant (through a loopback LLM stand-in). Every outcome is checked through the API. Every
 * page is watched for console errors, uncaught exceptions and CSP violations.
 */

warnIfNoChromium('console-manage.test.ts');

/** Chromium logs the API's expected refusals (a wrong slug, a non-empty shop, a revoked token, the assistant off). */
const EXPECTED = /^Failed to load resource: the server responded with a status of (400|401|404|409|501) /;

interface LlmBody {
  messages: { role: string; content: string | null }[];
}

/**
 * A loopback stand-in for the assistant's LLM (an OpenAI-compatible Chat Completions API, as in
 * test/api-fuzz.test.ts and server/assistant/assistant.test.ts): asked a question, it calls the `sites` tool once;
 * given the tool's result, it answers with the question it was asked. Every request body is kept.
 */
async function llmStandIn(): Promise<{ url: string; bodies: LlmBody[]; close(): Promise<void> }> {
  const bodies: LlmBody[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as LlmBody;
      bodies.push(body);
      const asked = [...body.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      const toolDone = body.messages[body.messages.length - 1]?.role === 'tool';
      const message = toolDone
        ? { role: 'assistant', content: `About "${asked}": you have <b>2</b> shops.` }
        : { role: 'assistant', content: null, tool_calls: [{ id: `call_${bodies.length}`, type: 'function', function: { name: 'sites', arguments: '{}' } }] };
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ id: `c${bodies.length}`, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: toolDone ? 'stop' : 'tool_calls' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let browser: Browser;
let h: Harness;

const open = (path = '/'): Promise<Watched> => openWatched(browser, h.url + path, EXPECTED);
const token = async (page: Watched['page']): Promise<string> => (await stored(page, 'sessionStorage'))!.access_token;

describe.skipIf(!haveChromium)('console management pages in a browser', () => {
  let chain: Company;

  beforeAll(async () => {
    browser = await launchChromium();
    h = await startHarness();
    chain = await h.company('Manage Mart');
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('my account: who I am and my devices; sign out one device, every other device, then this one', async () => {
    // A company of its own: "every other device" also ends the sessions the other tests use.
    const own = await h.company('Account Co');
    const phone = await h.login(own.ownerEmail, own.ownerPassword, 'Phone app');
    const tablet = await h.login(own.ownerEmail, own.ownerPassword, 'Tablet');
    const w = await open('/#/account');
    const { page } = w;
    await signIn(page, own.ownerEmail, own.ownerPassword);
    await page.locator('#me').getByText(own.ownerEmail).waitFor();
    expect(await page.locator('#me').innerText()).toMatch(/Role\s+owner/);
    expect(await page.locator('#me').innerText()).toMatch(/Company\s+Account Co/);
    expect(await page.locator('header a.user').getAttribute('aria-current')).toBe('page');

    const sessions = page.locator('#sessions');
    await sessions.getByText('Tablet').waitFor();
    const mine = await token(page);
    const listed = (await h.request('GET', '/api/auth/sessions', { token: mine })).body as { id: string; device: string; current: boolean }[];
    const current = listed.find((s) => s.current)!;
    expect(await sessions.locator(`[data-session="${current.id}"]`).innerText()).toContain('this device');
    expect(await sessions.locator('tbody tr').count()).toBe(listed.length);

    // One device: the phone's token stops working at once.
    const phoneRow = listed.find((s) => s.device === 'Phone app')!;
    await sessions.locator(`[data-session="${phoneRow.id}"]`).getByRole('button', { name: /^Sign out Phone app/ }).click();
    await page.getByText('Signed out Phone app.').waitFor();
    expect((await h.request('GET', '/api/auth/me', { token: phone.access_token })).status).toBe(401);
    expect((await h.request('GET', '/api/auth/me', { token: tablet.access_token })).status).toBe(200);

    // Every other device: only this one is left.
    await page.getByRole('button', { name: 'Sign out every other device' }).click();
    await page.getByText(/^Signed out \d+ other devices?\.$/).waitFor();
    const left = (await h.request('GET', '/api/auth/sessions', { token: mine })).body as { id: string; current: boolean }[];
    expect(left).toEqual([expect.objectContaining({ id: current.id, current: true })]);
    expect((await h.request('GET', '/api/auth/me', { token: tablet.access_token })).status).toBe(401);
    await sessions.locator('tbody tr').nth(1).waitFor({ state: 'detached' });
    expect(await page.getByRole('button', { name: 'Sign out every other device' }).isHidden()).toBe(true);

    // This device: a sign-out.
    await sessions.getByRole('button', { name: 'Sign out this device' }).click();
    await page.getByText('You are signed out.').waitFor();
    expect(await stored(page, 'sessionStorage')).toBeNull();
    expect((await h.request('GET', '/api/auth/me', { token: mine })).status).toBe(401);
    await done(w);
  });

  it('my account: the platform admin reaches it from the header too', async () => {
    const w = await open();
    await signIn(w.page, h.admin.email, h.admin.password);
    await w.page.locator(`[data-company="${chain.slug}"]`).waitFor();
    await w.page.locator('header a.user').click();
    await w.page.locator('#me').getByText(h.admin.email).waitFor();
    expect(await w.page.locator('#me').innerText()).toMatch(/Role\s+platform admin/);
    await w.page.locator('#sessions [data-session]').first().waitFor();
    await w.page.getByRole('link', { name: 'Companies' }).click();
    await w.page.locator(`[data-company="${chain.slug}"]`).waitFor();
    await done(w);
  });

  it('team: an owner adds a member (the shown password signs in), then resets it after a confirmation step', async () => {
    const w = await open('/#/team');
    const { page } = w;
    await signIn(page, chain.ownerEmail, chain.ownerPassword);
    const email = `mira-${process.pid}@shop.test`;
    const form = page.locator('#add-member');
    await form.getByLabel('Email').fill(email);
    await form.getByLabel('Full name').fill('Mira Manager');
    await form.getByLabel('Role').selectOption('manager');
    await form.getByRole('button', { name: 'Add member' }).click();
    const first = await page.locator('#member-password').innerText();
    expect(first.length).toBeGreaterThanOrEqual(8);
    const mira = await h.login(email, first);
    expect(mira.user).toMatchObject({ email, role: 'manager', full_name: 'Mira Manager' });

    const row = page.locator(`[data-member="${email}"]`);
    await row.waitFor();
    expect(await page.locator(`[data-member="${chain.ownerEmail}"]`).getByRole('button', { name: /Reset the password/ }).count()).toBe(0); // not yourself
    // The confirmation step: cancel first, nothing happens.
    await row.getByRole('button', { name: `Reset the password of ${email}` }).click();
    const confirm = page.locator('#reset-confirm');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect((await h.request('GET', '/api/auth/me', { token: mira.access_token })).status).toBe(200);

    await row.getByRole('button', { name: `Reset the password of ${email}` }).click();
    await confirm.getByRole('button', { name: `Reset the password of ${email}` }).click();
    const second = await page.locator('#member-password-reset').innerText();
    expect(second).not.toBe(first);
    expect((await h.login(email, second)).user.email).toBe(email);
    expect((await h.request('POST', '/api/auth/login', { body: { email, password: first } })).status).toBe(401);
    expect((await h.request('GET', '/api/auth/me', { token: mira.access_token })).status).toBe(401); // signed out everywhere
    await done(w);

    // Mira (a manager) gets no reset control on the owner's row.
    const m = await open('/#/team');
    await signIn(m.page, email, second);
    await m.page.locator(`[data-member="${email}"]`).waitFor();
    expect(await m.page.locator(`[data-member="${chain.ownerEmail}"] button`).count()).toBe(0);
    expect(await m.page.locator('#add-member').getByLabel('Role').locator('option').allInnerTexts()).toEqual(['staff', 'manager']);
    await done(m);
  });

  it('shop page: an owner edits a camera (blank password kept) and removes one; an owner removes an empty shop, not a busy one', async () => {
    const shop = await openShop(h, chain.ownerToken, { name: 'Edit Street', slug: 'edit-street' });
    const door = await addCamera(h, chain.ownerToken, shop.slug, { camera_id: 'door', label: 'Door', host: '10.0.0.5', username: 'admin', password: 'cam-secret' });
    const back = await addCamera(h, chain.ownerToken, shop.slug, { camera_id: 'back', label: 'Back <door>' });
    const pc = await enrol(h, chain.ownerToken, shop.slug);
    const pulled = async (cameraId: string) => ((await h.request('GET', '/api/agent/cameras', { token: pc.token })).body.cameras as { camera_id: string; password?: string }[]).find((c) => c.camera_id === cameraId);
    const camera = async (id: string) => ((await h.request('GET', '/api/cameras', { token: chain.ownerToken })).body as { id: string; [k: string]: unknown }[]).find((c) => c.id === id);

    const w = await open('/#/shop/edit-street');
    const { page } = w;
    await signIn(page, chain.ownerEmail, chain.ownerPassword);
    const card = page.locator('[data-camera="door"]');
    await card.getByRole('button', { name: 'Edit…' }).click();
    const form = card.locator('form.edit-camera');
    expect(await form.getByLabel('Address (host or IP)').inputValue()).toBe('10.0.0.5');
    expect(await form.getByLabel('New camera password').inputValue()).toBe('');
    await form.getByLabel('Label').fill('Front door');
    await form.getByLabel('Address (host or IP)').fill('10.0.0.9');
    await form.getByLabel('RTSP port').fill('8554');
    await form.getByLabel('Stream path').fill('/stream1');
    await form.getByLabel('Largest picture width').fill('1920');
    await form.getByRole('button', { name: 'Save camera' }).click();
    await card.getByText(/^Saved \(revision \d+\)/).waitFor();
    const edited = await camera(door.id);
    expect(edited).toMatchObject({ label: 'Front door', host: '10.0.0.9', port: 8554, path: '/stream1', username: 'admin', max_width: 1920, has_password: true });
    expect(edited!.revision as number).toBeGreaterThan(door.revision);
    expect((await pulled('door'))?.password).toBe('cam-secret'); // blank field: the password was kept
    await card.locator('h3').getByText('Front door').waitFor();

    // A typed password replaces it.
    await card.getByRole('button', { name: 'Edit…' }).click();
    await form.getByLabel('New camera password').fill('new-secret');
    await form.getByRole('button', { name: 'Save camera' }).click();
    await form.waitFor({ state: 'detached' });
    expect((await pulled('door'))?.password).toBe('new-secret');
    expect((await camera(door.id))!.revision as number).toBeGreaterThan(edited!.revision as number);

    // Remove a camera after the confirmation step.
    const backCard = page.locator('[data-camera="back"]');
    await backCard.getByRole('button', { name: 'Remove…' }).click();
    await backCard.getByRole('button', { name: 'Remove Back <door>' }).click();
    await backCard.waitFor({ state: 'detached' });
    await page.getByText('Removed Back <door>.', { exact: false }).waitFor();
    expect(await camera(back.id)).toBeUndefined();

    // This shop still has a camera: the API refuses, and its message is shown.
    await page.getByRole('button', { name: 'Remove this shop…' }).click();
    await page.getByRole('button', { name: 'Remove Edit Street' }).click();
    const alert = page.locator('#remove-shop [role="alert"]');
    await alert.waitFor();
    const refused = await h.request('DELETE', '/api/sites/edit-street', { token: chain.ownerToken });
    expect(refused.status).toBe(409);
    expect(await alert.innerText()).toBe(refused.body.message);
    await done(w);

    // An empty shop goes.
    await openShop(h, chain.ownerToken, { name: 'Empty Corner', slug: 'empty-corner' });
    const e = await open('/#/shop/empty-corner');
    await signIn(e.page, chain.ownerEmail, chain.ownerPassword);
    await e.page.locator('#no-cameras').waitFor();
    await e.page.getByRole('button', { name: 'Remove this shop…' }).click();
    await e.page.getByRole('button', { name: 'Remove Empty Corner' }).click();
    await e.page.locator('#shop-removed').getByText('Empty Corner (empty-corner) is removed.').waitFor();
    const sites = (await h.request('GET', '/api/sites', { token: chain.ownerToken })).body as { slug: string }[];
    expect(sites.map((s) => s.slug)).not.toContain('empty-corner');
    await done(e);
  });

  it('platform admin: resets an owner’s password (choosing among several owners) and deletes a company with its slug typed', async () => {
    const solo = await h.company('Solo Shops');
    const duo = await h.company('Duo Shops');
    const second = `second-${process.pid}@shop.test`;
    expect((await h.request('POST', '/api/team/members', { token: duo.ownerToken, body: { email: second, full_name: 'Second Owner', role: 'owner', password: 'second-owner-1' } })).status).toBe(201);
    const doomed = await h.company('Doomed Shops');
    // Only a suspended company can be deleted (the API answers 409 still_active otherwise); the page offers no Delete before.
    expect((await h.request('PATCH', `/api/admin/clients/${doomed.id}`, { token: await h.adminToken(), body: { active: false } })).status).toBe(200);

    const w = await open();
    const { page } = w;
    await signIn(page, h.admin.email, h.admin.password);

    // One owner: reset at once.
    await page.locator(`[data-company="${solo.slug}"]`).getByRole('button', { name: 'Reset the owner’s password of Solo Shops' }).click();
    await page.locator('#owner-reset').getByRole('button', { name: 'Reset owner password' }).click();
    const soloPassword = await page.locator('#owner-reset-password').innerText();
    expect((await h.login(solo.ownerEmail, soloPassword)).user.email).toBe(solo.ownerEmail);
    expect((await h.request('POST', '/api/auth/login', { body: { email: solo.ownerEmail, password: solo.ownerPassword } })).status).toBe(401);
    expect((await h.request('GET', '/api/auth/me', { token: solo.ownerToken })).status).toBe(401);

    // Two owners: the API's 400 lists them, the admin picks one.
    await page.locator(`[data-company="${duo.slug}"]`).getByRole('button', { name: 'Reset the owner’s password of Duo Shops' }).click();
    const reset = page.locator('#owner-reset');
    await reset.getByRole('button', { name: 'Reset owner password' }).click();
    const pick = reset.getByLabel('Owner');
    await pick.waitFor();
    expect((await pick.locator('option').allInnerTexts()).sort()).toEqual([duo.ownerEmail, second].sort());
    await pick.selectOption(second);
    await reset.getByRole('button', { name: 'Reset this owner’s password' }).click();
    const duoPassword = await page.locator('#owner-reset-password').innerText();
    expect(await page.locator('#owner-reset-result').innerText()).toContain(second);
    expect((await h.login(second, duoPassword)).user.email).toBe(second);
    expect((await h.request('POST', '/api/auth/login', { body: { email: second, password: 'second-owner-1' } })).status).toBe(401);
    expect((await h.request('GET', '/api/auth/me', { token: duo.ownerToken })).status).toBe(200); // the other owner untouched

    expect(await page.locator(`[data-company="${solo.slug}"]`).getByRole('button', { name: /^Delete/ }).count()).toBe(0);
    // Delete: a wrong slug is refused with the API's message, the right one deletes.
    await page.locator(`[data-company="${doomed.slug}"]`).getByRole('button', { name: 'Delete Doomed Shops' }).click();
    const form = page.locator('#delete-company');
    await form.getByLabel('Short name, to confirm').fill('not-the-slug');
    await form.getByRole('button', { name: 'Delete company for good' }).click();
    const alert = form.locator('[role="alert"]');
    await alert.waitFor();
    const wrong = await h.request('DELETE', `/api/admin/clients/${doomed.id}`, { token: await h.adminToken(), body: { confirm: 'not-the-slug' } });
    expect(wrong.status).toBe(400);
    expect(await alert.innerText()).toBe(wrong.body.message);
    const companies = async () => ((await h.request('GET', '/api/admin/clients', { token: await h.adminToken() })).body as { slug: string }[]).map((c) => c.slug);
    expect(await companies()).toContain(doomed.slug);
    await form.getByLabel('Short name, to confirm').fill(doomed.slug);
    await form.getByRole('button', { name: 'Delete company for good' }).click();
    await page.getByText(`Deleted Doomed Shops (${doomed.slug}); 0 stored photos deleted.`).waitFor();
    await page.locator(`[data-company="${doomed.slug}"]`).waitFor({ state: 'detached' });
    expect(await companies()).not.toContain(doomed.slug);
    expect((await h.request('POST', '/api/auth/login', { body: { email: doomed.ownerEmail, password: doomed.ownerPassword } })).status).toBe(401);
    await done(w);
  });

  it('assistant: answers through the LLM with the tools it used, the page resending the conversation; limits said before sending', async () => {
    const llm = await llmStandIn();
    const ha = await startHarness({ FOOTFALL_ASSISTANT_URL: `${llm.url}/v1`, FOOTFALL_ASSISTANT_MODEL: 'stand-in', FOOTFALL_ASSISTANT_TIMEOUT_MS: 5000 });
    try {
      const co = await ha.company('Ask Co');
      const w = await openWatched(browser, ha.url + '/', EXPECTED);
      const { page } = w;
      await signIn(page, co.ownerEmail, co.ownerPassword);
      await page.getByRole('link', { name: 'Assistant' }).click();
      const chat = page.locator('#chat');
      await page.getByLabel('Your question').fill('Which shops <i>do</i> we have?');
      await page.getByRole('button', { name: 'Ask' }).click();
      const answer = chat.locator('li.assistant').first();
      await answer.getByText('you have <b>2</b> shops.', { exact: false }).waitFor();
      expect(await answer.locator('.used').innerText()).toBe('Consulted: sites');
      expect(await chat.locator('li.user').first().innerText()).toContain('Which shops <i>do</i> we have?');
      expect(await chat.locator('b, i').count()).toBe(0); // text, never markup

      // The second question carries the first question and answer (the page holds the conversation).
      await page.getByLabel('Your question').fill('And the second one?');
      await page.getByRole('button', { name: 'Ask' }).click();
      await chat.locator('li.assistant').nth(1).waitFor();
      const sent = llm.bodies[llm.bodies.length - 1]!.messages.filter((m) => m.role === 'user' || (m.role === 'assistant' && m.content));
      expect(sent.map((m) => [m.role, m.content])).toEqual([
        ['user', 'Which shops <i>do</i> we have?'],
        ['assistant', 'About "Which shops <i>do</i> we have?": you have <b>2</b> shops.'],
        ['user', 'And the second one?'],
      ]);

      // Too long: said before sending, nothing sent.
      const calls = llm.bodies.length;
      await page.getByLabel('Your question').fill('x'.repeat(2001));
      await page.getByRole('button', { name: 'Ask' }).click();
      await page.locator('#ask [role="alert"]').getByText('That question has 2,001 characters; the assistant takes at most 2,000. Shorten it.').waitFor();

      // 24 turns: 12 questions fill the conversation; the 13th is refused in the page.
      for (let i = 3; i <= 12; i++) {
        await page.getByLabel('Your question').fill(`Question ${i}`);
        await page.getByRole('button', { name: 'Ask' }).click();
        await chat.locator('li.assistant').nth(i - 1).waitFor();
      }
      const before = llm.bodies.length;
      expect(before).toBe(calls + 20);
      await page.getByLabel('Your question').fill('One more?');
      await page.getByRole('button', { name: 'Ask' }).click();
      await page.locator('#ask [role="alert"]').getByText(/reached 24 turns/).waitFor();
      expect(llm.bodies.length).toBe(before);
      await page.getByRole('button', { name: 'New conversation' }).click();
      expect(await chat.locator('li').count()).toBe(0);
      await page.getByRole('button', { name: 'Ask' }).click();
      await chat.locator('li.assistant').first().waitFor();
      expect(llm.bodies[llm.bodies.length - 1]!.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['One more?']);
      await done(w);
    } finally {
      await ha.close();
      await llm.close();
    }
  });

  it('assistant: with no LLM configured the page says it is not set up, and the navigation entry goes', async () => {
    const w = await open('/#/assistant');
    const { page } = w;
    await signIn(page, chain.ownerEmail, chain.ownerPassword);
    await page.getByLabel('Your question').fill('How many visitors today?');
    await page.getByRole('button', { name: 'Ask' }).click();
    await page.locator('#assistant-off').getByText('The assistant is not set up on this head office.', { exact: false }).waitFor();
    expect(await page.locator('#ask').isHidden()).toBe(true);
    expect(await page.locator('header nav a[href="#/assistant"]').count()).toBe(0);
    const r = await h.request('POST', '/api/assistant', { token: chain.ownerToken, body: { history: [{ role: 'user', text: 'Hi' }] } });
    expect(r.body.error).toBe('assistant_off');
    // Other pages of this tab no longer offer it.
    await page.getByRole('link', { name: 'Team' }).click();
    await page.locator(`[data-member="${chain.ownerEmail}"]`).waitFor();
    expect(await page.locator('header nav').innerText()).not.toContain('Assistant');
    await done(w);
  });
});
