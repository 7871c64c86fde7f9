import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { heartbeat, openShop } from '../../test/support/shop-pc.js';
import { shopPc } from '../../test/support/visits.js';

/** GET /api/admin/clients: each company's health (shops online, last heartbeat, visit and sign-in; additive fields). */
describe('company health in the admin list', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('counts shops whose PC is online and names the latest activity', async () => {
    const busy = await h.company('Busy Chain');
    const quiet = await h.company('Quiet Chain');
    const pc = await shopPc(h, busy.ownerToken, busy.slug, 'Colaba');
    await openShop(h, busy.ownerToken, { name: 'Not installed' });
    await pc.client.publishAsync(upTopic(busy.slug, pc.shop.slug, 'heartbeat'), JSON.stringify(heartbeat()), { qos: 1 });
    let row: any;
    for (let i = 0; i < 60 && !row?.shops_online; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const list = await h.request('GET', '/api/admin/clients', { token: await h.adminToken() });
      row = list.body.find((c: any) => c.id === busy.id);
    }
    expect(row).toMatchObject({ sites: 2, shops_online: 1, last_visit_at: null });
    expect(Date.now() - Date.parse(row.last_heartbeat_at)).toBeLessThan(60_000);
    expect(Date.now() - Date.parse(row.last_login_at)).toBeLessThan(60_000);
    const list = await h.request('GET', '/api/admin/clients', { token: await h.adminToken() });
    expect(list.body.find((c: any) => c.id === quiet.id)).toMatchObject({ sites: 0, shops_online: 0, last_heartbeat_at: null, last_visit_at: null });
    await pc.close();
  });
});
