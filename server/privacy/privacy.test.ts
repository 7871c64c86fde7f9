import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFaces } from '../../test/support/faces.js';
import { memberToken } from '../../test/support/shop-pc.js';
import { arrivals, settled, shopPc, type ShopPc } from '../../test/support/visits.js';
import { sweepPrivacy, type PrivacySweeper } from './sweep.js';
import { one } from '../db/query.js';
import { customers, faceImages } from '../db/tables.js';
import { sqliteOnly } from '../../test/support/stores.js';
import { statementOn } from '../db/statement.js';
import { storedFace } from '../../test/support/pictures.js';

interface Stored {
  template: number;
  erased: number;
  photos: number;
  visits: number;
}
/** What is stored about a customer, read through head office's own connection (either store), not the API. */
async function stored(h: Harness, customerId: string): Promise<Stored> {
  const n = async (text: string) => (await statementOn(h.server.store, text).get<{ n: number }>(customerId))!.n;
  return {
    template: await n('select count(*) as n from customers where id = ? and template is not null'),
    erased: await n('select count(*) as n from customers where id = ? and erased_at is not null'),
    photos: await n('select count(*) as n from face_images where customer_id = ?'),
    visits: await n('select count(*) as n from visits where customer_id = ?'),
  };
}

describe('privacy settings, subject access and the consented mode', () => {
  let h: Harness;
  let faces: RealFaces;
  let a: Company;
  let b: Company;
  let pc: ShopPc;
  let pcB: ShopPc;
  let manager: string;
  let staff: string;
  const ids: Record<string, string> = {};
  let bCustomer = '';
  let clock = Date.now() - 3_600_000;

  async function visit(face: RealFaces['all'][number], via: ShopPc, token: string) {
    const up = await via.uploadFace(face.jpeg);
    expect(up.status).toBe(201);
    const head = (await h.request('GET', '/api/visits?limit=1', { token })).body.cursor;
    const msg = visitOf(faces, face, { occurred_at: new Date((clock += 10_000)).toISOString(), face_image_id: up.body.face_image_id });
    await via.publish(msg);
    const [row] = await arrivals(h, token, 1, `&cursor=${head}`);
    return row;
  }

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness({ FOOTFALL_IMAGES: 'local', FOOTFALL_VISIT_GAP_S: 1, FOOTFALL_METRICS_TOKEN: 'privacy-metrics-token-0123456789' }), realFaces()]);
    a = await h.company('Privacy Alpha');
    b = await h.company('Privacy Beta');
    pc = await shopPc(h, a.ownerToken, a.slug, 'Market Square');
    pcB = await shopPc(h, b.ownerToken, b.slug, 'Market Square');
    [manager, staff] = await Promise.all([memberToken(h, a.ownerToken, 'manager'), memberToken(h, a.ownerToken, 'staff')]);
    ids['V-1'] = (await visit(faces.same[0], pc, a.ownerToken)).visitor_id; // consents below
    expect((await visit(faces.same[1], pc, a.ownerToken)).visitor_id).toBe(ids['V-1']);
    ids['V-2'] = (await visit(faces.others[0]!, pc, a.ownerToken)).visitor_id; // never consents
    bCustomer = (await visit(faces.others[1]!, pcB, b.ownerToken)).visitor_id;
    const profile = { full_name: 'Ada Consenting', phone: '+44 7700 900123', email: 'ada@example.test', gender: '', date_of_birth: '', notes: 'likes tea', consent: true };
    expect((await h.request('PUT', '/api/visitors/V-1/profile', { token: staff, body: profile })).status).toBe(200);
    expect((await h.request('POST', '/api/purchases', { token: staff, body: { visitor_id: 'V-1', site_id: pc.shop.slug, amount: 12.5, currency: 'EUR', items: ['tea'] } })).status).toBe(201);
    await settled(h);
  }, 90_000);

  afterAll(async () => {
    await Promise.all([pc?.close(), pcB?.close()]);
    await h?.close();
  });

  it('has defaults, is owners only, and refuses bad values', async () => {
    const get = (token: string) => h.request('GET', '/api/company/privacy', { token });
    const initial = await get(a.ownerToken);
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({ recognition: 'all', template_retention_days: 90, visit_retention_days: null, sweep_pending: false });
    for (const token of [manager, staff]) {
      expect((await get(token)).status).toBe(403);
      expect((await h.request('PATCH', '/api/company/privacy', { token, body: { recognition: 'off' } })).status).toBe(403);
    }
    expect((await get(await h.adminToken())).status).toBe(404);
    expect((await h.request('GET', '/api/company/privacy')).status).toBe(401);
    const patch = (body: unknown) => h.request('PATCH', '/api/company/privacy', { token: a.ownerToken, body });
    expect((await patch({ recognition: 'sometimes' })).body.message).toContain('all, consented or off');
    expect((await patch({ template_retention_days: 0 })).status).toBe(400);
    expect((await patch({ template_retention_days: 1.5 })).status).toBe(400);
    expect((await patch({})).status).toBe(400);
    expect((await patch({ colour: 'blue' })).status).toBe(400);
    expect((await patch({ visit_retention_days: 0 })).status).toBe(400);
    expect((await patch({ visit_retention_days: 3651 })).status).toBe(400);
    expect((await get(a.ownerToken)).body.recognition).toBe('all');
  });

  it('exports everything held about one customer and nothing of anyone else, to managers and owners', async () => {
    const r = await h.request('GET', '/api/visitors/V-1/export', { token: manager });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="customer-V-1.json"');
    expect(r.headers.get('cache-control')).toBe('no-store');
    const x = r.body;
    expect(x.customer).toMatchObject({ id: ids['V-1'], profile: { full_name: 'Ada Consenting', phone: '+447700900123', email: 'ada@example.test', notes: 'likes tea', consent: true } });
    expect(x.consent_history).toEqual([expect.objectContaining({ consent: true, reason: 'profile', by: expect.stringContaining('@') })]);
    expect(x.face_template).toMatchObject({ held: true, since: expect.any(String), images_averaged: 2 });
    expect(x.photos).toHaveLength(2);
    expect(x.photos[0].shop).toBe('Market Square');
    expect(x.visits).toHaveLength(2);
    expect(x.visits[0]).toMatchObject({ shop: 'Market Square', shop_id: pc.shop.site_id });
    expect(x.purchases).toEqual([expect.objectContaining({ amount: 12.5, currency: 'EUR', items: ['tea'] })]);
    expect(x.audit.map((e: any) => e.action)).toEqual(expect.arrayContaining(['customer.profile', 'purchase.create', 'photo.link']));
    // The same as the API's own answers about them.
    const api = (await h.request('GET', '/api/visitors/V-1', { token: manager })).body;
    expect(x.customer).toMatchObject(api);
    const history = (await h.request('GET', '/api/visitors/V-1/history', { token: manager })).body;
    expect(x.visits.map((v: any) => v.id).sort()).toEqual(history.map((v: any) => v.id).sort());
    // Nothing of anyone else.
    const text = JSON.stringify(x);
    for (const other of [ids['V-2']!, bCustomer, b.id, b.ownerEmail]) expect(text).not.toContain(other);
    // Audited, after the read.
    const trail = (await h.request('GET', `/api/audit?action=customer.export`, { token: a.ownerToken })).body.entries;
    expect(trail[0]).toMatchObject({ action: 'customer.export', target: ids['V-1'], actor_email: expect.stringContaining('manager') });
    // Who may: managers and owners of the company only.
    expect((await h.request('GET', '/api/visitors/V-1/export', { token: a.ownerToken })).status).toBe(200);
    expect((await h.request('GET', '/api/visitors/V-1/export', { token: staff })).status).toBe(403);
    expect((await h.request('GET', `/api/visitors/${ids['V-1']}/export`, { token: b.ownerToken })).status).toBe(404);
    expect((await h.request('GET', '/api/visitors/V-99/export', { token: manager })).status).toBe(404);
  });

  it('in consented mode keeps no template of a non-consenting face after their stay (on SQLite, not even in the database file)', async () => {
    // The SQLite file and its log are searched on SQLite only: PostgreSQL's files are not scrubbed (docs/scale-out.md
    // says why). Everything else is asserted on both stores.
    const sqliteFiles = h.server.store.dialect === 'sqlite';
    expect(await stored(h, ids['V-2']!)).toMatchObject({ template: 1, photos: 1, visits: 1 });
    const photoIds = (await h.server.store.db.select().from(faceImages).where(eq(faceImages.customerId, ids['V-2']!))).map((f) => f.id);
    const photosStored = async () => Promise.all(photoIds.map(async (id) => (await storedFace(h, a.id, id)) !== undefined));
    expect(await photosStored()).toEqual([true]);
    const template = (await one(h.server.store.db.select({ t: customers.template }).from(customers).where(eq(customers.id, ids['V-2']!))))!.t!;
    const inFiles = () => ['footfall.db', 'footfall.db-wal'].some((f) => fs.existsSync(path.join(h.dataDir, f)) && fs.readFileSync(path.join(h.dataDir, f)).includes(template.subarray(0, 256)));
    if (sqliteFiles) expect(inFiles()).toBe(true);
    const r = await h.request('PATCH', '/api/company/privacy', { token: a.ownerToken, body: { recognition: 'consented' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ recognition: 'consented', template_retention_days: 90, updated_by: a.ownerEmail });
    await h.server.deps.privacy!.request();

    // V-2 (no consent, stay over): nothing left but a cleared row; the visit stays, unidentified.
    expect(await stored(h, ids['V-2']!)).toEqual({ template: 0, erased: 1, photos: 0, visits: 0 });
    expect(await photosStored()).toEqual([false]);
    if (sqliteFiles) expect(inFiles()).toBe(false); // not even in freed pages or the write-ahead log
    const row = await statementOn(h.server.store, 'select * from customers where id = ?').get(ids['V-2']);
    expect(row).toMatchObject({ template: null, full_name: '', first_seen_at: null, last_seen_at: null });
    const unidentified = (await statementOn(h.server.store, 'select count(*) as n from visits where company_id = ? and customer_id is null').get<{ n: number }>(a.id))!.n;
    expect(unidentified).toBe(1);
    // V-1 (consent) and company B (mode all, within 90 days) keep theirs.
    expect(await stored(h, ids['V-1']!)).toMatchObject({ template: 1, erased: 0, photos: 2, visits: 2 });
    expect(await stored(h, bCustomer)).toMatchObject({ template: 1, erased: 0, photos: 1 });
    expect((await h.request('GET', `/api/visitors/${ids['V-2']}`, { token: a.ownerToken })).status).toBe(404);

    // Audited: the change and the sweep (which names no one); counted in metrics.
    const trail = (await h.request('GET', '/api/audit?action=privacy.', { token: a.ownerToken })).body.entries;
    expect(trail.map((e: any) => e.action)).toEqual(['privacy.sweep', 'privacy.update']);
    expect(trail[1].detail).toEqual({ from: { recognition: 'all', template_retention_days: 90, visit_retention_days: null }, to: { recognition: 'consented', template_retention_days: 90, visit_retention_days: null } });
    expect(trail[0].detail).toMatchObject({ customers_forgotten: 1, photos_deleted: 1, complete: true });
    expect(JSON.stringify(trail[0])).not.toContain(ids['V-2']);
    expect((await h.request('GET', '/api/company/privacy', { token: a.ownerToken })).body).toMatchObject({ sweep_pending: false, swept_at: expect.any(String) });
    const metrics = await (await fetch(`${h.url}/metrics`, { headers: { Authorization: 'Bearer privacy-metrics-token-0123456789' } })).text();
    expect(metrics).toMatch(/^footfall_privacy_removed_total\{kind="template"\} [1-9]/m);
    expect(metrics).toMatch(/^footfall_privacy_sweeps_total\{outcome="done"\} [1-9]/m);

    // The same face again: a new customer for the stay, forgotten once it is over.
    const again = await visit(faces.others[0]!, pc, a.ownerToken);
    expect(again.visitor_id).not.toBe(ids['V-2']);
    await h.server.deps.privacy!.request();
    expect(await stored(h, again.visitor_id)).toMatchObject({ template: 0, erased: 1, photos: 0 });
  });
});

