import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upTopic } from '../../shared/topics.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { realFaces, visitOf, type RealFace, type RealFaces } from '../../test/support/faces.js';
import { connectPc, memberToken, waitFor } from '../../test/support/shop-pc.js';
import { arrivals, openStream, settled, shopPc, type ShopPc } from '../../test/support/visits.js';
import { feedCursors } from './cursor.js';
import { sqliteOf } from '../db/open.js';
import { sqliteOnly } from '../../test/support/stores.js';
import { statementOn } from '../db/statement.js';

describe('visit ingest and the arrivals feed (real broker, real faces)', () => {
  let h: Harness;
  let faces: RealFaces;
  let a: Company;
  let b: Company;
  let pcA: ShopPc;
  let pcA2: ShopPc;
  let pcB: ShopPc;
  let staffA: string;
  // Each visit 10 s after the one before (a visit is a stay: the same person seen again within
  // FOOTFALL_VISIT_GAP_S, here 1 s, would extend the visit instead of making another arrival).
  let clock = Date.now() - 86_400_000;
  const visit = (face: RealFace | undefined, over: Parameters<typeof visitOf>[2] = {}) =>
    visitOf(faces, face, { occurred_at: new Date((clock += 10_000)).toISOString(), ...over });

  beforeAll(async () => {
    [h, faces] = await Promise.all([startHarness({ FOOTFALL_SSE_KEEPALIVE_S: 1, FOOTFALL_INGEST_BATCH_MS: 20, FOOTFALL_VISIT_GAP_S: 1 }), realFaces()]);
    a = await h.company('Visits Alpha');
    b = await h.company('Visits Beta');
    pcA = await shopPc(h, a.ownerToken, a.slug, 'Andheri');
    pcA2 = await shopPc(h, a.ownerToken, a.slug, 'Bandra');
    pcB = await shopPc(h, b.ownerToken, b.slug, 'Andheri');
    staffA = await memberToken(h, a.ownerToken, 'staff');
  });
  afterAll(async () => {
    await Promise.all([pcA, pcA2, pcB].map((p) => p?.close()));
    await h?.close();
  });

  it('the same person in two photos is one customer with a returning visit; another person is another customer', async () => {
    const [p1, p2] = faces.same;
    const other = faces.others[0]!;
    await pcA.publish(visit(p1, { camera_id: 'entrance' }));
    await settled(h);
    await pcA.publish(visit(p2, { camera_id: 'till' }));
    await settled(h);
    await pcA.publish(visit(other));
    const rows = await arrivals(h, staffA, 3);
    expect(rows).toHaveLength(3);
    const [first, second, third] = rows;
    expect(first).toEqual({
      visit_id: expect.any(String),
      occurred_at: expect.any(String),
      last_seen_at: expect.any(String),
      dwell_s: 0,
      site_id: pcA.shop.site_id,
      site: 'Andheri',
      site_slug: 'andheri',
      camera_id: 'entrance',
      visitor_id: expect.any(String),
      visitor_ref: 'V-1',
      label: 'Visitor 1',
      is_new_visitor: true,
      returning: false,
      similarity: 1,
      quality: p1.quality,
      attributes: { gender: 'female', age: 30, emotion: 'happy' },
      image: { available: false, reason: expect.stringMatching(/switched off/) },
    });
    expect(second).toMatchObject({ visitor_id: first.visitor_id, visitor_ref: 'V-1', is_new_visitor: false, camera_id: 'till' });
    expect(second.similarity).toBeGreaterThan(0.5);
    expect(second.similarity).toBeLessThan(1);
    expect(third).toMatchObject({ visitor_ref: 'V-2', label: 'Visitor 2', is_new_visitor: true });
    expect(third.visitor_id).not.toBe(first.visitor_id);
    // Customer ids are UUIDv7, later customers' sorting after earlier ones (the indexes keyed by customer append them).
    for (const v of [first, third]) expect(v.visitor_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(third.visitor_id > first.visitor_id).toBe(true);

    const c1 = (await h.request('GET', '/api/visitors/V-1', { token: staffA })).body;
    expect(c1).toMatchObject({ visit_count: 2, first_seen_at: first.occurred_at, last_seen_at: second.occurred_at });
    const shop = (await h.request('GET', '/api/sites', { token: staffA })).body.find((s: any) => s.slug === 'andheri');
    expect(Date.parse(shop.last_event_at)).toBeGreaterThan(Date.now() - 10_000);
  });

  it('duplicates of one visit_id appear once, whether in one batch or re-sent later', async () => {
    const before = await arrivals(h, staffA, 0);
    const cursor = feedCursors(h.server.deps.keys).encode(a.id, 0);
    const msg = visit(faces.others[1]);
    await Promise.all([pcA.publish(msg), pcA.publish(msg), pcA.publish(msg)]);
    await settled(h);
    await pcA.publish(msg);
    await settled(h);
    const rows = (await h.request('GET', `/api/visits?limit=1000&cursor=${cursor}`, { token: staffA })).body.arrivals;
    expect(rows.filter((r: any) => r.visit_id === msg.visit_id)).toHaveLength(1);
    expect(rows).toHaveLength(before.length + 1);
    // The same visit_id from another company is that company's own visit.
    await pcB.publish(msg);
    const bRows = await arrivals(h, b.ownerToken, 1);
    expect(bRows.map((r: any) => r.visit_id)).toEqual([msg.visit_id]);
    expect(bRows[0].visitor_ref).toBe('V-1');
  });

  it('faces under the gate and visits without an embedding are footfall without identity', async () => {
    const head = (await h.request('GET', '/api/visits?limit=1', { token: staffA })).body.cursor;
    const under = visit(faces.others[2], { passed_gate: false, quality: 0.1 });
    const none = visit(undefined);
    await pcA.publish(under);
    await pcA.publish(none);
    const rows = await arrivals(h, staffA, 2, `&cursor=${head}`);
    for (const r of rows) {
      expect(r).not.toHaveProperty('visitor_id');
      expect(r).not.toHaveProperty('visitor_ref');
      expect(r).toMatchObject({ label: '', is_new_visitor: false, similarity: 0 });
    }
  });

  it('bad messages are logged and dropped; the connection, the broker and later visits are fine', async () => {
    const head = (await h.request('GET', '/api/visits?limit=1', { token: staffA })).body.cursor;
    const invalidBefore = h.server.ingest.stats.invalid;
    const nan = Buffer.alloc(2048);
    nan.writeFloatLE(Number.NaN, 0);
    const bad = [
      'not json',
      '[]',
      JSON.stringify({ visit_id: 'nope' }),
      JSON.stringify({ ...visit(faces.others[0]), embedding: 'AAAA' }),
      JSON.stringify({ ...visit(faces.others[0]), recognition_model: undefined }),
      JSON.stringify({ ...visit(faces.others[0]), quality: 7 }),
      JSON.stringify({ ...visit(faces.others[0]), face_image_id: '../../etc/passwd' }),
    ];
    for (const m of bad) await pcA.publish(m);
    // A NaN embedding is counted as footfall without identity.
    const nanVisit = { ...visit(faces.others[0]), embedding: nan.toString('base64') };
    await pcA.publish(JSON.stringify(nanVisit));
    const ok = visit(faces.others[0]);
    await pcA.publish(ok);
    const rows = await arrivals(h, staffA, 2, `&cursor=${head}`);
    expect(rows.map((r: any) => r.visit_id)).toEqual([nanVisit.visit_id, ok.visit_id]);
    expect(rows[0]).not.toHaveProperty('visitor_id');
    expect(rows[1].visitor_ref).toBe('V-2');
    expect(h.server.ingest.stats.invalid - invalidBefore).toBe(bad.length + 1);
    expect(pcA.client.connected).toBe(true);
    expect((await h.request('GET', '/healthz')).status).toBe(200);
  });

  it("a suspended company's visits are dropped at ingest", async () => {
    const c = await h.company('Visits Suspended');
    const pc = await shopPc(h, c.ownerToken, c.slug, 'Only');
    try {
      const admin = await h.adminToken();
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: false } })).status).toBe(200);
      const before = h.server.ingest.stats.suspended;
      await pc.publish(visit(faces.others[0]));
      await waitFor(() => h.server.ingest.stats.suspended > before);
      expect((await h.request('PATCH', `/api/admin/clients/${c.id}`, { token: admin, body: { active: true } })).status).toBe(200);
      const owner = (await h.login(c.ownerEmail, c.ownerPassword)).access_token;
      const after = visit(faces.others[1]);
      await pc.publish(after);
      const rows = await arrivals(h, owner, 1);
      expect(rows.map((r: any) => r.visit_id)).toEqual([after.visit_id]);
      expect(rows[0].visitor_ref).toBe('V-1');
    } finally {
      await pc.close();
    }
  });

  it('cursor: ascending rows after it, the caller’s cursor back on an empty poll, a clear 400 for a bad one', async () => {
    const tail = await h.request('GET', '/api/visits?limit=2', { token: staffA });
    expect(tail.status).toBe(200);
    expect(tail.body.arrivals).toHaveLength(2);
    expect(Date.parse(tail.body.polled_at)).toBeGreaterThan(Date.now() - 10_000);
    const cursor = tail.body.cursor;
    expect(typeof cursor).toBe('string');
    expect(JSON.stringify(tail.body.arrivals)).not.toMatch(/"seq"/);

    const empty = await h.request('GET', `/api/visits?cursor=${cursor}`, { token: staffA });
    expect(empty.body).toEqual({ arrivals: [], cursor, polled_at: expect.any(String) });

    const m1 = visit(faces.same[0]);
    const m2 = visit(undefined);
    await pcA.publish(m1);
    await settled(h);
    await pcA2.publish(m2);
    const next = await arrivals(h, staffA, 2, `&cursor=${cursor}`);
    expect(next.map((r: any) => r.visit_id)).toEqual([m1.visit_id, m2.visit_id]);
    // One at a time: each answer's cursor is that row's position.
    const one = await h.request('GET', `/api/visits?limit=1&cursor=${cursor}`, { token: staffA });
    expect(one.body.arrivals.map((r: any) => r.visit_id)).toEqual([m1.visit_id]);
    const two = await h.request('GET', `/api/visits?limit=1&cursor=${one.body.cursor}`, { token: staffA });
    expect(two.body.arrivals.map((r: any) => r.visit_id)).toEqual([m2.visit_id]);

    // Site filter, by slug or uuid, on both the tail and a cursor.
    const bySlug = await h.request('GET', `/api/visits?site=bandra&cursor=${cursor}`, { token: staffA });
    expect(bySlug.body.arrivals.map((r: any) => r.visit_id)).toEqual([m2.visit_id]);
    const byId = await h.request('GET', `/api/visits?site_id=${pcA2.shop.site_id}`, { token: staffA });
    expect(byId.body.arrivals.every((r: any) => r.site_slug === 'bandra')).toBe(true);
    const both = await h.request('GET', `/api/visits?site=bandra&site_id=${pcA.shop.site_id}`, { token: staffA });
    expect(both.status).toBe(400);

    const cursors = feedCursors(h.server.deps.keys);
    const sealed = cursors.encode(a.id, 1);
    const flipped = Buffer.from(sealed, 'base64url');
    flipped[14]! ^= 1;
    for (const bad of [
      'garbage',
      sealed.slice(0, -2),
      flipped.toString('base64url'),
      // The old format (`v1:<platform-wide number>`): drop it and poll without one.
      Buffer.from('v1:10').toString('base64url'),
      Buffer.from('v1:-1').toString('base64url'),
      // Another company's cursor does not open for this one.
      cursors.encode(b.id, 1),
      'a'.repeat(300),
    ]) {
      const r = await h.request('GET', `/api/visits?cursor=${encodeURIComponent(bad)}`, { token: staffA });
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toBe(bad.length > 200 ? 'invalid_request' : 'invalid_cursor');
      if (r.body.error === 'invalid_cursor') expect(r.body.message).toMatch(/poll without a cursor/);
    }
    expect(cursors.decode(a.id, cursors.encode(a.id, 123))).toBe(123);
    expect(cursors.decode(b.id, cursors.encode(a.id, 123))).toBeUndefined();
  });

  it('limit: default 100, at most 1000; site unknown or another company’s is 400', async () => {
    for (const [q, status] of [
      ['limit=1000', 200],
      ['limit=1001', 400],
      ['limit=0', 400],
      ['limit=-1', 400],
      ['limit=abc', 400],
      ['limit=1.5', 400],
      ['site=nowhere', 400],
      [`site=${randomUUID()}`, 400],
      ['limit=1&limit=2', 400],
    ] as const) {
      const r = await h.request('GET', `/api/visits?${q}`, { token: staffA });
      expect(r.status, q).toBe(status);
      if (status === 400) expect(r.body).toEqual({ error: expect.any(String), message: expect.any(String) });
    }
    // Company B's shop slug "andheri" names A's own shop for A; B's uuid is unknown to A.
    expect((await h.request('GET', `/api/visits?site_id=${pcB.shop.site_id}`, { token: staffA })).status).toBe(400);
    expect((await h.request('GET', '/api/visits')).status).toBe(401);
  });

  it('tenants: a company never sees another company’s arrivals, in the feed or on the stream', async () => {
    const bRows = (await h.request('GET', '/api/visits?limit=1000', { token: b.ownerToken })).body.arrivals;
    const aRows = (await h.request('GET', '/api/visits?limit=1000', { token: a.ownerToken })).body.arrivals;
    const aShops = new Set([pcA.shop.site_id, pcA2.shop.site_id]);
    expect(aRows.every((r: any) => aShops.has(r.site_id))).toBe(true);
    expect(bRows.every((r: any) => r.site_id === pcB.shop.site_id)).toBe(true);
    const admin = await h.adminToken();
    expect((await h.request('GET', '/api/visits', { token: admin })).status).toBe(404);

    const sb = await openStream(h, b.ownerToken);
    try {
      const msg = visit(faces.others[3]);
      await pcA.publish(msg);
      await settled(h);
      const own = visit(undefined);
      await pcB.publish(own);
      const got = await sb.reader.next(1);
      expect(got[0]!.arrival.visit_id).toBe(own.visit_id);
      expect(sb.reader.events.filter((e) => e.event === 'arrival')).toHaveLength(1);
    } finally {
      await sb.close();
    }
  });

  it('stream: live arrivals with the cursor as event id, keep-alives, resume with Last-Event-ID or ?cursor', async () => {
    const s = await openStream(h, staffA);
    expect(s.res.status).toBe(200);
    expect(s.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const live = [visit(faces.same[1]), visit(undefined, { camera_id: 'door' })];
    let got: { id: string; arrival: any }[];
    try {
      await pcA.publish(live[0]!);
      await pcA2.publish(live[1]!);
      got = await s.reader.next(2);
      expect(got.map((e) => e.arrival.visit_id)).toEqual(live.map((m) => m.visit_id));
      expect(got[0]!.arrival).toMatchObject({ visitor_ref: 'V-1', is_new_visitor: false, site_slug: 'andheri' });
      // The event id is the feed cursor of that row.
      const poll = await h.request('GET', `/api/visits?cursor=${got[0]!.id}`, { token: staffA });
      expect(poll.body.arrivals.map((r: any) => r.visit_id)).toEqual([live[1]!.visit_id]);
      await waitFor(() => s.reader.events.some((e) => e.comment === 'keep-alive'));
    } finally {
      await s.close();
    }

    // Missed while disconnected: delivered on resume, by header or by query, then live again.
    const missed = [visit(faces.others[0]), visit(faces.others[1])];
    for (const m of missed) await pcA.publish(m);
    await settled(h);
    const byHeader = await openStream(h, staffA, '', { 'Last-Event-ID': got![1]!.id });
    const byQuery = await openStream(h, staffA, `?cursor=${got![1]!.id}`);
    const bandraOnly = await openStream(h, staffA, `?site=bandra&cursor=${got![0]!.id}`);
    try {
      for (const st of [byHeader, byQuery]) expect((await st.reader.next(2)).map((e) => e.arrival.visit_id)).toEqual(missed.map((m) => m.visit_id));
      expect((await bandraOnly.reader.next(1)).map((e) => e.arrival.visit_id)).toEqual([live[1]!.visit_id]);
      const after = [visit(undefined), visit(undefined)];
      await pcA.publish(after[0]!);
      await pcA2.publish(after[1]!);
      for (const st of [byHeader, byQuery]) expect((await st.reader.next(2)).map((e) => e.arrival.visit_id)).toEqual(after.map((m) => m.visit_id));
      expect((await bandraOnly.reader.next(1)).map((e) => e.arrival.visit_id)).toEqual([after[1]!.visit_id]);
    } finally {
      await Promise.all([byHeader.close(), byQuery.close(), bandraOnly.close()]);
    }

    // Errors before the stream starts are the JSON envelope.
    const bad = await fetch(`${h.url}/api/visits/stream`, { headers: { Authorization: `Bearer ${staffA}`, 'Last-Event-ID': 'nope' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_cursor' });
    expect((await fetch(`${h.url}/api/visits/stream`)).status).toBe(401);
    expect((await fetch(`${h.url}/api/visits/stream?site=nowhere`, { headers: { Authorization: `Bearer ${staffA}` } })).status).toBe(400);
    await waitFor(() => h.server.deps.arrivals.listeners === 0);
  });

  it('a shop with visits cannot be removed', async () => {
    const r = await h.request('DELETE', `/api/sites/${pcA2.shop.slug}`, { token: a.ownerToken });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: 'site_not_empty', message: expect.stringMatching(/visit history/) });
  });

  it('a visit is acknowledged (PUBACK) only once it is stored; the ingest thread is started again if it dies', async () => {
    const stored = async (id: string) => (await statementOn(h.server.store, 'select count(*) as n from visits where visit_id = ?').get<{ n: number }>(id))!.n;
    for (let i = 0; i < 3; i++) {
      const m = visit(i === 0 ? faces.others[0] : undefined);
      await pcA.publish(m);
      expect(await stored(m.visit_id)).toBe(1);
    }
    const ingest = h.server.ingest as unknown as { worker: { terminate(): Promise<number> } };
    await ingest.worker.terminate();
    const after = visit(faces.others[1]);
    await pcA.publish(after);
    expect(await stored(after.visit_id)).toBe(1);
    expect(pcA.client.connected).toBe(true);
  });

  it.skipIf(sqliteOnly('server/visits/visits.test.ts', 'a SQLite trigger poisons one visit'))('a visit that cannot be stored does not take its batch with it; the gallery stays equal to the database', async () => {
    const sqlite = sqliteOf(h.server.store);
    sqlite.exec("CREATE TRIGGER poison BEFORE INSERT ON visits WHEN NEW.camera_id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END");
    try {
      const head = (await h.request('GET', '/api/visits?limit=1', { token: staffA })).body.cursor;
      const failedBefore = h.server.ingest.stats.failed;
      const newFace = faces.others[4] ?? faces.others[3]!;
      const good = visit(newFace);
      const bad = visit(faces.others[0], { camera_id: 'poison' });
      const none = visit(undefined);
      await Promise.all([pcA.publish(good), pcA.publish(bad), pcA.publish(none)]);
      const rows = await arrivals(h, staffA, 2, `&cursor=${head}`);
      await settled(h);
      expect(rows.map((r: any) => r.visit_id)).toEqual([good.visit_id, none.visit_id]);
      expect(h.server.ingest.stats.failed - failedBefore).toBe(1);
      // The customer enrolled by the failed attempt was rolled back in memory too: the face has one customer.
      const again = visit(newFace);
      await pcA.publish(again);
      await settled(h);
      const count = sqlite.prepare('select count(*) as n from visits v join customers c on c.id = v.customer_id where v.visit_id in (?, ?) group by c.id').all(good.visit_id, again.visit_id);
      expect(count).toEqual([{ n: 2 }]);
    } finally {
      sqlite.exec('DROP TRIGGER poison');
    }
  });

  it('a gallery made stale behind the ingest thread’s back is caught in the transaction and reloaded', async () => {
    const on = (text: string) => statementOn(h.server.store, text);
    const id2 = (await h.request('GET', '/api/visitors/V-2', { token: staffA })).body.id;
    const id3 = (await h.request('GET', '/api/visitors/V-3', { token: staffA })).body.id;
    // As if a merge had replaced V-2's template weight and an erasure had cleared V-3, and neither notice had arrived.
    await on('update customers set template_count = 999 where id = ?').run(id2);
    await on('update customers set erased_at = ?, template = null where id = ?').run(new Date().toISOString(), id3);
    const head = (await h.request('GET', '/api/visits?limit=1', { token: staffA })).body.cursor;
    const m2 = visit(faces.others[0]);
    const m3 = visit(faces.others[1]);
    await pcA.publish(m2);
    await pcA.publish(m3);
    const rows = await arrivals(h, staffA, 2, `&cursor=${head}`);
    expect(rows[0]).toMatchObject({ visit_id: m2.visit_id, visitor_id: id2 });
    expect(rows[1].visit_id).toBe(m3.visit_id);
    expect(rows[1].visitor_id).not.toBe(id3);
    expect(rows[1].is_new_visitor).toBe(true);
    expect((await on('select template_count as n from customers where id = ?').get<{ n: number }>(id2))?.n).toBe(1000);
  });

  it('templates are stored: after a restart the gallery is rebuilt and the same face is recognised', async () => {
    const dataDir = h.dataDir;
    await Promise.all([pcA, pcA2, pcB].map((p) => p.close()));
    await h.server.close();
    h = await startHarness({ FOOTFALL_VISIT_GAP_S: 1 }, { dataDir, keepDataDir: false });
    const pc = await connectPc(h, pcA.enrolment);
    try {
      const head = (await h.request('GET', '/api/visits?limit=1', { token: staffA })).body.cursor;
      const again = visit(faces.same[1]);
      const stranger = visit(faces.others[3]);
      await pc.publishAsync(upTopic(a.slug, 'andheri', 'visit'), JSON.stringify(again), { qos: 1 });
      await pc.publishAsync(upTopic(a.slug, 'andheri', 'visit'), JSON.stringify(stranger), { qos: 1 });
      const rows = await arrivals(h, staffA, 2, `&cursor=${head}`);
      expect(rows[0]).toMatchObject({ visit_id: again.visit_id, visitor_ref: 'V-1', is_new_visitor: false });
      expect(rows[1]).toMatchObject({ visit_id: stranger.visit_id, is_new_visitor: false });
      expect(rows[1].visitor_ref).not.toBe('V-1');
    } finally {
      await pc.endAsync(true).catch(() => {});
    }
  });
});
