import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../server/config.js';
import type { Deps } from '../server/context.js';
import type { Db } from '../server/db/open.js';
import type { PostgresStore } from '../server/db/pg/store.js';
import type * as Tables from '../server/db/tables.js';
import { startPostgres, postgresMissing, type TestPostgres } from './support/postgres.js';
import { noteSkip } from './support/skips.js';

/**
 * The domains whose SQL was SQLite's answer on PostgreSQL as on SQLite (issue 27, docs/scale-out.md): the customers'
 * ranking and search, the audit log's filter and prune, visit retention, alert conditions, door counting, occupancy,
 * purchases, the fleet metrics, sessions and the visits feed, called as the routes call them on a real PostgreSQL,
 * with the answers the SQLite suite's tests expect for the same situation. The tables are chosen once per process
 * (server/db/tables.ts), so FOOTFALL_DATABASE_URL is set before any of head office is imported (the isolated project).
 */
const FILE = 'test/domains-postgres.test.ts';
const missing = postgresMissing();
if (missing) noteSkip(FILE, missing);

const DAY = 86_400_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe.skipIf(missing)('the domains on PostgreSQL', () => {
  let cluster: TestPostgres;
  let store: PostgresStore;
  let db: Db;
  let t: typeof Tables;
  const now = Date.now();
  const companyId = randomUUID();
  const shopId = randomUUID();
  const userId = randomUUID();
  const customer: Record<string, string> = {};
  const config = { FOOTFALL_HEARTBEAT_INTERVAL_S: 30, FOOTFALL_ACCESS_TOKEN_TTL_S: 900, FOOTFALL_REFRESH_TOKEN_TTL_S: 30 * 86_400 } as Config;

  beforeAll(async () => {
    cluster = await startPostgres();
    process.env.FOOTFALL_DATABASE_URL = await cluster.createDatabase();
    const { openPostgresStore } = await import('../server/db/pg/store.js');
    store = await openPostgresStore(process.env.FOOTFALL_DATABASE_URL);
    db = store.db;
    t = await import('../server/db/tables.js');
    const created = iso(now - 100 * DAY);
    await db.insert(t.companies).values({ id: companyId, slug: 'acme', name: 'Acme', createdAt: created });
    // An enrolled shop whose PC is online, in UTC (the day is the UTC day), open all week, with an occupancy limit.
    const always = [{ open: '00:00', close: '24:00' }];
    await db.insert(t.shops).values({
      id: shopId,
      companyId,
      slug: 'powai',
      name: 'Powai',
      timezone: 'UTC',
      createdAt: created,
      brokerUsername: 'acme.powai',
      enrolledAt: created,
      lastHeartbeatAt: iso(now - 5_000),
      occupancyLimit: 1,
      openingHours: { mon: always, tue: always, wed: always, thu: always, fri: always, sat: always, sun: always },
    });
    await db.insert(t.users).values({ id: userId, companyId, email: 'owner@acme.test', fullName: 'Owner', role: 'owner', passwordHash: 'x', createdAt: created });
    // V-1: three visits, lapsed (last 40 days ago). V-2: one visit today. V-3: two visits, today. V-4: staff. V-5: never seen.
    const people: [number, number, number | null, boolean][] = [
      [1, 3, 40, false],
      [2, 1, 0.01, false],
      [3, 2, 0.02, false],
      [4, 5, 0.005, true],
      [5, 0, null, false],
    ];
    for (const [n, visits, daysAgo, staff] of people) {
      const id = randomUUID();
      customer[`V-${n}`] = id;
      await db.insert(t.customers).values({
        id,
        companyId,
        number: n,
        fullName: `Person ${n}`,
        email: `p${n}@example.test`,
        phone: `+91 98200 0000${n}`,
        recognitionModel: 'm',
        visitCount: visits,
        firstSeenAt: daysAgo === null ? null : iso(now - 60 * DAY),
        lastSeenAt: daysAgo === null ? null : iso(now - daysAgo * DAY),
        staff,
        createdAt: iso(now - 60 * DAY),
      });
    }
  }, 60_000);

  afterAll(async () => {
    delete process.env.FOOTFALL_DATABASE_URL;
    await store?.close();
    await cluster?.close();
  });

  it('customers: ranked by visits, spend and recency, lapsed, staff, with spend per customer (server/customers/ranking.test.ts)', async () => {
    const { rankCustomers, spendOf } = await import('../server/customers/ranking.js');
    const { searchCustomers } = await import('../server/customers/service.js');
    for (const [who, amount, currency] of [['V-2', 90000, 'INR'], ['V-2', 10000, 'INR'], ['V-3', 5000, 'INR'], ['V-3', 500, 'USD'], ['V-1', 2000, 'INR']] as const) {
      await db.insert(t.purchases).values({ id: randomUUID(), companyId, customerId: customer[who]!, shopId, amountMinor: amount, currency, items: [], createdAt: iso(Date.now()) });
    }
    const refs = (rows: { number: number }[]) => rows.map((r) => `V-${r.number}`);
    const rank = (sort: 'recent' | 'visits' | 'spend', lapsed?: number, limit = 50, staff?: boolean) => rankCustomers(db, companyId, sort, lapsed, limit, staff, now);
    expect(refs(await rank('visits', undefined, 50, false))).toEqual(['V-1', 'V-3', 'V-2', 'V-5']);
    expect(refs(await rank('spend', undefined, 50, false))).toEqual(['V-2', 'V-3', 'V-1', 'V-5']);
    expect(refs(await rank('visits', 30))).toEqual(['V-1']);
    expect(refs(await rank('visits', 30, 1))).toEqual(['V-1']);
    // Never seen last (SQLite's null order, said on PostgreSQL), staff included unless left out.
    expect(refs(await rank('recent'))).toEqual(['V-4', 'V-2', 'V-3', 'V-1', 'V-5']);
    expect(refs(await rank('recent', undefined, 50, true))).toEqual(['V-4']);
    expect(refs(await rank('recent', undefined, 50, false))).toEqual(['V-2', 'V-3', 'V-1', 'V-5']);

    const spend = await spendOf(db, [customer['V-3']!, customer['V-2']!, customer['V-5']!]);
    expect(spend.get(customer['V-3']!)).toEqual({ purchases: 2, spend: 50, spend_currency: 'INR' });
    expect(spend.get(customer['V-2']!)).toEqual({ purchases: 2, spend: 1000, spend_currency: 'INR' });
    expect(spend.has(customer['V-5']!)).toBe(false);

    // Search: the prepared recent list, staff only (SQLite's hinted index), by number, name and phone.
    expect(refs(await searchCustomers(db, companyId, undefined, 50))).toEqual(['V-4', 'V-2', 'V-3', 'V-1', 'V-5']);
    expect(refs(await searchCustomers(db, companyId, undefined, 2))).toEqual(['V-4', 'V-2']);
    expect(refs(await searchCustomers(db, companyId, '', 50, true))).toEqual(['V-4']);
    expect(refs(await searchCustomers(db, companyId, '', 50, false))).toEqual(['V-2', 'V-3', 'V-1', 'V-5']);
    expect(refs(await searchCustomers(db, companyId, 'V-3', 50))).toEqual(['V-3']);
    expect(refs(await searchCustomers(db, companyId, 'PERSON', 3))).toEqual(['V-4', 'V-2', 'V-3']);
    expect(refs(await searchCustomers(db, companyId, '00003', 50))).toEqual(['V-3']);
    expect((await searchCustomers(db, companyId, '100%', 50)).length).toBe(0);
  });

  it('purchases: newest first, then the later recorded first, with their shop', async () => {
    const { purchasesOf } = await import('../server/purchases/service.js');
    const at = iso(now - DAY);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const [i, id] of ids.entries()) {
      await db.insert(t.purchases).values({ id, companyId, customerId: customer['V-5']!, shopId: i === 2 ? null : shopId, amountMinor: i + 1, currency: 'INR', items: ['x'], createdAt: i === 2 ? iso(now - 2 * DAY) : at });
    }
    const list = await purchasesOf(db, customer['V-5']!, 10);
    expect(list.map((p) => p.purchase.id)).toEqual([ids[1], ids[0], ids[2]]);
    expect(list[0]!.shop).toEqual({ id: shopId, name: 'Powai', slug: 'powai' });
    expect(list[2]!.shop).toBeNull();
    expect(list[0]!.purchase).toMatchObject({ amountMinor: 2, items: ['x'], createdAt: at });
  });

  it('the audit log: filtered by customer through its detail, pruned past retention (server/audit/audit.test.ts)', async () => {
    const { listAudit, pruneAudit } = await import('../server/audit/query.js');
    const who = customer['V-1']!;
    const rows: (typeof t.auditLog.$inferInsert)[] = [
      { at: iso(now - 400 * DAY), companyId, action: 'customer.view', target: who },
      { at: iso(now - 400 * DAY), companyId, action: 'customer.view', target: 'other' },
      { at: iso(now - HOUR), companyId, action: 'customer.merge', target: 'other', detail: { merged_id: who } },
      { at: iso(now - HOUR), companyId, action: 'photo.link', target: null, detail: { faces: [{ face_image_id: 'f1', visitor_id: who }] } },
      { at: iso(now - HOUR), companyId, action: 'visit.view', target: null, detail: { visitor_id: who } },
      { at: iso(now - HOUR), companyId, action: 'photo.link', target: null, detail: { faces: 'not a list' } },
      { at: iso(now - HOUR), companyId, action: 'customer.view', actorEmail: 'Owner@Acme.test', target: 'other', detail: { visitor_id: 'other' } },
    ];
    await db.insert(t.auditLog).values(rows);
    const mine = await listAudit(db, { companyId, customerId: who, limit: 10 });
    expect(mine.rows.map((r) => r.action)).toEqual(['visit.view', 'photo.link', 'customer.merge', 'customer.view']);
    expect(mine.more).toBe(false);
    const page = await listAudit(db, { companyId, customerId: who, limit: 2 });
    expect(page).toMatchObject({ more: true, rows: [{ action: 'visit.view' }, { action: 'photo.link' }] });
    expect((await listAudit(db, { companyId, action: 'photo.', limit: 10 })).rows).toHaveLength(2);
    expect((await listAudit(db, { companyId, actor: 'owner@acme.TEST', limit: 10 })).rows.map((r) => r.detail)).toEqual([{ visitor_id: 'other' }]);
    expect((await listAudit(db, { companyId, from: iso(now - 2 * HOUR), limit: 10 })).rows).toHaveLength(5);

    expect(await pruneAudit(db, 365, now)).toBe(2);
    expect(await pruneAudit(db, 365, now)).toBe(0);
    expect((await listAudit(db, { companyId, limit: 10 })).rows).toHaveLength(5);
  });

  it('the visits feed: after a position, the tail, one shop, a range, staff left out; head and count', async () => {
    const feed = await import('../server/visits/service.js');
    const otherShop = randomUUID();
    await db.insert(t.shops).values({ id: otherShop, companyId, slug: 'andheri', name: 'Andheri', timezone: 'Asia/Kolkata', createdAt: iso(now), brokerUsername: 'acme.andheri' });
    expect(await feed.headSeq(db, companyId)).toBe(0);
    const add = async (shop: string, who: string | null, staff = false, on = db) =>
      (
        await on
          .insert(t.visits)
          .values({ visitId: randomUUID(), companyId, shopId: shop, cameraId: 'door', occurredAt: iso(now - 30 * 60_000), receivedAt: iso(now), customerId: who, staff, quality: 0.9, passedGate: true, isNewVisitor: who !== null })
          .returning({ seq: t.visits.seq })
      )[0]!.seq;
    const a = await add(shopId, customer['V-2']!);
    const b = await add(otherShop, null);
    await add(shopId, customer['V-4']!, true); // staff: never an arrival
    const d = await add(shopId, customer['V-3']!);
    const seqs = (rows: { seq: number }[]) => rows.map((r) => r.seq);
    expect(seqs(await feed.feedAfter(store, companyId, 0, 10))).toEqual([a, b, d]);
    expect(seqs(await feed.feedAfter(store, companyId, a, 1))).toEqual([b]);
    expect(seqs(await feed.feedAfter(store, companyId, 0, 10, shopId))).toEqual([a, d]);
    expect(seqs(await feed.feedTail(store, companyId, 2))).toEqual([b, d]);
    expect(seqs(await feed.feedTail(store, companyId, 5, otherShop))).toEqual([b]);
    expect(seqs(await feed.feedRange(store, [companyId], a, d))).toEqual([a, b, d]);
    const [row] = await feed.feedAfter(store, companyId, 0, 1);
    expect(row).toMatchObject({ seq: a, shopName: 'Powai', shopSlug: 'powai', shopTimezone: 'UTC', customerId: customer['V-2'], customerNumber: 2, isNewVisitor: true, occurredAt: iso(now - 30 * 60_000) });
    expect(await feed.headSeq(db, companyId)).toBeGreaterThanOrEqual(d);
    expect(await feed.shopVisitCount(db, shopId)).toBe(3);
    // Inside a transaction, the statements run on its connection (and see its writes).
    await store.tx(async () => {
      const e = await add(shopId, null, false, store.db);
      expect(seqs(await feed.feedAfter(store, companyId, d, 10))).toEqual([e]);
      throw Object.assign(new Error('roll back'), { rollBack: true });
    }).catch((err: { rollBack?: boolean }) => expect(err.rollBack).toBe(true));
    expect(seqs(await feed.feedAfter(store, companyId, d, 10))).toEqual([]);
    // Prepared once per store, not per transaction (finding 4 of docs/benchmarks.md, "What the runs found": drizzle's
    // prepared queries were built per `db`, a new object in every transaction): twenty transactions, each reading a
    // range it wrote, leave the range statement parsed at most once on each connection.
    for (let i = 0; i < 20; i++) {
      await store.tx(async () => {
        const e = await add(shopId, null, false, store.db);
        expect(seqs(await feed.feedRange(store, [companyId], e, e))).toEqual([e]);
      });
    }
    const clients = await Promise.all(Array.from({ length: 4 }, () => store.pool.connect()));
    try {
      const held = [];
      for (const c of clients) {
        const r = await c.query<{ n: string }>(`select count(*) as n from pg_prepared_statements where statement like '%v.seq >= $2 and v.seq <= $3%'`);
        held.push(Number(r.rows[0]!.n));
      }
      expect(held.every((n) => n <= 1)).toBe(true);
      expect(held.some((n) => n === 1)).toBe(true);
    } finally {
      for (const c of clients) c.release();
    }
    await db.delete(t.visits).where((await import('drizzle-orm')).eq(t.visits.companyId, companyId));
  });

  it('door counting, occupancy and alert conditions (server/cameras/counting.test.ts, server/crossings/crossings.test.ts)', async () => {
    // The day's crossings must lie before the last hour, which the counting health counts apart; in the first two hours
    // after midnight (UTC) today has no such time, so this test's clock is then the end of yesterday (everything below
    // is given this time explicitly).
    const now = Date.now() % DAY < 2 * HOUR ? Date.now() - (Date.now() % DAY) - 1 : Date.now();
    const { companyCounting, silentDoors } = await import('../server/cameras/counting.js');
    const { shopsToday, shopsWithLine, forgetDays } = await import('../server/crossings/service.js');
    const { conditions } = await import('../server/alerts/conditions.js');
    const { openAlertCount } = await import('../server/alerts/service.js');
    const { DEFAULT_RULES } = await import('../server/alerts/rules.js');
    const line = { a: { x: 0.1, y: 0.5 }, b: { x: 0.9, y: 0.5 }, inside: 'left' as const };
    const cam = (id: string, cameraId: string, tuning: Record<string, unknown>, extra: Partial<typeof t.cameras.$inferInsert> = {}) =>
      db.insert(t.cameras).values({ id, companyId, shopId, cameraId, label: cameraId, host: 'h', port: 554, path: '/', username: 'u', maxWidth: 1280, tuning, createdAt: iso(now - DAY), updatedAt: iso(now - 2 * HOUR), connected: true, ...extra } as typeof t.cameras.$inferInsert);
    const door = randomUUID();
    const side = randomUUID();
    await cam(door, 'door', { line });
    await cam(side, 'side', { line, role: 'both' });
    await cam(randomUUID(), 'faces', { line, role: 'faces' }); // a line, but it counts nobody
    await cam(randomUUID(), 'down', {}, { connected: false });
    const lonely = randomUUID();
    await db.insert(t.shops).values({ id: lonely, companyId, slug: 'no-line', name: 'No line', timezone: 'UTC', createdAt: iso(now), brokerUsername: 'acme.no-line' });
    expect([...(await shopsWithLine(db, [shopId, lonely]))]).toEqual([shopId]);

    const today = new Date(now).toISOString().slice(0, 10);
    const midnight = Date.parse(`${today}T00:00:00.000Z`);
    // Times inside today (UTC), before now.
    const at = (fraction: number) => iso(midnight + (now - midnight) * fraction);
    const cross = (camera: string | null, direction: 'in' | 'out', when: string) =>
      db.insert(t.crossings).values({ companyId, shopId, crossingId: randomUUID(), cameraId: camera === door ? 'door' : 'side', cameraUuid: camera, direction, occurredAt: when, receivedAt: iso(now) });
    await cross(door, 'out', at(0.1)); // an exit at 0: occupancy stays 0
    await cross(door, 'in', at(0.2));
    await cross(door, 'in', at(0.2)); // same instant: in arrival order
    await cross(side, 'out', at(0.3));
    await cross(door, 'in', iso(midnight - HOUR)); // yesterday: not today
    const day = async () => (await shopsToday(db, [{ id: shopId, timezone: 'UTC' }, { id: lonely, timezone: 'UTC' }], new Date(now)));
    let d = await day();
    expect(d.get(shopId)).toEqual({ occupancy: 1, entriesToday: 2, exitsToday: 2 });
    expect(d.get(lonely)).toEqual({ occupancy: null, entriesToday: null, exitsToday: null });
    // The walk continued: one more entry after the last one walked.
    await cross(door, 'in', at(0.5));
    expect((await day()).get(shopId)).toEqual({ occupancy: 2, entriesToday: 3, exitsToday: 2 });
    expect((await day()).get(shopId)).toEqual({ occupancy: 2, entriesToday: 3, exitsToday: 2 });
    // A late one, earlier than the last walked: the day is walked again from midnight (an exit at 0.05 changes nothing
    // since occupancy was 0 then; one at 0.25 takes one off).
    await cross(side, 'out', at(0.25));
    d = await day();
    expect(d.get(shopId)).toEqual({ occupancy: 1, entriesToday: 3, exitsToday: 3 });
    forgetDays(db);
    expect((await day()).get(shopId)).toEqual({ occupancy: 1, entriesToday: 3, exitsToday: 3 });

    // Counting health: the last hour's entries and exits per camera, the last crossing.
    await cross(door, 'in', iso(now - 10 * 60_000));
    await cross(door, 'out', iso(now - 5 * 60_000));
    const { health } = await companyCounting(db, config, companyId, undefined, now);
    expect(health.get(door)).toMatchObject({ role: 'door', state: 'counting', counted_last_hour: 2, entries_last_hour: 1, exits_last_hour: 1, last_crossing_at: iso(now - 5 * 60_000) });
    // The side camera counted nobody for an hour while the door camera did: not counting.
    expect(health.get(side)).toMatchObject({ role: 'both', state: 'not_counting', counted_last_hour: 0, last_crossing_at: at(0.3) > at(0.25) ? at(0.3) : at(0.25) });
    expect(health.size).toBe(2);
    expect((await silentDoors(db, config, companyId, now)).get(shopId)).toMatch(/^side counted nobody in the last hour/);

    // Alert conditions: over a limit of 0 (occupancy 1 now), a camera down, the door counting (a crossing 5 minutes ago).
    await db.update(t.shops).set({ occupancyLimit: 0 }).where((await import('drizzle-orm')).eq(t.shops.id, shopId));
    const rulesOf = async () => DEFAULT_RULES;
    const seen = await conditions(db, config, rulesOf, now);
    const of = (kind: string) => seen.filter((c) => c.shopId === shopId && c.kind === kind).map((c) => c.wrong);
    expect(of('shop_offline')).toEqual([false]);
    expect(of('occupancy_over_limit')).toEqual([true]);
    expect(of('camera_down').sort()).toEqual([false, false, false, true]);
    expect(of('door_not_counting')).toEqual([false]);
    // An hour on with no crossing, the door is quiet while open (doorQuiet's count).
    const later = now + 2 * HOUR;
    await db.update(t.shops).set({ lastHeartbeatAt: iso(later - 5_000) }).where((await import('drizzle-orm')).eq(t.shops.id, shopId));
    expect((await conditions(db, config, rulesOf, later)).filter((c) => c.shopId === shopId && c.kind === 'door_not_counting').map((c) => c.wrong)).toEqual([true]);
    await db.update(t.shops).set({ lastHeartbeatAt: iso(now - 5_000) }).where((await import('drizzle-orm')).eq(t.shops.id, shopId));

    expect(await openAlertCount(db, companyId)).toBe(0);
    await db.insert(t.alerts).values([
      { id: randomUUID(), companyId, shopId, kind: 'shop_offline', subject: 's1', message: 'm', raisedAt: iso(now) },
      { id: randomUUID(), companyId, shopId, kind: 'shop_offline', subject: 's2', message: 'm', raisedAt: iso(now), clearedAt: iso(now) },
    ]);
    expect(await openAlertCount(db, companyId)).toBe(1);

    // Two evaluations at once (two head-office processes): the over-limit alert is raised once, with its e-mail.
    const { evaluate } = await import('../server/alerts/service.js');
    const rounds = await Promise.all([evaluate(store, config, new Map(), now), evaluate(store, config, new Map(), now)]);
    expect(rounds.flat().map((x) => [x.event, x.alert.kind])).toEqual([['raised', 'occupancy_over_limit']]);
    expect(await openAlertCount(db, companyId)).toBe(2);
    const deliveries = await db.select().from(t.alertDeliveries);
    expect(deliveries.map((x) => [x.event, x.channel, x.target])).toEqual([['raised', 'email', 'owner@acme.test']]);
  });

  it('visit retention: old days counted into footfall_counts per 15-minute slot and deleted, staff left out (server/privacy/retention.test.ts)', async () => {
    const { ageVisits } = await import('../server/privacy/retention.js');
    const { eq, sql } = await import('drizzle-orm');
    const shop = randomUUID();
    await db.insert(t.shops).values({ id: shop, companyId, slug: 'old', name: 'Old', timezone: 'Asia/Kolkata', createdAt: iso(now - 100 * DAY), brokerUsername: 'acme.old' });
    const today = new Date(now).toISOString().slice(0, 10);
    // Kolkata is UTC+05:30: a local day starts at 18:30 UTC the day before.
    const localAt = (daysAgo: number, hh: number, mm: number) => Date.parse(`${today}T00:00:00.000Z`) - daysAgo * DAY + (hh * 60 + mm - 330) * 60_000;
    const p = customer['V-1']!;
    const q = customer['V-3']!;
    await db.update(t.customers).set({ firstSeenAt: iso(localAt(10, 10, 5)) }).where(eq(t.customers.id, p));
    const visit = (when: number, who: string | null, extra: Partial<typeof t.visits.$inferInsert> = {}) =>
      db.insert(t.visits).values({ visitId: randomUUID(), companyId, shopId: shop, cameraId: 'c', occurredAt: iso(when), receivedAt: iso(when), customerId: who, quality: 0.9, passedGate: true, dwellMs: 1000, ...extra });
    await visit(localAt(10, 10, 5), p, { dwellMs: 120_000 }); // P's first visit ever: fresh that day and hour
    await visit(localAt(10, 10, 20), p, { dwellMs: 60_000 }); // P again, same day and hour: known once
    await visit(localAt(10, 11, 40), null, { passedGate: false }); // unidentified, below the gate
    await visit(localAt(10, 12, 0), customer['V-4']!, { staff: true }); // staff: deleted, not counted
    await visit(localAt(9, 9, 50), q);
    await visit(localAt(1, 9, 50), q); // kept
    const crossing = (when: number, direction: 'in' | 'out') => db.insert(t.crossings).values({ companyId, shopId: shop, crossingId: randomUUID(), cameraId: 'door', direction, occurredAt: iso(when), receivedAt: iso(when) });
    await crossing(localAt(10, 10, 0), 'in');
    await crossing(localAt(10, 10, 14), 'in');
    await crossing(localAt(10, 16, 0), 'out');
    await crossing(localAt(1, 10, 0), 'in'); // kept

    const aged: { day: string; visits: number; crossings: number }[] = [];
    const deps = { store } as unknown as Deps;
    const done = await ageVisits(deps, companyId, 3, { now, stop: () => false, after: async (x) => void (x.shopId === shop && aged.push({ day: x.day, visits: x.visits, crossings: x.crossings })) });
    expect(done).toBe(true);
    const dayOf = (daysAgo: number) => new Date(Date.parse(`${today}T00:00:00.000Z`) - daysAgo * DAY).toISOString().slice(0, 10);
    expect(aged).toEqual([
      { day: dayOf(10), visits: 4, crossings: 3 },
      { day: dayOf(9), visits: 1, crossings: 0 },
    ]);
    expect((await db.select({ n: sql<number>`count(*)` }).from(t.visits).where(eq(t.visits.shopId, shop)))[0]!.n).toBe(1);
    expect((await db.select({ n: sql<number>`count(*)` }).from(t.crossings).where(eq(t.crossings.shopId, shop)))[0]!.n).toBe(1);
    const counts = await db.select().from(t.footfallCounts).where(eq(t.footfallCounts.shopId, shop)).orderBy(t.footfallCounts.slotAt);
    const slot = (when: number) => iso(Math.floor(when / (15 * 60_000)) * 15 * 60_000);
    expect(counts.map(({ shopId: _, ...c }) => c)).toEqual([
      { slotAt: slot(localAt(10, 10, 0)), day: dayOf(10), visits: 1, belowGate: 0, anon: 0, dwellMs: 120_000, known: 1, fresh: 1, knownHour: 1, freshHour: 1, entries: 2, exits: 0 },
      { slotAt: slot(localAt(10, 10, 20)), day: dayOf(10), visits: 1, belowGate: 0, anon: 0, dwellMs: 60_000, known: 0, fresh: 0, knownHour: 0, freshHour: 0, entries: 0, exits: 0 },
      { slotAt: slot(localAt(10, 11, 40)), day: dayOf(10), visits: 1, belowGate: 1, anon: 1, dwellMs: 1000, known: 0, fresh: 0, knownHour: 0, freshHour: 0, entries: 0, exits: 0 },
      { slotAt: slot(localAt(10, 16, 0)), day: dayOf(10), visits: 0, belowGate: 0, anon: 0, dwellMs: 0, known: 0, fresh: 0, knownHour: 0, freshHour: 0, entries: 0, exits: 1 },
      { slotAt: slot(localAt(9, 9, 50)), day: dayOf(9), visits: 1, belowGate: 0, anon: 0, dwellMs: 1000, known: 1, fresh: 0, knownHour: 1, freshHour: 0, entries: 0, exits: 0 },
    ]);
    // A second run finds nothing more to age.
    expect(await ageVisits(deps, companyId, 3, { now, stop: () => false, after: async (x) => void (x.shopId === shop && aged.push(x)) })).toBe(true);
    expect(aged).toHaveLength(2);
  });

  it('sessions: the prepared lookup by access token, rotation, revocation, use marked, ended ones pruned (server/auth/auth.test.ts)', async () => {
    const s = await import('../server/auth/sessions.js');
    const { eq } = await import('drizzle-orm');
    const user = (await db.select().from(t.users).where(eq(t.users.id, userId)))[0]!;
    const issued = await store.tx(async () => await s.createSession(store.db, config, user, 'phone'));
    const found = await s.findByAccessToken(db, issued.accessToken);
    expect(found?.session).toEqual(issued.session);
    expect(found?.user).toMatchObject({ id: userId, email: 'owner@acme.test', active: true });
    expect(found?.company).toMatchObject({ id: companyId, slug: 'acme', active: true });
    expect(await s.findByAccessToken(db, 'access_unknown')).toBeUndefined();
    // Inside a transaction too (a statement of the transaction's connection).
    expect((await store.tx(async () => await s.findByAccessToken(store.db, issued.accessToken)))?.session.id).toBe(issued.session.id);

    const rotated = await store.tx(async () => await s.rotate(store.db, config, issued.refreshToken, undefined));
    expect(rotated.ok).toBe(true);
    if (!rotated.ok) return;
    expect(await s.findByAccessToken(db, issued.accessToken)).toBeUndefined();
    expect((await s.findByAccessToken(db, rotated.issued.accessToken))?.session.id).toBe(issued.session.id);
    // The retired refresh token again: the whole session is revoked.
    expect(await store.tx(async () => await s.rotate(store.db, config, issued.refreshToken, undefined))).toEqual({ ok: false, reason: 'reused' });
    expect((await s.findByAccessToken(db, rotated.issued.accessToken))?.session.revokedReason).toBe('refresh_token_reused');

    // Two refreshes with one token at once (two processes): one rotates, the other finds it reused, as on SQLite.
    const twice = await s.createSession(db, config, user, 'watch');
    const both = await Promise.all([0, 1].map(() => store.tx(async () => await s.rotate(store.db, config, twice.refreshToken, undefined))));
    expect(both.map((r) => (r.ok ? 'ok' : r.reason)).sort()).toEqual(['ok', 'reused']);
    expect((await db.select().from(t.sessions).where(eq(t.sessions.id, twice.session.id)))[0]!.revokedReason).toBe('refresh_token_reused');
    await db.delete(t.sessions).where(eq(t.sessions.id, twice.session.id));

    const second = await s.createSession(db, config, user, 'laptop');
    const third = await s.createSession(db, config, user, 'tablet');
    expect((await s.listUserSessions(db, userId)).map((x) => x.device)).toEqual(['laptop', 'tablet']);
    expect(await s.revokeUserSessions(db, userId, 'signed_out_everywhere', third.session.id)).toBe(1);
    expect(await s.revokeSession(db, third.session.id, 'signed_out')).toBe(1);
    expect(await s.revokeSession(db, third.session.id, 'signed_out')).toBe(0);
    expect(await s.revokeCompanySessions(db, companyId, 'company_deactivated')).toBe(0);

    const old = { ...second.session, lastUsedAt: iso(Date.now() - 5 * 60_000) };
    await s.touchSession(db, old);
    const touched = (await db.select().from(t.sessions).where(eq(t.sessions.id, second.session.id)))[0]!;
    expect(Date.parse(touched.lastUsedAt)).toBeGreaterThan(Date.now() - 10_000);
    expect(old.lastUsedAt).toBe(touched.lastUsedAt);

    await db.update(t.sessions).set({ revokedAt: iso(Date.now() - 40 * DAY) }).where(eq(t.sessions.id, second.session.id));
    expect(await s.pruneEndedSessions(db, 30)).toBe(1);
    expect((await db.select().from(t.sessions).where(eq(t.sessions.userId, userId))).length).toBe(2);
  });

  it('metrics: the fleet gauges from one aggregate over the shops (server/metrics/metrics.test.ts)', async () => {
    const { Metrics } = await import('../server/metrics/metrics.js');
    const { eq } = await import('drizzle-orm');
    await db.update(t.shops).set({ agentTokenHash: 'h', camerasUp: 3, camerasTotal: 4, queued: 7, dropped: 2, lastHeartbeatAt: iso(Date.now() - 5_000) }).where(eq(t.shops.id, shopId));
    const metrics = new Metrics();
    const stats = { received: 0, stored: 0, duplicates: 0, invalid: 0, unknownShop: 0, suspended: 0, failed: 0, batches: 0, matched: 0, newCustomers: 0 };
    metrics.watch({ config, store, broker: { connectedClients: 1 }, arrivals: { listeners: 0 }, live: { totalViewers: 0 }, ingest: { stats } } as never);
    const { body } = await metrics.scrape();
    const shopCount = (await db.select().from(t.shops)).length;
    expect(body).toContain('footfall_shop_pcs{state="online"} 1\n');
    expect(body).toContain('footfall_shop_pcs{state="offline"} 0\n');
    expect(body).toContain(`footfall_shop_pcs{state="not_enrolled"} ${shopCount - 1}\n`);
    expect(body).toContain('footfall_shop_pc_cameras{state="up"} 3\n');
    expect(body).toContain('footfall_shop_pc_cameras{state="down"} 1\n');
    expect(body).toMatch(/^footfall_shop_pc_queued_visits 7$/m);
    expect(body).toMatch(/^footfall_shop_pc_dropped_visits 2$/m);
  });
});