describe('template retention, across a restart mid-sweep', () => {
  it('forgets customers without consent unseen for template_retention_days, and nothing else', async () => {
    const faces = await realFaces();
    let h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1 }, { keepDataDir: true });
    const dataDir = h.dataDir;
    try {
      const c = await h.company('Retention Co');
      const pc = await shopPc(h, c.ownerToken, c.slug, 'Harbour');
      const people = [faces.same[0], faces.others[0]!, faces.others[1]!, faces.others[2]!, faces.others[3]!];
      const made: string[] = [];
      for (const [i, face] of people.entries()) {
        const head = (await h.request('GET', '/api/visits?limit=1', { token: c.ownerToken })).body.cursor;
        await pc.publish(visitOf(faces, face, { occurred_at: new Date(Date.now() - 3_600_000 + i * 10_000).toISOString() }));
        made.push((await arrivals(h, c.ownerToken, 1, `&cursor=${head}`))[0].visitor_id);
      }
      await pc.close();
      const [old1, old2, old3, recent, consenting] = made as [string, string, string, string, string];
      // Last seen 100 days ago: three without consent, one with; one seen an hour ago.
      const db = h.server.store.db;
      const longAgo = new Date(Date.now() - 100 * 86_400_000).toISOString();
      for (const id of [old1, old2, old3, consenting]) (await db.update(customers).set({ lastSeenAt: longAgo }).where(eq(customers.id, id)));
      await db.update(customers).set({ consent: true }).where(eq(customers.id, consenting));

      // A sweep cut short after its first batch of one (as by a stop): one of the three forgotten, nothing else.
      const cut = await sweepPrivacy(h.server.deps, { batch: 1, maxBatches: 1 });
      expect(cut).toEqual({ templates: 1, photos: 0, visits: 0, crossings: 0, days: 0, complete: false });
      const gone: string[] = [];
      for (const id of [old1, old2, old3]) if ((await stored(h, id)).erased === 1) gone.push(id);
      expect(gone).toHaveLength(1);
      await h.close();

      // Started again on the same data: the sweep on start finishes the job, and touches nothing else.
      h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1 }, { dataDir, keepDataDir: true });
      await h.server.deps.privacy!.request();
      for (const id of [old1, old2, old3]) expect(await stored(h, id)).toEqual({ template: 0, erased: 1, photos: 0, visits: 0 });
      expect(await stored(h, recent)).toMatchObject({ template: 1, erased: 0, visits: 1 });
      expect(await stored(h, consenting)).toMatchObject({ template: 1, erased: 0, visits: 1 });

      // A shorter retention applies at once: `recent` last seen 40 days ago goes with 30 days, not with 90.
      await h.server.store.db.update(customers).set({ lastSeenAt: new Date(Date.now() - 40 * 86_400_000).toISOString() }).where(eq(customers.id, recent));
      await h.server.deps.privacy!.request();
      expect(await stored(h, recent)).toMatchObject({ template: 1, erased: 0 });
      const owner = (await h.login(c.ownerEmail, c.ownerPassword)).access_token;
      expect((await h.request('PATCH', '/api/company/privacy', { token: owner, body: { template_retention_days: 30 } })).status).toBe(200);
      await h.server.deps.privacy!.request();
      expect(await stored(h, recent)).toEqual({ template: 0, erased: 1, photos: 0, visits: 0 });
      expect(await stored(h, consenting)).toMatchObject({ template: 1, erased: 0, visits: 1 });
      const visitsLeft = (await statementOn(h.server.store, 'select count(*) as n from visits where company_id = ?').get<{ n: number }>(c.id))!.n;
      expect(visitsLeft).toBe(5); // every visit stays, counted
      const sweeps = (await h.request('GET', '/api/audit?action=privacy.sweep', { token: owner })).body.entries;
      expect(sweeps.map((e: any) => e.detail.customers_forgotten)).toEqual([1, 2, 1]);
    } finally {
      await h.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('a sweep and the changes committed after it read its candidates', () => {
  it('a consent, a staff mark, a visit and a longer retention committed between the read and the transaction keep the customer', async () => {
    const faces = await realFaces();
    const h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1 });
    let pc: ShopPc | undefined;
    try {
      await (h.server.deps.privacy as PrivacySweeper).stop(); // only the sweeps run here
      const c = await h.company('Interleaved Co');
      const shop = (pc = await shopPc(h, c.ownerToken, c.slug, 'Quay'));
      const people = [faces.same[0], faces.others[0]!, faces.others[1]!, faces.others[2]!];
      const made: string[] = [];
      const visit = async (face: RealFaces['all'][number], at: number) => {
        const head = (await h.request('GET', '/api/visits?limit=1', { token: c.ownerToken })).body.cursor;
        await shop.publish(visitOf(faces, face, { occurred_at: new Date(at).toISOString() }));
        return (await arrivals(h, c.ownerToken, 1, `&cursor=${head}`))[0].visitor_id as string;
      };
      for (const [i, face] of people.entries()) made.push(await visit(face, Date.now() - 3_600_000 + i * 10_000));
      const [consents, staffed, returns, untouched] = made as [string, string, string, string];
      const backdate = async (ids: string[]) => {
        for (const id of ids) await h.server.store.db.update(customers).set({ lastSeenAt: new Date(Date.now() - 100 * 86_400_000).toISOString() }).where(eq(customers.id, id));
      };
      await backdate(made);

      // All four are read as due; then, before the sweep's transaction, three of them change.
      const read: string[][] = [];
      const first = await sweepPrivacy(h.server.deps, {
        companyId: c.id,
        afterRead: async (ids) => {
          read.push([...ids].sort());
          if (read.length > 1) return;
          const consent = await h.request('PUT', `/api/visitors/${consents}/profile`, { token: c.ownerToken, body: { full_name: 'Cass Consenting', consent: true } });
          expect(consent.status).toBe(200);
          expect((await h.request('PATCH', `/api/visitors/${staffed}`, { token: c.ownerToken, body: { staff: true } })).status).toBe(200);
          expect(await visit(people[2]!, Date.now())).toBe(returns); // seen again now
        },
      });
      expect(read).toEqual([[...made].sort()]);
      expect(first).toMatchObject({ templates: 1, complete: true });
      expect(await stored(h, untouched)).toEqual({ template: 0, erased: 1, photos: 0, visits: 0 });
      for (const id of [consents, staffed, returns]) expect(await stored(h, id), id).toMatchObject({ template: 1, erased: 0 });

      // A longer retention committed after the read: the customer read as due stays, and the sweep ends.
      await backdate([returns]);
      const second = await sweepPrivacy(h.server.deps, {
        companyId: c.id,
        afterRead: async (ids) => {
          read.push(ids);
          expect((await h.request('PATCH', '/api/company/privacy', { token: c.ownerToken, body: { template_retention_days: 365 } })).status).toBe(200);
        },
      });
      expect(read.at(-1)).toEqual([returns]);
      expect(second).toMatchObject({ templates: 0, complete: true });
      expect(await stored(h, returns)).toMatchObject({ template: 1, erased: 0, visits: 2 });
    } finally {
      await pc?.close();
      await h.close();
    }
  }, 90_000);
});

