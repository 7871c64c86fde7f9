import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { upTopic } from '../shared/topics.js';
import { done, haveChromium, launchChromium, openWatched, signIn, warnIfNoChromium, type Watched } from './support/browser.js';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { addCamera, heartbeat, waitFor } from './support/shop-pc.js';
import { shopPc, type ShopPc } from './support/visits.js';
import { cameras } from '../server/db/tables.js';

/**
 * Camera roles and counting health in the console (issue 25, docs/console.md "Camera roles"), in Debian's chromium
 * through playwright-core against a real head office: each camera card says its role and what that role counts; a
 * door camera's card shows its counting health from the shop PC's heartbeat and the crossings it sent over the real
 * broker (people counted in the last hour, the last crossing, whether the detector keeps up); a door camera silent for
 * an hour while another door counts is flagged like a camera that does not connect; drawing a line sets the role, and
 * the edit form changes it. Every page is watched for console errors and CSP violations.
 */

warnIfNoChromium('console-roles.test.ts');

const LINE = { a: [0.1, 0.5], b: [0.9, 0.5], inside: 'right' };

describe.skipIf(!haveChromium)('camera roles and counting health in the console', () => {
  let browser: Browser;
  let h: Harness;
  let chain: Company;
  let pc: ShopPc;
  const cams: Record<string, any> = {};

  beforeAll(async () => {
    browser = await launchChromium();
    h = await startHarness();
    chain = await h.company('Role Mart');
    pc = await shopPc(h, chain.ownerToken, chain.slug, 'Colaba');
    const add = (body: Record<string, unknown>) => addCamera(h, chain.ownerToken, pc.shop.slug, body);
    cams.entrance = await add({ camera_id: 'entrance', label: 'Entrance faces' });
    cams.door = await add({ camera_id: 'door', label: 'Front door', tuning: { line: LINE } });
    cams.walkway = await add({ camera_id: 'walkway', label: 'Walkway', tuning: { line: LINE, role: 'both' } });
    cams.side = await add({ camera_id: 'side', label: 'Side door' });
    // The walkway's line has been there two hours; every camera is connected.
    await h.server.store.db.update(cameras).set({ updatedAt: new Date(Date.now() - 7_200_000).toISOString() }).where(eq(cameras.id, cams.walkway.id));
    const state = await h.request('POST', '/api/agent/cameras/state', { token: pc.enrolment.token, body: { cameras: Object.keys(cams).map((camera) => ({ camera, connected: true })) } });
    expect(state.status).toBe(200);
    // The front door counted three people in the last hour; the shop PC reports its detector's frames.
    const crossing = upTopic(chain.slug, pc.shop.slug, 'crossing');
    for (const direction of ['in', 'in', 'out']) {
      await pc.client.publishAsync(crossing, JSON.stringify({ crossing_id: randomUUID(), occurred_at: new Date(Date.now() - 120_000).toISOString(), camera_id: 'door', direction }), { qos: 1 });
    }
    const doors = [
      { camera_id: 'door', window_s: 300, frames: 1500, paced: 0, held: 1200, skipped: 6, analysed: 294, in: 2, out: 1 },
      { camera_id: 'walkway', window_s: 300, frames: 1500, paced: 0, held: 900, skipped: 300, analysed: 300, in: 0, out: 0 },
    ];
    await pc.client.publishAsync(upTopic(chain.slug, pc.shop.slug, 'heartbeat'), JSON.stringify(heartbeat({ cameras_up: 4, cameras_total: 4, doors })), { qos: 1 });
    await waitFor(async () => (await h.request('GET', '/api/cameras', { token: chain.ownerToken })).body.find((c: any) => c.camera_id === 'door').counting?.stats, 5000);
  });
  afterAll(async () => {
    await browser?.close();
    await pc?.close();
    await h?.close();
  });

  async function shopPage(): Promise<Watched> {
    const w = await openWatched(browser, h.url + `/#/shop/${pc.shop.slug}`, /^Failed to load resource: the server responded with a status of (400|401|404|409) /);
    await signIn(w.page, chain.ownerEmail, chain.ownerPassword);
    await w.page.locator('[data-camera="door"]').getByText('Front door').waitFor();
    return w;
  }

  it('each card says its role and what it counts; door cameras show their counting health; a silent door is flagged', async () => {
    const w = await shopPage();
    const card = (id: string) => w.page.locator(`[data-camera="${id}"]`);

    expect(await card('entrance').locator('.role-info').innerText()).toMatch(/^Role: Faces — recognises faces: each person it sees is a visitor/);
    expect(await card('entrance').locator('.counting-health').count()).toBe(0);

    expect(await card('door').locator('.role-info').innerText()).toMatch(/^Role: Door counting — counts entries and exits at its line; no face recognition, so it adds no visitors/);
    const door = await card('door').locator('.counting-health').innerText();
    expect(door).toMatch(/Door count: counting/);
    expect(door).toContain('3 people counted in the last hour (2 entries, 1 exit)');
    expect(door).toMatch(/last crossing 2 min ago/);
    expect(door).toContain('detector keeps up (2% of frames dropped)');
    expect(await card('door').locator('.counting-problem').count()).toBe(0);

    // The walkway counted nobody for an hour while the front door counted: flagged like a camera that does not connect.
    expect(await card('walkway').locator('.role-info').innerText()).toMatch(/^Role: Door counting and faces — counts entries and exits at its line, and recognises faces/);
    const walkway = card('walkway');
    expect(await walkway.locator('.dot.bad').first().innerText()).toBe('connected, but not counting');
    expect(await walkway.locator('.counting-health').innerText()).toMatch(/Door count: not counting · 0 people counted in the last hour/);
    expect(await walkway.locator('.counting-health').innerText()).toContain('detector falls behind (50% of frames dropped)');
    expect(await walkway.locator('.counting-problem').innerText()).toMatch(/^Counted nobody in the last hour while Front door counted people/);
    await done(w);
  });

  it('drawing a line asks what the camera counts (door by default) and saves the role; the edit form changes it', async () => {
    const w = await shopPage();
    const { page } = w;
    const card = page.locator('[data-camera="side"]');
    await card.getByRole('button', { name: 'Counting line…' }).click();
    const editor = card.getByRole('region', { name: 'Counting line of Side door' });
    const roles = editor.getByRole('group', { name: 'What this camera counts' });
    expect(await roles.getByRole('radio', { name: /^Door counting:/ }).isChecked()).toBe(true);
    for (const [label, value] of [['A: from the left (%)', '10'], ['A: from the top (%)', '50'], ['B: from the left (%)', '90'], ['B: from the top (%)', '50']]) {
      await editor.getByLabel(label!).fill(value!);
    }
    await roles.getByRole('radio', { name: /^Door counting and faces:/ }).check();
    await editor.getByRole('button', { name: 'Save line' }).click();
    await card.getByText(/^Counting line saved for Side door/).waitFor();
    const side = async () => (await h.request('GET', '/api/cameras', { token: chain.ownerToken })).body.find((c: any) => c.camera_id === 'side');
    expect((await side()).tuning).toMatchObject({ role: 'both', line: { a: [0.1, 0.5], b: [0.9, 0.5] } });
    await card.locator('.role-info').getByText('Role: Door counting and faces').waitFor();
    expect(await card.locator('.counting-health').innerText()).toMatch(/Door count: counting · 0 people counted in the last hour/);

    // The edit form: the role alone, as radio buttons saying what each counts.
    await card.getByRole('button', { name: 'Edit…' }).click();
    await card.getByRole('group', { name: 'What this camera counts' }).getByRole('radio', { name: /^Door counting:/ }).check();
    await card.getByRole('button', { name: 'Save camera' }).click();
    await card.locator('.role-info').getByText('Role: Door counting', { exact: true }).waitFor();
    expect((await side()).tuning.role).toBe('door');
    await done(w);
  });
});
