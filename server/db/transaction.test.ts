import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Store, sqliteOf } from './open.js';
import { changes, one, returned } from './query.js';
import { CrossedTurnError, readTransactionOf } from './transaction.js';
import { companies } from './tables.js';
import { sqliteOnly } from '../../test/support/stores.js';

/** Asynchronous transactions on the one SQLite connection (server/db/transaction.ts), on a real database file. */
describe.skipIf(sqliteOnly('server/db/transaction.test.ts', 'store.tx on one SQLite connection'))('store.tx on SQLite', () => {
  let dir = '';
  let store: Store;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-tx-'));
    store = openDatabase(path.join(dir, 'footfall.db'));
  });
  afterEach(() => {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const company = (slug: string) => ({ id: `id-${slug}`, slug, name: slug, createdAt: new Date().toISOString() });
  /** Runs f from an immediate (the event loop's check phase). */
  const turn = <T>(f: () => Promise<T>) => new Promise<T>((resolve, reject) => setImmediate(() => f().then(resolve, reject)));
  const slugs = async () => (await store.db.select({ slug: companies.slug }).from(companies).orderBy(companies.slug)).map((r) => r.slug);

  it('commits what the body wrote and hands back its value; the helpers read the answers', async () => {
    const row = await store.tx(async () => await returned(store.db.insert(companies).values(company('a')).returning()));
    expect(row.slug).toBe('a');
    expect(sqliteOf(store).inTransaction).toBe(false);
    expect((await one(store.db.select().from(companies).where(eq(companies.slug, 'a'))))?.id).toBe('id-a');
    expect(await one(store.db.select().from(companies).where(eq(companies.slug, 'none')))).toBeUndefined();
    expect(changes(await store.db.update(companies).set({ name: 'A' }).where(eq(companies.slug, 'a')))).toBe(1);
    expect(changes({ rowCount: 3 })).toBe(3);
    expect(changes({ rowCount: null })).toBe(0);
    await expect(returned(store.db.update(companies).set({ name: 'B' }).where(eq(companies.slug, 'none')).returning())).rejects.toThrow('no row');
  });

  it('a throw rolls back everything the body wrote', async () => {
    await expect(
      store.tx(async () => {
        await store.db.insert(companies).values(company('a'));
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await slugs()).toEqual([]);
    expect(sqliteOf(store).inTransaction).toBe(false);
  });

  it('a transaction inside another is a savepoint: its throw undoes only its own writes', async () => {
    await store.tx(async () => {
      await store.db.insert(companies).values(company('outer'));
      await expect(
        store.tx(async () => {
          await store.db.insert(companies).values(company('inner'));
          throw new Error('inner refused');
        }),
      ).rejects.toThrow('inner refused');
      await store.tx(async () => {
        await store.db.insert(companies).values(company('inner-kept'));
      });
    });
    expect(await slugs()).toEqual(['inner-kept', 'outer']);
  });

  it('transactions of different turns are independent; one started while another is open joins it as a savepoint', async () => {
    const run = (slug: string, fail = false) =>
      store.tx(async () => {
        await store.db.insert(companies).values(company(slug));
        if (fail) throw new Error(`${slug} refused`);
      });
    const results = await Promise.allSettled([turn(() => run('a')), turn(() => run('b', true)), turn(() => run('c'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await slugs()).toEqual(['a', 'c']);
    // In one chain, side by side: they cannot be told from nested ones when they start, so they are refused when
    // the first ends, and neither is kept.
    const beside = await Promise.allSettled([run('d'), run('e')]);
    expect(beside.map((r) => (r.status === 'rejected' ? (r.reason as Error).constructor.name : r.status))).toEqual(['BesideError', 'BesideError']);
    expect(await slugs()).toEqual(['a', 'c']);
    expect(sqliteOf(store).inTransaction).toBe(false);
    await run('f');
    expect(await slugs()).toEqual(['a', 'c', 'f']);
  });

  it('a body that awaits something other than the database is refused and rolled back, every time', async () => {
    for (const wait of [() => new Promise((r) => setTimeout(r, 1)), () => fs.promises.readFile(path.join(dir, 'footfall.db')), () => new Promise((r) => setImmediate(r))]) {
      await expect(
        store.tx(async () => {
          await store.db.insert(companies).values(company('late'));
          await wait();
          await store.db.update(companies).set({ name: 'later' });
        }),
      ).rejects.toBeInstanceOf(CrossedTurnError);
      expect(sqliteOf(store).inTransaction).toBe(false);
      expect(await slugs()).toEqual([]);
    }
    // Started from an immediate (the loop's check phase), with the body's timer due before the loop comes round:
    // the next loop runs its timers before its immediates, and the body's timer must not resume it unnoticed.
    const fromImmediate = turn(() =>
      store.tx(async () => {
        await store.db.insert(companies).values(company('late'));
        const due = new Promise((r) => setTimeout(r, 1));
        const until = performance.now() + 3;
        while (performance.now() < until); // the timer is due before this turn ends
        await due;
        await store.db.update(companies).set({ name: 'later' });
      }),
    );
    await expect(fromImmediate).rejects.toBeInstanceOf(CrossedTurnError);
    expect(sqliteOf(store).inTransaction).toBe(false);
    expect(await slugs()).toEqual([]);
    // The connection is usable after a refusal.
    await store.tx(async () => void (await store.db.insert(companies).values(company('after'))));
    expect(await slugs()).toEqual(['after']);
  });

  it('a read transaction sees one snapshot while another connection commits', async () => {
    await store.db.insert(companies).values(company('a'));
    const other = openDatabase(path.join(dir, 'footfall.db'));
    try {
      const seen = await readTransactionOf(store.db as never)(async () => {
        const first = await slugs();
        other.sqlite.prepare("insert into companies (id, slug, name, active, created_at) values ('id-b', 'b', 'b', 1, '2026-01-01T00:00:00.000Z')").run();
        return [first, await slugs()];
      });
      expect(seen).toEqual([['a'], ['a']]);
      expect(await slugs()).toEqual(['a', 'b']);
    } finally {
      other.close();
    }
  });
});
