import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from './support/harness.js';
import { realFaces, visitOf, type RealFaces } from './support/faces.js';
import { memberToken, waitFor } from './support/shop-pc.js';
import { arrivals, settled, shopPc, type ShopPc } from './support/visits.js';
import { sqliteOf } from '../server/db/open.js';

/** `curl -N -H "Authorization: Bearer ..." <url>`: the arrival stream as a person would watch it. */
function curlStream(url: string, token: string) {
  const child = spawn('curl', ['-N', '-s', '-H', `Authorization: Bearer ${token}`, url]);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  return {
    events: () =>
      out
        .split('\n\n')
        .filter((b) => b.includes('event: arrival'))
        .map((b) => ({ id: /^id: (.*)$/m.exec(b)![1]!, arrival: JSON.parse(/^data: (.*)$/m.exec(b)![1]!) })),
    stop: () => new Promise<void>((resolve) => (child.kill(), child.once('close', () => resolve()))),
  };
}

describe('shop PC to head office: visits from real photos, arrivals, customers, photos, purchases, erasure, company deletion', () => {
  let h: Harness;
  let faces: RealFaces;
  let c: Company;
  let pc: ShopPc;
  let staff: string;
  let manager: string;

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness({ FOOTFALL_IMAGES: 'local' }), realFaces()]);
    c = await h.company('Chai Point');
    pc = await shopPc(h, c.ownerToken, c.slug, 'Andheri West');
    [staff, manager] = await Promise.all([memberToken(h, c.ownerToken, 'staff'), memberToken(h, c.ownerToken, 'manager')]);
  });
  afterAll(async () => {
    await pc?.close();
    await h?.close();
  });

  it('the whole day of one shop', async () => {
    const watcher = curlStream(`${h.url}/api/visits/stream`, staff);
    await waitFor(() => h.server.deps.arrivals.listeners === 1);

    // The shop PC: face crop first, then the visit naming it (QoS 1).
    const [anna1, anna2] = faces.same;
    const ben = faces.others[0]!;
    const sent = [];
    // Anna comes back in the afternoon: a second visit (more than FOOTFALL_VISIT_GAP_S, 30 minutes, after the first).
    const day = Date.now() - 6 * 3_600_000;
    for (const [face, camera, minutes] of [
      [anna1, 'entrance', 0],
      [ben, 'entrance', 5],
      [anna2, 'till', 240],
      [undefined, 'entrance', 250],
    ] as const) {
      const up = face ? await pc.uploadFace(face.jpeg) : undefined;
      if (up) expect(up.status).toBe(201);
      const at = new Date(day + minutes * 60_000).toISOString();
      const msg = visitOf(faces, face, { camera_id: camera, occurred_at: at, ...(up ? { face_image_id: up.body.face_image_id } : {}) });
      await pc.publish(msg);
      await settled(h);
      sent.push(msg);
    }
    // An at-least-once re-send of the first visit.
    await pc.publish(sent[0]!);

    const feed = await arrivals(h, staff, 4);
    expect(feed.map((r) => r.visit_id)).toEqual(sent.map((m) => m.visit_id));
    expect(feed.map((r) => [r.visitor_ref, r.is_new_visitor])).toEqual([
      ['V-1', true],
      ['V-2', true],
      ['V-1', false],
      [undefined, false],
    ]);
    expect(feed[2].similarity).toBeGreaterThan(0.5);
    expect(feed[2].image).toMatchObject({ available: true, auth: true });

    // The same rows reached the curl watcher live, each with its cursor as the event id.
    await waitFor(() => watcher.events().length >= 4);
    await settled(h);
    const live = watcher.events();
    expect(live.map((e) => e.arrival)).toEqual(feed);
    const poll = await h.request('GET', `/api/visits?cursor=${live[3]!.id}`, { token: staff });
    expect(poll.body.arrivals).toEqual([]);
    expect(poll.body.cursor).toBe(live[3]!.id);
    await watcher.stop();
    // The photo links the stream handed out are in the audit log.
    const streamLinks = () => (sqliteOf(h.server.store).prepare("select count(*) as n from audit_log where action = 'photo.link' and detail like '%visits/stream%'").get() as { n: number }).n;
    await waitFor(() => streamLinks() > 0);

    // The photo of the returning visit, through the link.
    const img = await fetch(h.url + feed[2].image.url, { headers: { Authorization: `Bearer ${staff}` } });
    expect(img.status).toBe(200);
    expect(Buffer.from(await img.arrayBuffer()).equals(anna2.jpeg)).toBe(true);

    // Staff find her, name her, and record a sale.
    expect((await h.request('GET', '/api/visitors?q=V-1', { token: staff })).body[0]).toMatchObject({ ref: 'V-1', visit_count: 2 });
    const profile = await h.request('PUT', '/api/visitors/V-1/profile', { token: staff, body: { full_name: 'Anna', phone: '+44 20 7946 0958', consent: true } });
    expect(profile.status).toBe(200);
    expect((await h.request('GET', '/api/visitors?q=7946', { token: staff })).body.map((x: any) => x.ref)).toEqual(['V-1']);
    const sale = await h.request('POST', '/api/purchases', { token: staff, body: { visitor_id: 'V-1', site_id: pc.shop.slug, amount: 180, currency: 'INR', items: ['chai'] } });
    expect(sale.status).toBe(201);
    const history = (await h.request('GET', '/api/visitors/V-1/history', { token: staff })).body;
    expect(history.map((x: any) => x.camera_id)).toEqual(['till', 'entrance']);

    // A manager erases her; her next visit is counted but nobody is enrolled.
    const erased = await h.request('DELETE', '/api/visitors/V-1', { token: manager });
    expect(erased.body).toMatchObject({ visits_unlinked: 2, images_deleted: 2 });
    const next = visitOf(faces, anna1);
    await pc.publish(next);
    const [row] = await arrivals(h, staff, 1, `&cursor=${live[3]!.id}`);
    expect(row).toMatchObject({ visit_id: next.visit_id, label: '', is_new_visitor: false });
    expect(row).not.toHaveProperty('visitor_id');
    expect((await h.request('GET', '/api/visitors', { token: staff })).body.map((x: any) => x.ref)).toEqual(['V-2']);
  });

  it('company deletion deletes the stored face images first and counts them', async () => {
    // Ben's photo is still stored; add two more of him, and one upload no visit named yet.
    const ben = faces.others[0]!;
    for (let i = 0; i < 2; i++) {
      const up = await pc.uploadFace(ben.jpeg);
      await pc.publish(visitOf(faces, ben, { face_image_id: up.body.face_image_id }));
    }
    await pc.uploadFace(ben.jpeg);
    await settled(h);
    const dir = path.join(h.dataDir, 'images', c.id);
    const stored = (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[]).filter((e) => e.isFile()).length;
    expect(stored).toBe(4);
    expect((await h.request('GET', '/api/visitors/V-2/image', { token: staff })).status).toBe(200);

    const admin = await h.adminToken();
    expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: false } })).status).toBe(200);
    // Visits of a suspended company are dropped.
    const dropped = h.server.ingest.stats.suspended;
    await pc.publish(visitOf(faces, ben));
    await waitFor(() => h.server.ingest.stats.suspended > dropped);
    const del = await h.request('DELETE', `/api/admin/clients/${c.id}`, { token: admin, body: { confirm: c.slug } });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ deleted: c.slug, images_deleted: 4 });
    expect(fs.existsSync(dir)).toBe(false);
    for (const table of ['visits', 'sightings', 'customers', 'face_images', 'purchases', 'do_not_enrol', 'customer_consents']) {
      expect((sqliteOf(h.server.store).prepare(`select count(*) as n from ${table} where company_id = ?`).get(c.id) as { n: number }).n, table).toBe(0);
    }
  });
});
