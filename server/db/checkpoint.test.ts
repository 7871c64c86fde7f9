import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Config } from '../config.js';
import { checkpointEvery } from './checkpoint.js';
import { startCheckpointer } from './checkpointer.js';
import { openDatabase, type Store } from './open.js';
import { sqliteOnly } from '../../test/support/stores.js';

describe.skipIf(sqliteOnly('server/db/checkpoint.test.ts', 'WAL checkpoints of the SQLite file'))('WAL checkpoints off the writing connection', () => {
  const opened: Store[] = [];
  let dir = '';
  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a connection opened without automatic checkpoints leaves them to the one running checkpointEvery', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    const main = openDatabase(file, { autoCheckpoint: false });
    opened.push(main);
    expect(main.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    main.sqlite.exec('create table filler (id integer primary key, blob blob not null)');
    const dbBytes = fs.statSync(file).size;
    const insert = main.sqlite.prepare('insert into filler (blob) values (?)');
    // About 2,500 pages: past the 1,000 at which SQLite would otherwise checkpoint inside one of these commits.
    for (let i = 0; i < 2_500; i++) insert.run(Buffer.alloc(4_000, i % 251));
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(2_500 * 4_000);
    expect(fs.statSync(file).size).toBe(dbBytes); // nothing copied into the database file by the writer

    const other = openDatabase(file);
    opened.push(other);
    const errors: unknown[] = [];
    const stop = checkpointEvery(other.sqlite, 20, { onError: (err) => errors.push(err) });
    try {
      const until = Date.now() + 10_000;
      while (fs.statSync(file).size < 2_500 * 4_000 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    } finally {
      stop();
    }
    expect(errors).toEqual([]);
    expect(fs.statSync(file).size).toBeGreaterThan(2_500 * 4_000);
    expect(main.sqlite.prepare('select count(*) from filler').pluck().get()).toBe(2_500);
  });

  it("head office's checkpoint thread copies the WAL into the database file; the writer never does", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    // The ingest thread's and the main thread's connections are opened this way (server/visits/ingest-worker.ts).
    const writer = openDatabase(file, { autoCheckpoint: false });
    opened.push(writer);
    writer.sqlite.exec('create table filler (id integer primary key, blob blob not null)');
    const checkpointer = startCheckpointer({ dataDir: dir, FOOTFALL_LOG_LEVEL: 'silent' } as Config, pino({ level: 'silent' }));
    try {
      const insert = writer.sqlite.prepare('insert into filler (blob) values (?)');
      for (let i = 0; i < 2_500; i++) insert.run(Buffer.alloc(4_000, i % 251));
      const until = Date.now() + 10_000;
      while (fs.statSync(file).size < 2_500 * 4_000 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(fs.statSync(file).size).toBeGreaterThan(2_500 * 4_000);
      // And it keeps doing so while head office runs.
      for (let i = 0; i < 2_500; i++) insert.run(Buffer.alloc(4_000, i % 251));
      while (fs.statSync(file).size < 5_000 * 4_000 && Date.now() < until + 10_000) await new Promise((r) => setTimeout(r, 20));
      expect(fs.statSync(file).size).toBeGreaterThan(5_000 * 4_000);
    } finally {
      await checkpointer.stop();
    }
    expect(writer.sqlite.prepare('select count(*) from filler').pluck().get()).toBe(5_000);
  });

  it('a WAL past a quarter of its TRUNCATE size is checkpointed every 10 ms after it grew, and at the usual pace once nothing is written', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    const writer = openDatabase(file, { autoCheckpoint: false });
    const other = openDatabase(file);
    opened.push(writer, other);
    writer.sqlite.exec('create table filler (id integer primary key, blob blob not null)');
    const insert = writer.sqlite.prepare('insert into filler (blob) values (?)');
    // 400 pages: past a quarter of a 1,200-frame TRUNCATE size, then a burst that stops.
    writer.sqlite.transaction(() => {
      for (let i = 0; i < 400; i++) insert.run(Buffer.alloc(4_000, i % 251));
    })();
    // Every PASSIVE checkpoint the loop runs, timed (the real connection, its calls counted on the way through).
    const at: number[] = [];
    const counted = new Proxy(other.sqlite, {
      get(target, prop, receiver) {
        if (prop !== 'pragma') return Reflect.get(target, prop, receiver);
        return (source: string, options?: object) => {
          if (source.startsWith('wal_checkpoint(PASSIVE)')) at.push(performance.now());
          return target.pragma(source, options);
        };
      },
    });
    const t0 = performance.now();
    const stop = checkpointEvery(counted, 250, { onError: (err) => expect.fail(String(err)), restartFrames: 1_200 });
    try {
      await new Promise((r) => setTimeout(r, 3_000));
    } finally {
      stop();
    }
    const within = (from: number, to: number) => at.filter((t) => t - t0 >= from && t - t0 < to).length;
    // Hurried while the WAL had just grown (every 10 ms: ~75 in the 0.75 s after the first tick, fewer on a loaded box) ...
    expect(within(250, 1_000)).toBeGreaterThanOrEqual(10);
    // ... and back to every 250 ms a second after it last grew: a WAL nobody writes is not checkpointed 100 times a second.
    expect(within(2_000, 3_000)).toBeLessThanOrEqual(5);
    // Nothing was lost meanwhile.
    expect(other.sqlite.prepare('select count(*) from filler').pluck().get()).toBe(400);
  });

  it('under a steady writer and readers, the checkpoint thread starts the WAL over once it reaches its size: it stays bounded', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    const writer = openDatabase(file, { autoCheckpoint: false });
    const reader = openDatabase(file, { autoCheckpoint: false });
    opened.push(writer, reader);
    writer.sqlite.exec('create table filler (id integer primary key, blob blob not null)');
    const restartFrames = 200;
    const checkpointer = startCheckpointer({ dataDir: dir, FOOTFALL_LOG_LEVEL: 'silent' } as Config, pino({ level: 'silent' }), { restartFrames });
    const insert = writer.sqlite.prepare('insert into filler (blob) values (?)');
    const count = reader.sqlite.prepare('select count(*) from filler').pluck();
    let rows0 = 0;
    let rows = 0;
    let largest = 0;
    let emptied = 0;
    let last = 0;
    try {
      // A commit of a few pages at a time with no pause longer than a turn of the event loop (no quiet moment in which
      // a PASSIVE checkpoint alone would let SQLite start the WAL over), and a reader between commits: until the
      // checkpoint thread (which takes a moment to start) has emptied the WAL once, then until ten times restartFrames
      // more pages are written (or 20 s).
      const until = Date.now() + 20_000;
      let measuring = false;
      while (Date.now() < until && !(measuring && (rows - rows0) * 4_000 > 10 * restartFrames * 4_096)) {
        writer.sqlite.transaction(() => {
          for (let i = 0; i < 3; i++) insert.run(Buffer.alloc(4_000, rows++ % 251));
        })();
        expect(count.get()).toBe(rows);
        const size = fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0;
        if (size < last) {
          emptied++;
          if (!measuring) {
            measuring = true;
            rows0 = rows;
          }
        }
        last = size;
        if (measuring) largest = Math.max(largest, size);
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      await checkpointer.stop();
    }
    // Meanwhile the WAL never held many more than restartFrames (4 KiB each, plus what is committed during one 250-ms
    // tick), and was emptied again and again.
    expect((rows - rows0) * 4_000, `largest WAL ${largest} bytes, emptied ${emptied} times`).toBeGreaterThan(10 * restartFrames * 4_096);
    expect(largest).toBeLessThan(5 * restartFrames * 4_096);
    expect(emptied).toBeGreaterThanOrEqual(3);
    expect(count.get()).toBe(rows);
  });
});
