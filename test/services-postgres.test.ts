import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../server/db/pg/store.js';
import type * as Tables from '../server/db/tables.js';
import type * as ShopsService from '../server/shops/service.js';
import { startPostgres, postgresMissing, type TestPostgres } from './support/postgres.js';
import { noteSkip } from './support/skips.js';

/**
 * The services head office writes once run on PostgreSQL too (issue 27, docs/scale-out.md): the shops service, as the
 * routes call it, on a real PostgreSQL with the store's transactions. The tables are chosen once per process
 * (server/db/tables.ts), so this file sets FOOTFALL_DATABASE_URL before it imports any of head office, and runs in
 * a process of its own (the isolated project).
 */
const FILE = 'test/services-postgres.test.ts';
const missing = postgresMissing();
if (missing) noteSkip(FILE, missing);

describe.skipIf(missing)('the shops service on PostgreSQL', () => {
  let cluster: TestPostgres;
  let store: PostgresStore;
  // Type-only imports above: the modules themselves are loaded after FOOTFALL_DATABASE_URL is set.
  let shops: typeof ShopsService;
  let tables: typeof Tables;

  beforeAll(async () => {
    cluster = await startPostgres();
    process.env.FOOTFALL_DATABASE_URL = await cluster.createDatabase();
    const { openPostgresStore } = await import('../server/db/pg/store.js');
    store = await openPostgresStore(process.env.FOOTFALL_DATABASE_URL);
    shops = await import('../server/shops/service.js');
    tables = await import('../server/db/tables.js');
  }, 60_000);

  afterAll(async () => {
    delete process.env.FOOTFALL_DATABASE_URL;
    await store?.close();
    await cluster?.close();
  });

  const companyId = '00000000-0000-4000-8000-000000000001';

  it('picks the PostgreSQL tables, and answers as on SQLite: rows, times as ISO strings, counts as numbers, conflicts', async () => {
    const { is } = await import('drizzle-orm');
    const { PgTable } = await import('drizzle-orm/pg-core');
    expect(is(tables.shops, PgTable)).toBe(true);

    const created = new Date().toISOString();
    await store.db.insert(tables.companies).values({ id: companyId, slug: 'acme', name: 'Acme', createdAt: created });
    const input = { companyId, companySlug: 'acme', name: 'Powai', timezone: 'Asia/Kolkata', sealedSecret: 'sealed' };
    const powai = await store.tx(async () => await shops.createShop(store.db, { ...input, slug: await shops.freeShopSlug(store.db, companyId, 'powai', 40) }));
    expect(powai).toMatchObject({ companyId, slug: 'powai', name: 'Powai', brokerUsername: 'acme.powai', enrolledAt: null, region: null });
    expect(powai.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The taken slug gets -2, as on SQLite; creating it twice is the service's 409.
    expect(await shops.freeShopSlug(store.db, companyId, 'powai', 40)).toBe('powai-2');
    await expect(store.tx(async () => await shops.createShop(store.db, { ...input, slug: 'powai' }))).rejects.toMatchObject({ status: 409 });
    await store.tx(async () => void (await shops.createShop(store.db, { ...input, name: 'Andheri', slug: 'andheri' })));

    expect((await shops.listShops(store.db, companyId)).map((s) => s.slug)).toEqual(['andheri', 'powai']);
    expect(await shops.getShop(store.db, powai.id)).toEqual(powai);
    expect(await shops.shopCounts(store.db)).toEqual(new Map([[companyId, 2]]));
    expect(await shops.companySlugOf(store.db, companyId)).toBe('acme');
    expect(await shops.shopBlockers(store.db, powai.id)).toEqual([]);
    const updated = await shops.updateShop(store.db, powai.id, { region: 'West', openingHours: null, occupancyLimit: 40 });
    expect(updated).toMatchObject({ region: 'West', occupancyLimit: 40 });
    expect(await shops.listRegions(store.db, companyId)).toEqual(['West']);
  });

  it('enrolment codes: stored as a keyed hash, spent once inside a transaction, times compared as on SQLite', async () => {
    const { loadKeys } = await import('../server/crypto/keys.js');
    const os = await import('node:os');
    const fs = await import('node:fs');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-pg-keys-'));
    try {
      const keys = loadKeys({ dataDir: dir } as never);
      const shop = (await shops.listShops(store.db, companyId))[0]!;
      const { code } = await store.tx(async () => await shops.createEnrolmentCode(store.db, keys, { shop, label: 'till', days: 7, requestedBy: 'u1', requestedByEmail: 'owner@acme.test' }));
      const spent = await store.tx(async () => await shops.spendEnrolmentCode(store.db, keys, code.toLowerCase()));
      expect(spent?.shop.id).toBe(shop.id);
      expect(spent?.code.usedAt).toBeNull(); // the row as read; the update marks it used
      expect(await store.tx(async () => await shops.spendEnrolmentCode(store.db, keys, code))).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('transactions: a throw rolls back the body, a nested one is a savepoint, bodies may await other work', async () => {
    const count = async () => (await shops.listShops(store.db, companyId)).length;
    const before = await count();
    const input = { companyId, companySlug: 'acme', timezone: 'UTC', sealedSecret: 's' };
    await expect(
      store.tx(async () => {
        await shops.createShop(store.db, { ...input, name: 'Gone', slug: 'gone' });
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await count()).toBe(before);
    await store.tx(async () => {
      await shops.createShop(store.db, { ...input, name: 'Kept', slug: 'kept' });
      await expect(
        store.tx(async () => {
          await shops.createShop(store.db, { ...input, name: 'Inner', slug: 'inner' });
          throw new Error('inner refused');
        }),
      ).rejects.toThrow('inner refused');
      // Unlike SQLite's rule, PostgreSQL's transaction holds its own connection: other work may be awaited.
      await new Promise((r) => setTimeout(r, 5));
    });
    expect((await shops.listShops(store.db, companyId)).map((s) => s.slug)).toEqual(['andheri', 'kept', 'powai']);
    expect(await shops.shopBlockers(store.db, (await shops.listShops(store.db, companyId))[1]!.id)).toEqual([]);
  });
});