describe.skipIf(sqliteOnly('server/privacy/privacy.test.ts', 'the WAL scrub of the SQLite file'))('scrubbing the database files after a sweep', () => {
  it('retries a scrub the log was too busy for, on the next pass, until no forgotten template is left in the files', async () => {
    const faces = await realFaces();
    const h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1 });
    try {
      const c = await h.company('Scrub Co');
      const pc = await shopPc(h, c.ownerToken, c.slug, 'Quay');
      await pc.publish(visitOf(faces, faces.others[0]!, { occurred_at: new Date(Date.now() - 3_600_000).toISOString() }));
      const [{ visitor_id: id }] = await arrivals(h, c.ownerToken, 1);
      await pc.close();
      const db = h.server.store.db;
      const template = (await one(db.select({ t: customers.template }).from(customers).where(eq(customers.id, id))))!.t!;
      const inFiles = () => ['footfall.db', 'footfall.db-wal'].some((f) => fs.existsSync(path.join(h.dataDir, f)) && fs.readFileSync(path.join(h.dataDir, f)).includes(template.subarray(0, 256)));
      await db.update(customers).set({ lastSeenAt: new Date(Date.now() - 100 * 86_400_000).toISOString() }).where(eq(customers.id, id));

      // Another connection holds a snapshot from before the sweep (a long report, a backup): the log cannot start over.
      const reader = new Database(path.join(h.dataDir, 'footfall.db'), { readonly: true });
      try {
        reader.prepare('begin').run();
        reader.prepare('select count(*) from customers').get();
        const t = performance.now();
        await h.server.deps.privacy!.request();
        expect(performance.now() - t).toBeLessThan(4_500); // retried for about a second, not blocked on busy_timeout (5 s)
        expect(await stored(h, id)).toMatchObject({ template: 0, erased: 1 });
        expect(inFiles()).toBe(true);
      } finally {
        reader.close();
      }
      // The next pass forgets no one, but scrubs what the first could not.
      await h.server.deps.privacy!.request();
      expect(inFiles()).toBe(false);
    } finally {
      await h.close();
    }
  }, 60_000);
});
