import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { writeAudit } from '../audit/service.js';
import { openDatabase } from './open.js';
import { ReadCache, dbVersion, noteUnreadWrite } from './read-cache.js';
import { sqliteOnly } from '../../test/support/stores.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-read-cache-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe.skipIf(sqliteOnly('server/db/read-cache.test.ts', 'the read cache keyed by PRAGMA data_version'))('read cache versions', () => {
  const store = openDatabase(path.join(dir, 'footfall.db'));
  const other = new Database(path.join(dir, 'footfall.db'));
  other.pragma('busy_timeout = 5000');

  it('an entry holds while nothing is written, and goes on any write of this connection or another', () => {
    const cache = new ReadCache<string>(4);
    const v0 = dbVersion(store.db);
    cache.set('k', v0, 'answer');
    expect(cache.get('k', dbVersion(store.db))).toBe('answer');

    other.prepare("insert into audit_log (at, action) values ('2026-01-01T00:00:00Z', 'by another connection')").run();
    expect(cache.get('k', dbVersion(store.db))).toBeUndefined();

    cache.set('k', dbVersion(store.db), 'again');
    store.sqlite.prepare("insert into audit_log (at, action) values ('2026-01-01T00:00:00Z', 'raw, not noted')").run();
    expect(cache.get('k', dbVersion(store.db))).toBeUndefined();
  });

  it('writes noted as unread (audit rows, session touches) keep the entries', async () => {
    const cache = new ReadCache<string>(4);
    cache.set('k', dbVersion(store.db), 'answer');
    await writeAudit(store, { action: 'photo.link', detail: { faces: [] } });
    expect(cache.get('k', dbVersion(store.db))).toBe('answer');
    store.sqlite.prepare("update audit_log set target = 'x' where id = 1").run();
    noteUnreadWrite(store.db, 1);
    expect(cache.get('k', dbVersion(store.db))).toBe('answer');
  });

  it('keeps at most `max` entries, the oldest going first', () => {
    const cache = new ReadCache<number>(2);
    const v = dbVersion(store.db);
    cache.set('a', v, 1);
    cache.set('b', v, 2);
    cache.set('c', v, 3);
    expect([cache.get('a', v), cache.get('b', v), cache.get('c', v)]).toEqual([undefined, 2, 3]);
  });
});
