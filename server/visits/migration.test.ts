import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../db/open.js';
import { packageRoot } from '../paths.js';
import { Stays } from './stays.js';

/**
 * Migration 0008 on a database written before stays: the visits stored then become stays of no length, their ids
 * are sightings (a re-send is still a duplicate), the report indexes are rebuilt with staff and dwell, and a new
 * sighting of the same customer extends an old visit.
 */
describe('migration 0008 (stays and staff) on an older database', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-migration-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps every visit, backfills last_seen_at and sightings, and rebuilds the report indexes', async () => {
    // The migrations as they were before 0008.
    const source = path.join(packageRoot(), 'server/db/migrations');
    const older = path.join(dir, 'migrations');
    fs.mkdirSync(path.join(older, 'meta'), { recursive: true });
    const journal = JSON.parse(fs.readFileSync(path.join(source, 'meta/_journal.json'), 'utf8')) as { entries: { idx: number; tag: string }[] };
    const before = journal.entries.filter((e) => e.idx < 8);
    for (const e of before) fs.copyFileSync(path.join(source, `${e.tag}.sql`), path.join(older, `${e.tag}.sql`));
    fs.writeFileSync(path.join(older, 'meta/_journal.json'), JSON.stringify({ ...journal, entries: before }));
    const file = path.join(dir, 'footfall.db');
    const raw = new Database(file);
    migrate(drizzle(raw), { migrationsFolder: older });
    const now = '2026-01-10T09:00:00.000Z';
    raw.prepare("insert into companies (id, slug, name, active, created_at) values ('co', 'co', 'Co', 1, ?)").run(now);
    raw.prepare("insert into shops (id, company_id, slug, name, timezone, broker_username, created_at) values ('sh', 'co', 'sh', 'Shop', 'Asia/Kolkata', 'co.sh', ?)").run(now);
    raw.prepare("insert into customers (id, company_id, number, recognition_model, created_at, visit_count, first_seen_at, last_seen_at) values ('cu', 'co', 1, 'm', ?, 1, ?, ?)").run(now, now, now);
    raw.prepare(
      `insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, received_at, customer_id, is_new_visitor, quality, passed_gate)
       values ('old-1', 'co', 'sh', 'door', ?, ?, 'cu', 1, 0.9, 1), ('old-2', 'co', 'sh', 'door', ?, ?, null, 0, 0.2, 0)`,
    ).run(now, now, '2026-01-10T09:05:00.000Z', now);
    raw.close();

    const store = openDatabase(file);
    try {
      const s = store.sqlite;
      expect(s.prepare('select visit_id, last_seen_at, dwell_ms, staff from visits order by seq').all()).toEqual([
        { visit_id: 'old-1', last_seen_at: now, dwell_ms: 0, staff: 0 },
        { visit_id: 'old-2', last_seen_at: '2026-01-10T09:05:00.000Z', dwell_ms: 0, staff: 0 },
      ]);
      expect(s.prepare('select visit_id from sightings order by visit_id').all()).toEqual([{ visit_id: 'old-1' }, { visit_id: 'old-2' }]);
      expect(s.prepare('select staff from customers').get()).toEqual({ staff: 0 });
      const columns = (index: string) => (s.prepare(`pragma index_info(${index})`).all() as { name: string }[]).map((c) => c.name);
      expect(columns('visits_shop_time_idx')).toEqual(['shop_id', 'occurred_at', 'customer_id', 'passed_gate', 'staff', 'dwell_ms']);
      expect(columns('visits_stay_idx')).toEqual(['customer_id', 'shop_id', 'last_seen_at']);
      expect((s.prepare("select sql from sqlite_master where name = 'customers_company_first_idx'").get() as { sql: string }).sql).toMatch(/staff = 0/);

      // A sighting of the same customer ten minutes later extends the visit stored before stays.
      const stays = new Stays(store, 1800_000);
      const r = await store.tx(async () =>
        stays.add({
          visitId: 'new-1',
          companyId: 'co',
          shopId: 'sh',
          cameraId: 'till',
          start: '2026-01-10T09:10:00.000Z',
          end: '2026-01-10T09:12:00.000Z',
          receivedAt: now,
          customerId: 'cu',
          isNewVisitor: false,
          similarity: 0.8,
          quality: 0.9,
          passedGate: true,
          recognitionModel: 'm',
          gender: null,
          age: null,
          emotion: null,
          faceImageId: null,
          trackId: null,
          staff: false,
        }),
      );
      expect(r.inserted).toBeUndefined();
      expect(s.prepare("select occurred_at, last_seen_at, dwell_ms from visits where visit_id = 'old-1'").get()).toEqual({
        occurred_at: now,
        last_seen_at: '2026-01-10T09:12:00.000Z',
        dwell_ms: 12 * 60_000,
      });
    } finally {
      store.close();
    }
  });
});
