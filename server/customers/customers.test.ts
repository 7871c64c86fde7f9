import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFaces } from '../../test/support/faces.js';
import { connectPc, memberToken, upload } from '../../test/support/shop-pc.js';
import { upTopic } from '../../shared/topics.js';
import { arrivals, settled, shopPc, type ShopPc } from '../../test/support/visits.js';
import { sweepUnlinkedFaces } from './faces.js';
import { auditLog, customerConsents, faceImages } from '../db/tables.js';
import { statementOn } from '../db/statement.js';
import { storedFace } from '../../test/support/pictures.js';
import { sqliteOnly } from '../../test/support/stores.js';

const FILE = 'server/customers/customers.test.ts';

describe('customers, photos, erasure and merge (images stored locally)', () => {
  let h: Harness;
  let faces: RealFaces;
  let a: Company;
  let b: Company;
  let pc: ShopPc;
  let pcB: ShopPc;
  let staff: string;
  let manager: string;
  const ids: Record<string, string> = {};
  const photos: Record<string, string[]> = {};
  const firstVisits: string[] = [];
  // Each visit 10 s after the one before: with FOOTFALL_VISIT_GAP_S=1 every visit is a stay of its own.
  let clock = Date.now() - 86_400_000;

  const get = (p: string, token = staff) => h.request('GET', p, { token });
  const customer = async (ref: string, token = staff) => (await get(`/api/visitors/${ref}`, token)).body;

  /** Uploads the face (when asked), publishes the visit, waits for it; returns its arrival. */
  async function visit(face: RealFaces['all'][number] | undefined, opts: { photo?: boolean; over?: Record<string, unknown>; via?: ShopPc; token?: string } = {}) {
    const via = opts.via ?? pc;
    const token = opts.token ?? staff;
    let faceImageId: string | undefined;
    if (opts.photo && face) {
      const up = await via.uploadFace(face.jpeg);
      expect(up.status).toBe(201);
      faceImageId = up.body.face_image_id;
    }
    const head = (await h.request('GET', '/api/visits?limit=1', { token })).body.cursor;
    const msg = visitOf(faces, face, { occurred_at: new Date((clock += 10_000)).toISOString(), ...(faceImageId ? { face_image_id: faceImageId } : {}), ...opts.over });
    await via.publish(msg);
    const [row] = await arrivals(h, token, 1, `&cursor=${head}`);
    expect(row.visit_id).toBe(msg.visit_id);
    return { row, faceImageId };
  }

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness({ FOOTFALL_IMAGES: 'local', FOOTFALL_VISIT_GAP_S: 1 }), realFaces()]);
    a = await h.company('Customers Alpha');
    b = await h.company('Customers Beta');
    pc = await shopPc(h, a.ownerToken, a.slug, 'Main Street');
    pcB = await shopPc(h, b.ownerToken, b.slug, 'Main Street');
    [staff, manager] = await Promise.all([memberToken(h, a.ownerToken, 'staff'), memberToken(h, a.ownerToken, 'manager')]);

    // V-1: the same person twice, with photos; V-2, V-3, V-4: three other people (V-4 without a photo).
    const [p1, p2] = faces.same;
    const [o0, o1, o2] = faces.others;
    const v1 = await visit(p1, { photo: true });
    const v1b = await visit(p2, { photo: true });
    firstVisits.push(v1.row.visit_id, v1b.row.visit_id);
    const v2 = await visit(o0, { photo: true });
    const v3 = await visit(o1, { photo: true });
    const v4 = await visit(o2);
    Object.assign(ids, { 'V-1': v1.row.visitor_id, 'V-2': v2.row.visitor_id, 'V-3': v3.row.visitor_id, 'V-4': v4.row.visitor_id });
    expect([v1, v2, v3, v4].map((v) => v.row.visitor_ref)).toEqual(['V-1', 'V-2', 'V-3', 'V-4']);
    photos['V-1'] = (await h.server.store.db.select({ id: faceImages.id }).from(faceImages).where(eq(faceImages.customerId, ids['V-1']!))).map((r) => r.id);
    photos['V-2'] = [v2.faceImageId!];
    photos['V-3'] = [v3.faceImageId!];
    expect(photos['V-1']).toHaveLength(2);
    // B has its own V-1.
    await visit(faces.others[3], { via: pcB, token: b.ownerToken });
  });
  afterAll(async () => {
    await Promise.all([pc?.close(), pcB?.close()]);
    await h?.close();
  });

  it('profile: whole replace, validated, consent recorded; the Customer and the stored profile come back', async () => {
    const put = (ref: string, body: unknown, token = staff) => h.request('PUT', `/api/visitors/${ref}/profile`, { token, body });
    const good = { full_name: 'Priya Sharma', phone: '+91 98765-43210', email: 'Priya.Sharma@Example.com', gender: 'female', date_of_birth: '1990-02-28', notes: 'likes chai', consent: true };
    const r = await put('V-2', good);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      id: ids['V-2'],
      ref: 'V-2',
      label: 'Priya Sharma',
      full_name: 'Priya Sharma',
      phone: '+919876543210',
      email: 'priya.sharma@example.com',
      visit_count: 1,
      first_seen_at: expect.any(String),
      last_seen_at: expect.any(String),
      has_profile: true,
      has_consent: true,
      staff: false,
      // Additive: the lifetime spend, as GET gives it (docs/visits-and-customers.md).
      purchases: 0,
      spend: 0,
      spend_currency: '',
      profile: {
        full_name: 'Priya Sharma',
        phone: '+919876543210',
        email: 'priya.sharma@example.com',
        gender: 'female',
        date_of_birth: '1990-02-28',
        notes: 'likes chai',
        consent: true,
        consent_changed_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    // Whole replace: what is omitted is emptied; consent is required.
    const replaced = await put(ids['V-2']!, { full_name: 'Priya S', phone: '0091 98765 43210', consent: true });
    expect(replaced.body).toMatchObject({ full_name: 'Priya S', phone: '+919876543210', email: '', profile: { notes: '', gender: '', date_of_birth: '' } });
    await put('V-2', { ...good, email: 'priya@example.com' });

    for (const [body, field] of [
      [{ ...good, email: 'not-an-email' }, 'email'],
      [{ ...good, phone: '98765' }, 'phone'],
      [{ ...good, phone: '+0 12345678' }, 'phone'],
      [{ ...good, date_of_birth: '2023-02-30' }, 'date_of_birth'],
      [{ ...good, date_of_birth: '1990-13-01' }, 'date_of_birth'],
      [{ ...good, date_of_birth: '01/02/1990' }, 'date_of_birth'],
      [{ ...good, date_of_birth: `${new Date().getUTCFullYear() + 1}-01-01` }, 'date_of_birth'],
      [{ ...good, consent: undefined }, 'consent'],
      [{ ...good, consent: 'yes' }, 'consent'],
      [{ ...good, role: 'owner' }, 'role'],
      [{ ...good, full_name: 'x'.repeat(201) }, 'full_name'],
      [[], ''],
    ] as const) {
      const bad = await put('V-3', body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
      expect(bad.body.message).toContain(field);
    }
    expect((await h.request('PUT', '/api/visitors/V-3/profile', { token: staff, raw: '{bad json' })).status).toBe(400);
    expect((await customer('V-3')).has_profile).toBe(false);

    // Consent record: every change, with who made it.
    const consents = await h.server.store.db.select().from(customerConsents).where(eq(customerConsents.customerId, ids['V-2']!));
    expect(consents.map((c) => [c.consent, c.reason])).toEqual([[true, 'profile']]);
    await put('V-2', { ...good, email: 'priya@example.com', consent: false });
    await put('V-2', { ...good, email: 'priya@example.com', consent: true });
    expect((await h.server.store.db.select().from(customerConsents).where(eq(customerConsents.customerId, ids['V-2']!))).map((c) => c.consent)).toEqual([true, false, true]);
    // The label follows the name on the feed.
    const feed = (await get('/api/visits?limit=1000')).body.arrivals;
    expect(feed.find((x: any) => x.visitor_id === ids['V-2']).label).toBe('Priya Sharma');
  });

  it('profile edits with If-Match: the ETag of the profile read; a stale one is 412 and changes nothing', async () => {
    const read = await h.request('GET', '/api/visitors/V-3', { token: staff });
    const tag = read.headers.get('etag')!;
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    // The tag follows the profile, not the request: read again, the same tag.
    expect((await h.request('GET', '/api/visitors/V-3', { token: staff })).headers.get('etag')).toBe(tag);
    const profile = { full_name: 'Tara Till', phone: '', email: '', gender: '', date_of_birth: '', notes: 'first', consent: false };
    const put = (body: unknown, ifMatch?: string) =>
      h.request('PUT', '/api/visitors/V-3/profile', { token: staff, body, ...(ifMatch === undefined ? {} : { headers: { 'If-Match': ifMatch } }) });

    const first = await put(profile, tag);
    expect(first.status).toBe(200);
    const next = first.headers.get('etag')!;
    expect(next).not.toBe(tag);
    expect((await h.request('GET', '/api/visitors/V-3', { token: staff })).headers.get('etag')).toBe(next);

    // A second person still holding the old tag: refused, and the first person's change stays.
    for (const stale of [tag, `W/${next}`, 'not-a-tag', `"${'x'.repeat(22)}"`]) {
      const r = await put({ ...profile, notes: 'second' }, stale);
      expect(r.status, stale).toBe(412);
      expect(r.body.error).toBe('precondition_failed');
      expect(r.body.message).toContain('Someone changed this profile');
    }
    expect((await h.request('GET', '/api/visitors/V-3', { token: staff })).body.profile.notes).toBe('first');

    // The current tag among others, `*`, or no If-Match at all (as the spec's clients send): saved.
    expect((await put({ ...profile, notes: 'second' }, `"old", ${next}`)).status).toBe(200);
    expect((await put({ ...profile, notes: 'third' }, '*')).status).toBe(200);
    const plain = await put({ ...profile, notes: '' });
    expect(plain.status).toBe(200);
    expect(plain.body.profile.notes).toBe('');
    // Another company's customer is 404 whatever If-Match says.
    expect((await h.request('PUT', `/api/visitors/${ids['V-3']}/profile`, { token: b.ownerToken, body: profile, headers: { 'If-Match': '*' } })).status).toBe(404);
  });

  it('search: by V-number, bare number, name, phone and email; most recently seen first without q; limit', async () => {
    const refs = async (q: string) => (await get(`/api/visitors?q=${encodeURIComponent(q)}`)).body.map((c: any) => c.ref);
    expect((await refs('V-3'))[0]).toBe('V-3');
    expect((await refs('v-3'))[0]).toBe('V-3');
    expect((await refs('3'))[0]).toBe('V-3');
    expect(await refs('priya')).toEqual(['V-2']);
    expect(await refs('SHARMA')).toEqual(['V-2']);
    expect(await refs('98765 43210')).toEqual(['V-2']);
    expect(await refs('+91-98765')).toEqual(['V-2']);
    expect(await refs('priya@example')).toEqual(['V-2']);
    expect(await refs('%')).toEqual([]);
    expect(await refs('V-99')).toEqual([]);
    const all = (await get('/api/visitors')).body;
    expect(all.map((c: any) => c.ref)).toEqual(['V-4', 'V-3', 'V-2', 'V-1']);
    expect(all[0]).toEqual({
      id: ids['V-4'],
      ref: 'V-4',
      label: 'Visitor 4',
      full_name: '',
      phone: '',
      email: '',
      visit_count: 1,
      first_seen_at: expect.any(String),
      last_seen_at: expect.any(String),
      has_profile: false,
      has_consent: false,
      staff: false,
      purchases: 0,
      spend: 0,
      spend_currency: '',
    });
    expect((await get('/api/visitors?limit=1')).body).toHaveLength(1);
    for (const q of ['limit=0', 'limit=501', 'limit=x', `q=${'x'.repeat(201)}`]) {
      const r = await get(`/api/visitors?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    }
    expect((await get('/api/visitors?limit=500')).status).toBe(200);
    // Another company sees only its own.
    expect((await get('/api/visitors', b.ownerToken)).body.map((c: any) => c.ref)).toEqual(['V-1']);
    expect((await get('/api/visitors?q=priya', b.ownerToken)).body).toEqual([]);
  });

  it('history: newest first, is_new_visitor on exactly one row', async () => {
    const r = await get('/api/visitors/V-1/history');
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(2);
    expect(r.body[0].occurred_at >= r.body[1].occurred_at).toBe(true);
    expect(r.body.filter((x: any) => x.is_new_visitor)).toHaveLength(1);
    expect(r.body[1]).toEqual({
      id: expect.any(String),
      occurred_at: expect.any(String),
      last_seen_at: expect.any(String),
      dwell_s: 0,
      site: 'Main Street',
      site_id: pc.shop.site_id,
      site_slug: 'main-street',
      camera_id: 'entrance',
      is_new_visitor: true,
      similarity: 1,
      quality: faces.same[0].quality,
      attributes: { gender: 'female', age: 30, emotion: 'happy' },
    });
    expect(r.body[0].similarity).toBeGreaterThan(0.5);
  });

  it('photos: the arrival links the face, the link is served to the company only, every hand-out is audited', async () => {
    const feed = (await get('/api/visits?limit=1000')).body.arrivals;
    const withPhoto = feed.find((x: any) => x.visitor_id === ids['V-3']);
    expect(withPhoto.image).toEqual({ available: true, url: `/api/faces/${photos['V-3']![0]}`, auth: true });
    expect(feed.find((x: any) => x.visitor_id === ids['V-4']).image).toEqual({ available: false, reason: 'No photo was captured for this visit.' });

    const img = await fetch(h.url + withPhoto.image.url, { headers: { Authorization: `Bearer ${staff}` } });
    expect(img.status).toBe(200);
    expect(img.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await img.arrayBuffer()).equals(faces.others[1]!.jpeg)).toBe(true);

    const latest = await get('/api/visitors/V-1/image');
    expect(latest.status).toBe(200);
    expect(latest.body).toEqual({ available: true, url: `/api/faces/${photos['V-1']![1]}`, auth: true });
    expect(await get('/api/visitors/V-4/image')).toMatchObject({ status: 404, body: { error: 'no_image' } });

    // Another company: 404 for the photo and the customer; no session: 401.
    expect((await get(withPhoto.image.url, b.ownerToken)).status).toBe(404);
    expect((await get(`/api/visitors/${ids['V-3']}/image`, b.ownerToken)).status).toBe(404);
    expect((await fetch(h.url + withPhoto.image.url)).status).toBe(401);
    expect((await get('/api/faces/short')).status).toBe(404);
    expect((await get(`/api/faces/${'A'.repeat(22)}`)).status).toBe(404);

    const rows = await h.server.store.db.select().from(auditLog).where(eq(auditLog.companyId, a.id));
    const linkRows = rows.filter((x) => x.action === 'photo.link');
    expect(linkRows.some((x) => (x.detail as any).route === 'GET /api/visits' && (x.detail as any).faces.some((f: any) => f.face_image_id === photos['V-3']![0]))).toBe(true);
    expect(linkRows.some((x) => (x.detail as any).route === 'GET /api/visitors/{id}/image' && x.target === photos['V-1']![1])).toBe(true);
    expect(rows.some((x) => x.action === 'photo.view' && x.target === photos['V-3']![0])).toBe(true);
  });

  it('a face that identifies nobody keeps no photo', async () => {
    const up = await pc.uploadFace(faces.others[3]!.jpeg);
    expect(await storedFace(h, a.id, up.body.face_image_id)).toBeDefined();
    const { row } = await visit(faces.others[3], { over: { face_image_id: up.body.face_image_id, passed_gate: false, quality: 0.2 } });
    expect(row.image).toEqual({ available: false, reason: 'Photos are kept only for identified customers.' });
    await settled(h);
    expect(await storedFace(h, a.id, up.body.face_image_id)).toBeUndefined();
    expect(await h.server.store.db.select().from(faceImages).where(eq(faceImages.id, up.body.face_image_id))).toEqual([]);
  });

  it('merge (manager+): visits, photos and history move; the merged reference names the survivor; the face matches it', async () => {
    expect((await h.request('POST', '/api/visitors/V-3/merge', { token: staff, body: { into: 'V-4' } })).status).toBe(403);
    for (const [body, status] of [
      [{}, 400],
      [{ into: 'V-3' }, 400],
      [{ into: 'V-99' }, 404],
      [{ into: randomUUID() }, 404],
      [{ into: 'V-4', extra: 1 }, 400],
    ] as const) {
      const r = await h.request('POST', '/api/visitors/V-3/merge', { token: manager, body });
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body).toEqual({ error: expect.any(String), message: expect.any(String) });
    }
    const r = await h.request('POST', '/api/visitors/V-3/merge', { token: manager, body: { into: 'V-4' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: ids['V-4'], ref: 'V-4', visit_count: 2, merged: { id: ids['V-3'], ref: 'V-3', visits_moved: 1 } });
    expect((await customer('V-3')).id).toBe(ids['V-4']);
    expect((await customer(ids['V-3']!)).id).toBe(ids['V-4']);
    expect((await get('/api/visitors')).body.map((c: any) => c.ref)).not.toContain('V-3');
    const history = (await get('/api/visitors/V-4/history')).body;
    expect(history).toHaveLength(2);
    expect(history.filter((x: any) => x.is_new_visitor)).toHaveLength(1);
    expect((await get('/api/visitors/V-4/image')).body.url).toBe(`/api/faces/${photos['V-3']![0]}`);
    // The merged template: a new visit of either face is the survivor.
    const again = await visit(faces.others[1]);
    expect(again.row).toMatchObject({ visitor_ref: 'V-4', is_new_visitor: false });
    const feed = (await get('/api/visits?limit=1000')).body.arrivals;
    expect(feed.filter((x: any) => x.visitor_ref === 'V-3')).toEqual([]);
  });

  // On PostgreSQL a photo is a row that goes in the erasure's transaction: nothing to fail apart from it.
  it.skipIf(sqliteOnly(FILE, 'photo files that cannot be moved aside'))('erasure (manager+): 502 storage_error with nothing erased when a photo cannot be deleted', async () => {
    expect((await h.request('DELETE', '/api/visitors/V-2', { token: staff })).status).toBe(403);
    // Replace the photo's folder with a regular file of the same name: even root cannot rename into it.
    const id = photos['V-2']![0]!;
    const dir = path.join(h.dataDir, 'images', a.id, id.slice(0, 2));
    fs.renameSync(dir, `${dir}.aside`);
    fs.writeFileSync(dir, 'not a folder');
    try {
      const r = await h.request('DELETE', '/api/visitors/V-2', { token: manager });
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ error: 'storage_error', message: expect.stringMatching(/nothing was erased/) });
    } finally {
      fs.rmSync(dir);
      fs.renameSync(`${dir}.aside`, dir);
    }
    const kept = await customer('V-2');
    expect(kept).toMatchObject({ full_name: 'Priya Sharma', has_consent: true, visit_count: 1 });
    expect((await get(`/api/faces/${id}`)).status).toBe(200);
    expect(await storedFace(h, a.id, photos['V-1']![0]!)).toBeDefined();
  });

  it('erasure: photos and template destroyed, visits unlinked, consent revoked and recorded; the face is not enrolled again', async () => {
    const files = photos['V-1']!.map((id) => path.join(h.dataDir, 'images', a.id, id.slice(0, 2), `${id}.jpg`));
    for (const id of photos['V-1']!) expect(await storedFace(h, a.id, id), id).toBeDefined();
    await h.request('PUT', '/api/visitors/V-1/profile', { token: staff, body: { full_name: 'Erin Erased', consent: true } });
    const r = await h.request('DELETE', '/api/visitors/V-1', { token: manager });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      erased: ids['V-1'],
      ref: 'V-1',
      visits_unlinked: 2,
      images_deleted: 2,
      consent_revoked: true,
      enrolment_blocked_until: expect.any(String),
    });
    expect(files.some((f) => fs.existsSync(f) || fs.existsSync(`${f}.erasing`))).toBe(false);
    for (const id of photos['V-1']!) expect(await storedFace(h, a.id, id), id).toBeUndefined();
    for (const p of ['/api/visitors/V-1', `/api/visitors/${ids['V-1']}/history`, '/api/visitors/1/image', `/api/faces/${photos['V-1']![0]}`]) {
      expect((await get(p)).status, p).toBe(404);
    }
    expect((await h.request('DELETE', '/api/visitors/V-1', { token: manager })).status).toBe(404);
    expect((await get('/api/visitors?q=erin')).body).toEqual([]);
    expect((await get('/api/visitors?q=1')).body.map((c: any) => c.ref)).not.toContain('V-1');
    const feed = (await get('/api/visits?limit=1000')).body.arrivals;
    const former = feed.filter((x: any) => firstVisits.includes(x.visit_id));
    expect(former).toHaveLength(2);
    for (const x of former) {
      expect(x).not.toHaveProperty('visitor_id');
      expect(x).toMatchObject({ label: '', is_new_visitor: false, similarity: 0, image: { available: false } });
    }
    expect(feed.some((x: any) => x.label === 'Erin Erased' || x.visitor_ref === 'V-1')).toBe(false);
    // The row is kept, marked, with nothing identifying in it; consent revocation recorded.
    const row = await statementOn(h.server.store, 'select * from customers where id = ?').get<any>(ids['V-1']);
    expect(row).toMatchObject({ erased_at: expect.any(String), template: null, full_name: '', phone: '', email: '', consent: 0, visit_count: 0 });
    const consents = await h.server.store.db.select().from(customerConsents).where(eq(customerConsents.customerId, ids['V-1']!));
    expect(consents.map((c) => [c.consent, c.reason])).toEqual([
      [true, 'profile'],
      [false, 'erasure'],
    ]);
    const marker = await statementOn(h.server.store, 'select * from do_not_enrol where company_id = ?').all<any>(a.id);
    expect(marker).toHaveLength(1);
    expect(Object.keys(marker[0]).sort()).toEqual(['company_id', 'expires_at', 'id', 'recognition_model', 'sketch']);

    // The same face again (the other photo): counted, not enrolled; someone new still is.
    const again = await visit(faces.same[1], { photo: true });
    expect(again.row).not.toHaveProperty('visitor_id');
    expect(again.row).toMatchObject({ label: '', is_new_visitor: false, image: { available: false } });
    const fresh = await visit(faces.others[3]);
    expect(fresh.row).toMatchObject({ visitor_ref: 'V-5', is_new_visitor: true });
  });

  it('uploads no visit named are swept after 24 hours (file, then row)', async () => {
    const up = await pc.uploadFace(faces.others[2]!.jpeg);
    const id = up.body.face_image_id;
    const deps = { store: h.server.store, config: h.server.deps.config, log: h.server.deps.log };
    expect(await sweepUnlinkedFaces(deps)).toBe(0);
    expect(await storedFace(h, a.id, id)).toBeDefined();
    await statementOn(h.server.store, 'update face_images set created_at = ? where id = ?').run(new Date(Date.now() - 25 * 3600_000).toISOString(), id);
    expect(await sweepUnlinkedFaces(deps)).toBe(1);
    expect(await storedFace(h, a.id, id)).toBeUndefined();
    expect(await h.server.store.db.select().from(faceImages).where(eq(faceImages.id, id))).toEqual([]);
    // Linked photos are never swept.
    expect((await get(`/api/faces/${photos['V-3']![0]}`)).status).toBe(200);
  });

  it('bad input anywhere: the error envelope, never a 500', async () => {
    const weird = ['%00', '..%2F..%2Fetc', 'V-', 'V-0', 'V-1e3', '-1', 'x'.repeat(500), '%E2%98%83', 'null'];
    for (const id of weird) {
      for (const [method, p, body] of [
        ['GET', `/api/visitors/${id}`],
        ['GET', `/api/visitors/${id}/history`],
        ['GET', `/api/visitors/${id}/image`],
        ['PUT', `/api/visitors/${id}/profile`, { consent: true }],
        ['DELETE', `/api/visitors/${id}`],
        ['POST', `/api/visitors/${id}/merge`, { into: 'V-2' }],
        ['GET', `/api/faces/${id}`],
        ['GET', `/api/visits?cursor=${id}&site=${id}`],
        ['GET', `/api/visitors?q=${id}&limit=${id}`],
        ['POST', '/api/purchases', { visitor_id: id, site_id: id, amount: 1, currency: 'INR' }],
      ] as [string, string, unknown?][]) {
        const r = await h.request(method, p, { token: manager, body });
        expect(r.status, `${method} ${p}`).toBeLessThan(500);
        if (r.status >= 400) expect(r.body, `${method} ${p}`).toEqual({ error: expect.any(String), message: expect.any(String) });
      }
    }
    for (const raw of ['[', '"x"', '123', '{"consent": null}', '{"__proto__": {"consent": true}}']) {
      const r = await h.request('PUT', '/api/visitors/V-2/profile', { token: manager, raw });
      expect(r.status, raw).toBe(400);
    }
  });

  it('another company: 404 on every customer route', async () => {
    const id = ids['V-4']!;
    const t = b.ownerToken;
    const checks: [string, string, unknown?][] = [
      ['GET', `/api/visitors/${id}`],
      ['GET', `/api/visitors/${id}/history`],
      ['GET', `/api/visitors/${id}/image`],
      ['PUT', `/api/visitors/${id}/profile`, { consent: false }],
      ['DELETE', `/api/visitors/${id}`],
      ['POST', `/api/visitors/${id}/merge`, { into: 'V-1' }],
      ['POST', `/api/visitors/V-1/merge`, { into: id }],
      ['GET', `/api/faces/${photos['V-3']![0]}`],
    ];
    for (const [method, p, body] of checks) {
      const r = await h.request(method, p, { token: t, body });
      expect(r.status, `${method} ${p}`).toBe(404);
      expect(r.body.error).toBe('not_found');
    }
    // Still there for its own company.
    expect((await customer(id)).ref).toBe('V-4');
    const admin = await h.adminToken();
    expect((await get('/api/visitors', admin)).status).toBe(404);
  });
});

describe('photos switched off (FOOTFALL_IMAGES=off)', () => {
  it('404 images_disabled on the photo routes; uploads refused; a face uploaded before the switch is deleted at ingest', async () => {
    const faces = await realFaces();
    let h = await startHarness({ FOOTFALL_IMAGES: 'local', FOOTFALL_VISIT_GAP_S: 1 });
    const c = await h.company('Photos Off');
    let pc = await shopPc(h, c.ownerToken, c.slug, 'Shop');
    const up = await pc.uploadFace(faces.others[0]!.jpeg);
    expect(up.status).toBe(201);
    expect(await storedFace(h, c.id, up.body.face_image_id)).toBeDefined();
    await pc.close();
    await h.server.close();
    h = await startHarness({ FOOTFALL_IMAGES: 'off' }, { dataDir: h.dataDir, keepDataDir: false });
    try {
      const token = (await h.login(c.ownerEmail, c.ownerPassword)).access_token;
      pc = { ...pc, client: await connectPc(h, pc.enrolment) };
      const msg = visitOf(faces, faces.others[0], { face_image_id: up.body.face_image_id });
      await pc.client.publishAsync(upTopic(c.slug, pc.shop.slug, 'visit'), JSON.stringify(msg), { qos: 1 });
      const [row] = await arrivals(h, token, 1);
      expect(row).toMatchObject({ visitor_ref: 'V-1', image: { available: false, reason: 'Customer photos are switched off on this server.' } });
      await settled(h);
      expect(await storedFace(h, c.id, up.body.face_image_id)).toBeUndefined();
      expect(await h.request('GET', '/api/visitors/V-1/image', { token })).toMatchObject({ status: 404, body: { error: 'images_disabled' } });
      expect(await h.request('GET', `/api/faces/${up.body.face_image_id}`, { token })).toMatchObject({ status: 404, body: { error: 'images_disabled' } });
      const refused = await upload(h, 'POST', '/api/agent/faces', pc.enrolment.token, faces.others[0]!.jpeg);
      expect(refused).toMatchObject({ status: 501, body: { error: 'images_disabled' } });
    } finally {
      await pc.client.endAsync(true).catch(() => {});
      await h.close();
    }
  });
});
