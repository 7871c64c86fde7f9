import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { upTopic } from '../../shared/topics.js';
import type { Harness, Company } from './harness.js';
import { addCamera, heartbeat, jpeg, openShop, syntheticFace, upload } from './shop-pc.js';
import { settled, shopPc, type ShopPc } from './visits.js';
import { purchases } from '../../server/db/tables.js';

/**
 * A chain for the dashboard's browser tests and screenshots (npm run screenshots): three shops in Asia/Kolkata.
 * - Bandra West: shop PC online (a heartbeat every 700 ms while `beat` runs), camera `door` connected with a
 *   picture, visits over the last 40 days at shop hours, purchases.
 * - Powai Lakeside Mall: its PC reported once (camera `gate` connected, 1 of 1 up) and then went quiet: offline
 *   once 3 heartbeat intervals pass (the harness runs with FOOTFALL_HEARTBEAT_INTERVAL_S=1).
 * - Colaba Causeway: no shop PC, one camera added.
 */
export interface Seeded {
  chain: Company;
  staff: { email: string; password: string; token: string };
  bandra: ShopPc;
  powai: ShopPc;
  colaba: { slug: string; name: string };
  stop(): Promise<void>;
  heartbeat(over?: Parameters<typeof heartbeat>[0]): Promise<void>;
}

const DAY = 86_400_000;

export async function seedChain(h: Harness, opts: { days?: number } = {}): Promise<Seeded> {
  const chain = await h.company('Dashboard Chain');
  const staffEmail = `staff-dash-${process.pid}@shop.test`;
  const made = await h.request('POST', '/api/team/members', { token: chain.ownerToken, body: { email: staffEmail, full_name: 'Sam Staff', role: 'staff', password: 'staff-password-1' } });
  if (made.status !== 201) throw new Error(`staff: ${made.status}`);
  const staff = { email: staffEmail, password: 'staff-password-1', token: (await h.login(staffEmail, 'staff-password-1')).access_token };

  const bandra = await shopPc(h, chain.ownerToken, chain.slug, 'Bandra West');
  const powai = await shopPc(h, chain.ownerToken, chain.slug, 'Powai Lakeside Mall');
  const colabaShop = await openShop(h, chain.ownerToken, { name: 'Colaba Causeway' });
  await addCamera(h, chain.ownerToken, colabaShop.slug, { camera_id: 'front', label: 'Front' });
  await addCamera(h, chain.ownerToken, bandra.shop.slug, { camera_id: 'door', label: 'Front door' });
  await addCamera(h, chain.ownerToken, bandra.shop.slug, { camera_id: 'till', label: 'Till' });
  await addCamera(h, chain.ownerToken, powai.shop.slug, { camera_id: 'gate', label: 'Mall gate' });
  for (const [pc, cams] of [[bandra, ['door', 'till']], [powai, ['gate']]] as const) {
    const r = await h.request('POST', '/api/agent/cameras/state', { token: pc.enrolment.token, body: { cameras: cams.map((camera) => ({ camera, connected: true })) } });
    if (r.status !== 200) throw new Error(`camera state: ${r.status}`);
    for (const c of cams) await upload(h, 'PUT', `/api/agent/cameras/${c}/snapshot`, pc.enrolment.token, await jpeg(160, 90, c === 'door' ? 150 : 90));
  }
  const beat = (pc: ShopPc, over: Parameters<typeof heartbeat>[0] = {}) =>
    pc.client.publishAsync(upTopic(chain.slug, pc.shop.slug, 'heartbeat'), JSON.stringify(heartbeat({ cameras_up: pc === bandra ? 2 : 1, cameras_total: pc === bandra ? 2 : 1, ...over })), { qos: 1 });
  await beat(powai);
  let bandraBeat: Parameters<typeof heartbeat>[0] = { fraction_below_gate: 0.1 };
  await beat(bandra, bandraBeat);
  const timer = setInterval(() => void beat(bandra, bandraBeat).catch(() => {}), 700);

  // Visits: regulars (faces 1-12) and passers-by, busier in the evening and at weekends, for `days` days.
  const days = opts.days ?? 40;
  const now = Date.now();
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const istMidnight = Math.floor((now + 5.5 * 3600_000) / DAY) * DAY - 5.5 * 3600_000;
  for (let d = days; d >= 0; d--) {
    for (const pc of [bandra, powai]) {
      const weekend = [0, 6].includes(new Date(istMidnight - d * DAY + 6 * 3600_000).getUTCDay());
      const n = Math.round((pc === bandra ? 6 : 3) * (weekend ? 1.6 : 1) + rand() * 3);
      for (let i = 0; i < n; i++) {
        const hour = 10 + Math.floor(Math.pow(rand(), 0.6) * 11); // 10:00 to 20:59, more in the evening
        const at = istMidnight - d * DAY + hour * 3600_000 + Math.floor(rand() * 3600_000);
        if (at > now - 60_000) continue;
        const who = rand() < 0.6 ? 1 + Math.floor(rand() * 12) + (pc === powai ? 100 : 0) : null;
        await pc.publish({
          visit_id: randomUUID(),
          occurred_at: new Date(at).toISOString(),
          camera_id: pc === bandra ? 'door' : 'gate',
          ...(who === null ? { quality: 0.3, passed_gate: false } : { embedding: syntheticFace(who), recognition_model: 'test-model', quality: 0.9, passed_gate: true }),
        });
      }
    }
    if (d % 5 === 0) await settled(h);
  }
  // A visit just now at Bandra: the shop page's "last visit" is "just now".
  await bandra.publish({ visit_id: randomUUID(), occurred_at: new Date(now - 5_000).toISOString(), camera_id: 'door', quality: 0.3, passed_gate: false });
  await settled(h);
  const customers = (await h.request('GET', '/api/visitors?limit=50', { token: chain.ownerToken })).body as { ref: string }[];
  let k = 0;
  for (const c of customers.slice(0, 10)) {
    k++;
    const r = await h.request('POST', '/api/purchases', { token: chain.ownerToken, body: { visitor_id: c.ref, site_id: k % 3 === 0 ? powai.shop.slug : bandra.shop.slug, amount: 150 * k + 49.5, currency: 'INR' } });
    if (r.status !== 201) throw new Error(`purchase: ${r.status} ${JSON.stringify(r.body)}`);
    // The API records a purchase now; for a realistic history it is moved to a day of the last 30.
    const back = Math.floor(rand() * Math.min(days, 30)) * DAY + 3600_000;
    await h.server.store.db.update(purchases).set({ createdAt: new Date(now - back).toISOString() }).where(eq(purchases.id, r.body.id));
  }
  return {
    chain,
    staff,
    bandra,
    powai,
    colaba: { slug: colabaShop.slug, name: colabaShop.name },
    async heartbeat(over = {}) {
      bandraBeat = { ...bandraBeat, ...over };
      await beat(bandra, bandraBeat);
    },
    async stop() {
      clearInterval(timer);
      await bandra.close();
      await powai.close();
    },
  };
}
