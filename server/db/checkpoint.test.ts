import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Config } from '../config.js';
import { checkpointEvery, RESTART_FRAMES, WRITER_BACKSTOP_FRAMES } from './checkpoint.js';
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

  /** A new database whose WAL holds one burst of 400 pages from a writer that leaves checkpoints to others, and another connection. */
  const burst = () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    const writer = openDatabase(file, { autoCheckpoint: false });
    const other = openDatabase(file);
    opened.push(writer, other);
    writer.sqlite.exec('create table filler (id integer primary key, blob blob not null)');
    const insert = writer.sqlite.prepare('insert into filler (blob) values (?)');
    writer.sqlite.transaction(() => {
      for (let i = 0; i < 400; i++) insert.run(Buffer.alloc(4_000, i % 251));
    })();
    return { file, other };
  };

  it('a connection opened without automatic checkpoints leaves them to the one running checkpointEvery (up to its backstop)', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    const main = openDatabase(file, { autoCheckpoint: false });
    opened.push(main);
    expect(main.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(WRITER_BACKSTOP_FRAMES);
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
    // 400 pages: past a quarter of a 1,200-frame TRUNCATE size, then a burst that stops.
    const { other } = burst();
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

  it('a WAL that reached its TRUNCATE size is started over at the next tick', async () => {
    const { file, other } = burst();
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(400 * 4_096);
    const stop = checkpointEvery(other.sqlite, 50, { onError: (err) => expect.fail(String(err)), restartFrames: 300 });
    try {
      const until = Date.now() + 10_000;
      while (fs.statSync(`${file}-wal`).size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    } finally {
      stop();
    }
    expect(fs.statSync(`${file}-wal`).size).toBe(0);
    expect(fs.statSync(file).size).toBeGreaterThan(400 * 4_000);
    expect(other.sqlite.prepare('select count(*) from filler').pluck().get()).toBe(400);
  });

  it('under a writer that never pauses and a reader between its commits, the WAL stays bounded', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-checkpoint-'));
    const file = path.join(dir, 'footfall.db');
    const restartFrames = 200;
    // The ingest thread's connection, with the same ratio of backstop to TRUNCATE size as head office's.
    const writer = openDatabase(file, { autoCheckpoint: (restartFrames * WRITER_BACKSTOP_FRAMES) / RESTART_FRAMES });
    const reader = openDatabase(file, { autoCheckpoint: false });
    opened.push(writer, reader);
    writer.sqlite.exec('create table filler (id integer primary key, blob blob not null)');
    const frameBytes = 24 + 4_096; // a WAL frame: its header and one page
    const checkpointer = startCheckpointer({ dataDir: dir, FOOTFALL_LOG_LEVEL: 'silent' } as Config, pino({ level: 'silent' }), { restartFrames });
    const insert = writer.sqlite.prepare('insert into filler (blob) values (?)');
    const newest = reader.sqlite.prepare('select max(id) from filler').pluck();
    let rows = 0;
    let largest = 0;
    try {
      // Three pages a commit with no pause longer than a turn of the event loop (tens of MB a second: faster than the
      // checkpoint thread copies, and no quiet moment in which SQLite starts the WAL over by itself), a read between
      // commits, until forty times restartFrames pages (a page a row) are written.
      const until = Date.now() + 30_000;
      while (Date.now() < until && rows <= 40 * restartFrames) {
        writer.sqlite.transaction(() => {
          for (let i = 0; i < 3; i++) insert.run(Buffer.alloc(4_000, rows++ % 251));
        })();
        expect(newest.get()).toBe(rows);
        if (fs.existsSync(`${file}-wal`)) largest = Math.max(largest, fs.statSync(`${file}-wal`).size);
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      await checkpointer.stop();
    }
    // Without the writer's backstop the WAL took all of them (13,846 frames measured); with it, twice restartFrames plus
    // what is committed while a checkpoint of the thread's holds the writer's off: ~405 frames here, up to 1,100 with
    // two busy loops on the two cores. Half of what was written is far from either.
    const seen = `largest WAL ${largest} bytes (${Math.round(largest / frameBytes)} frames)`;
    expect(rows, seen).toBeGreaterThan(40 * restartFrames);
    expect(largest, seen).toBeLessThan(20 * restartFrames * frameBytes);
    expect(newest.get()).toBe(rows);
  });
});
