import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFaces } from '../../test/support/faces.js';
import { memberToken } from '../../test/support/shop-pc.js';
import { arrivals, shopPc, type ShopPc } from '../../test/support/visits.js';
import { pruneAudit } from './query.js';
import { auditLog } from '../db/tables.js';

/**
 * GET /api/audit (issue 29): every listed action writes a row an owner can read, filtered by actor, action, customer
 * and time, paged by cursor; nobody else reads it; rows older than the retention go.
 */
describe('the audit trail', () => {
  let h: Harness;
  let faces: RealFaces;
  let a: Company;
  let b: Company;
  let pc: ShopPc;
  let pcB: ShopPc;
  let manager: string;
  let staff: string;
  let member: { id: string; email: string };
  const ids: Record<string, string> = {};
  let clock = Date.now() - 86_400_000;

  async function visit(face: RealFaces['all'][number], via: ShopPc, token: string) {
    const up = await via.uploadFace(face.jpeg);
    expect(up.status).toBe(201);
    const head = (await h.request('GET', '/api/visits?limit=1', { token })).body.cursor;
    const msg = visitOf(faces, face, { occurred_at: new Date((clock += 10_000)).toISOString(), face_image_id: up.body.face_image_id });
    await via.publish(msg);
    const [row] = await arrivals(h, token, 1, `&cursor=${head}`);
    return row;
  }

  const list = (query: string, token = a.ownerToken) => h.request('GET', `/api/audit${query}`, { token });

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness({ FOOTFALL_IMAGES: 'local', FOOTFALL_VISIT_GAP_S: 1 }), realFaces()]);
    a = await h.company('Audit Alpha');
    b = await h.company('Audit Beta');
    pc = await shopPc(h, a.ownerToken, a.slug, 'High Street');
    pcB = await shopPc(h, b.ownerToken, b.slug, 'High Street');
    [manager, staff] = await Promise.all([memberToken(h, a.ownerToken, 'manager'), memberToken(h, a.ownerToken, 'staff')]);
    const made = await h.request('POST', '/api/team/members', { token: a.ownerToken, body: { email: 'audited.member@shop.test', full_name: 'Audited Member', role: 'staff', password: 'member-password-1' } });
    member = { id: made.body.id, email: made.body.email };
    ids['V-1'] = (await visit(faces.same[0], pc, a.ownerToken)).visitor_id;
    ids['V-2'] = (await visit(faces.others[0]!, pc, a.ownerToken)).visitor_id;
    ids['V-3'] = (await visit(faces.others[1]!, pc, a.ownerToken)).visitor_id;
    await visit(faces.others[2]!, pcB, b.ownerToken);

    // The actions the issue lists (exports and privacy changes: server/privacy/privacy.test.ts).
    await h.login('audited.member@shop.test', 'member-password-1'); // sign-in
    expect((await h.request('PATCH', `/api/team/${member.id}`, { token: a.ownerToken, body: { role: 'manager' } })).status).toBe(200); // role change
    expect((await h.request('GET', '/api/visitors/V-1', { token: staff })).status).toBe(200); // customer view
    expect((await h.request('GET', '/api/visitors/V-1/history', { token: staff })).status).toBe(200);
    expect((await h.request('GET', '/api/visitors/V-1/image', { token: staff })).status).toBe(200); // photo hand-out
    expect((await h.request('PATCH', '/api/visitors/V-3', { token: manager, body: { staff: true } })).status).toBe(200); // staff mark
    expect((await h.request('POST', '/api/visitors/V-2/merge', { token: manager, body: { into: 'V-1' } })).status).toBe(200); // merge
    expect((await h.request('DELETE', '/api/visitors/V-3', { token: manager })).status).toBe(200); // erasure
  }, 60_000);

  afterAll(async () => {
    await Promise.all([pc?.close(), pcB?.close()]);
    await h?.close();
  });

  it('has a row for each action, naming who did it', async () => {
    const r = await list('?limit=500');
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const entries: any[] = r.body.entries;
    const by = (action: string) => entries.filter((e) => e.action === action);
    expect(by('auth.sign_in').map((e) => e.actor_email)).toContain('audited.member@shop.test');
    expect(by('auth.sign_in').find((e) => e.actor_email === 'audited.member@shop.test').detail.via).toBe('password');
    const role = by('team.member.update').find((e) => e.target === member.id);
    expect(role.detail.from.role).toBe('staff');
    expect(role.detail.to.role).toBe('manager');
    expect(role.actor_email).toBe(a.ownerEmail);
    expect(by('customer.view').map((e) => [e.target, e.detail.read])).toEqual(expect.arrayContaining([[ids['V-1'], 'profile'], [ids['V-1'], 'history']]));
    expect(by('photo.link').length).toBeGreaterThan(0);
    expect(by('customer.staff').map((e) => e.target)).toEqual([ids['V-3']]);
    expect(by('customer.merge')[0].detail.merged_id).toBe(ids['V-2']);
    expect(by('customer.erase').map((e) => e.target)).toEqual([ids['V-3']]);
    // Newest first, ids unique.
    const order = entries.map((e) => e.id);
    expect(order).toEqual([...order].sort((x, y) => y - x));
    expect(r.body.cursor).toBeNull();
    // Nothing of company B.
    const bRows = await h.server.store.db.select().from(auditLog).where(eq(auditLog.companyId, b.id));
    expect(bRows.length).toBeGreaterThan(0);
    const bIds = new Set(bRows.map((x) => x.id));
    expect(entries.some((e) => bIds.has(e.id))).toBe(false);
  });

  it('filters by actor, action, customer and time', async () => {
    const all: any[] = (await list('?limit=500')).body.entries;
    const byManager = (await list(`?limit=500&actor=${encodeURIComponent(all.find((e) => e.action === 'customer.merge').actor_email)}`)).body.entries;
    expect(byManager.length).toBeGreaterThanOrEqual(3);
    expect(new Set(byManager.map((e: any) => e.actor_id)).size).toBe(1);
    const byId = (await list(`?limit=500&actor=${byManager[0].actor_id}`)).body.entries;
    expect(byId.map((e: any) => e.id)).toEqual(byManager.map((e: any) => e.id));

    const customerFamily = (await list('?limit=500&action=customer.')).body.entries;
    expect(new Set(customerFamily.map((e: any) => e.action))).toEqual(new Set(['customer.view', 'customer.staff', 'customer.merge', 'customer.erase']));
    expect((await list('?action=customer.view')).body.entries.every((e: any) => e.action === 'customer.view')).toBe(true);

    // About V-2: its sighting's photo links, and the merge that took it away (found by merged_id).
    const aboutV2 = (await list(`?limit=500&customer=${ids['V-2']}`)).body.entries;
    expect(aboutV2.map((e: any) => e.action)).toContain('customer.merge');
    const aboutV1 = (await list('?limit=500&customer=V-1')).body.entries;
    expect(aboutV1.map((e: any) => e.action)).toEqual(expect.arrayContaining(['customer.view', 'customer.merge', 'photo.link']));
    for (const e of aboutV1) expect(JSON.stringify(e)).toContain(ids['V-1']);

    const mid = all[Math.floor(all.length / 2)].at;
    const later = (await list(`?limit=500&from=${encodeURIComponent(mid)}`)).body.entries;
    const earlier = (await list(`?limit=500&to=${encodeURIComponent(mid)}`)).body.entries;
    expect(later.every((e: any) => e.at >= mid)).toBe(true);
    expect(earlier.every((e: any) => e.at <= mid)).toBe(true);
    expect(new Set([...later, ...earlier].map((e: any) => e.id)).size).toBe(all.length);
    expect((await list('?from=2030-01-02&to=2030-01-01')).status).toBe(400);
    expect((await list('?from=yesterday')).status).toBe(400);
    expect((await list('?customer=V-999')).status).toBe(400);
  });

  it('pages by cursor through exactly the unpaged list', async () => {
    const all: any[] = (await list('?limit=500')).body.entries;
    const seen: number[] = [];
    let cursor: string | null = '';
    for (let i = 0; i < 100 && cursor !== null; i++) {
      const r = await list(`?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.entries.length).toBeLessThanOrEqual(3);
      seen.push(...r.body.entries.map((e: any) => e.id));
      cursor = r.body.cursor;
    }
    expect(seen).toEqual(all.map((e) => e.id));
    // A cursor opens only for its own company's audit list.
    const first = (await list('?limit=1')).body.cursor;
    expect((await list(`?cursor=${first}`, b.ownerToken)).body.error).toBe('invalid_cursor');
    expect((await list('?cursor=nonsense')).status).toBe(400);
    const feedCursor = (await h.request('GET', '/api/visits?limit=1', { token: a.ownerToken })).body.cursor;
    expect((await list(`?cursor=${feedCursor}`)).body.error).toBe('invalid_cursor');
  });

  it('is read by owners only: 403 for managers and staff, 401 without a token, 404 for the platform admin (as every tenant route)', async () => {
    expect((await list('', manager)).status).toBe(403);
    expect((await list('', staff)).status).toBe(403);
    expect((await h.request('GET', '/api/audit')).status).toBe(401);
    expect((await list('', await h.adminToken())).status).toBe(404);
    // Company B's owner sees only B's rows, and cannot name A's customers.
    const theirs = (await list('?limit=500', b.ownerToken)).body.entries;
    expect(theirs.length).toBeGreaterThan(0);
    expect(theirs.every((e: any) => !JSON.stringify(e).includes(ids['V-1']!))).toBe(true);
    expect((await list(`?customer=${ids['V-1']}`, b.ownerToken)).status).toBe(400);
  });

  it('forgets rows older than the retention, and only those', async () => {
    const db = h.server.store.db;
    const before = (await db.select().from(auditLog)).length;
    const old = await db.select().from(auditLog).where(eq(auditLog.companyId, a.id)).limit(2);
    for (const row of old) (await db.update(auditLog).set({ at: new Date(Date.now() - 800 * 86_400_000).toISOString() }).where(eq(auditLog.id, row.id)));
    expect(await pruneAudit(db, 730)).toBe(2);
    const after = await db.select().from(auditLog);
    expect(after.length).toBe(before - 2);
    expect(after.some((r) => old.some((o) => o.id === r.id))).toBe(false);
    expect(await pruneAudit(db, 730)).toBe(0);
  });
});
