/**
 * The durable queue and its publisher against a real aedes broker over TCP with the real mqtt client: nothing is
 * lost when the broker goes away mid-stream, overflow is counted, and the file survives a restart.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Aedes } from 'aedes';
import Database from 'better-sqlite3';
import { connect, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Publisher } from './publisher.js';
import { DurableQueue } from './queue.js';

const TOPIC = 'ff/acme/andheri/up/visit';

let dir: string;
const cleanups: (() => Promise<void> | void)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'footfall-queue-'));
});

afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
  await rm(dir, { recursive: true, force: true });
});

/** Every message a broker accepted, in arrival order, across broker restarts. */
type Received = number[];

interface TestBroker {
  port: number;
  /** Closes the listener, cuts every connection, closes aedes. */
  kill(): Promise<void>;
}

/**
 * A real aedes broker on 127.0.0.1. Messages are recorded in authorizePublish, which aedes runs before it sends the
 * PUBACK: a message the client saw acknowledged is certainly recorded.
 */
interface BrokerOptions {
  port?: number;
  /** Called after each message is recorded, before it is acknowledged (a test may kill the broker there). */
  onRecord?: (broker: TestBroker) => void;
  /** false: record messages and never acknowledge them. */
  ack?: boolean;
}

async function startBroker(received: Received, { port = 0, onRecord, ack = true }: BrokerOptions = {}): Promise<TestBroker> {
  const aedes = await Aedes.createBroker();
  aedes.authorizePublish = (_client, packet, done) => {
    received.push(JSON.parse(packet.payload.toString()).n);
    onRecord?.(broker);
    if (ack && !killed) done(null); // killed right here: recorded, but the PUBACK never leaves
  };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    aedes.handle(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  let killed = false;
  const broker: TestBroker = {
    port: (server.address() as net.AddressInfo).port,
    async kill() {
      if (killed) return;
      killed = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
    },
  };
  cleanups.push(() => broker.kill());
  return broker;
}

function client(port: number): MqttClient {
  const c = connect({ host: '127.0.0.1', port, clientId: 'shop-pc-andheri', clean: true, reconnectPeriod: 100, connectTimeout: 2000, keepalive: 30 });
  c.on('error', () => {}); // connection refused while the broker is down: retried by reconnectPeriod
  cleanups.push(() => new Promise<void>((resolve) => c.end(true, {}, () => resolve())));
  return c;
}

function openQueue(maxItems = 10_000, log?: pino.Logger): DurableQueue {
  const q = new DurableQueue({ file: path.join(dir, 'data', 'queue.sqlite'), maxItems, ...(log ? { log } : {}) });
  cleanups.push(() => q.close());
  return q;
}

const payload = (n: number) => JSON.stringify({ n, visit_id: `v-${n}` });

async function until(what: string, fn: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Checks that 1..n each arrived, and that first arrivals came in order. Returns the number of duplicates. */
function expectEachOnceInOrder(received: Received, n: number, from = 1): number {
  const firsts: number[] = [];
  const seen = new Set<number>();
  for (const x of received) {
    if (seen.has(x)) continue;
    seen.add(x);
    firsts.push(x);
  }
  expect(firsts).toEqual(Array.from({ length: n - from + 1 }, (_, i) => from + i));
  return received.length - seen.size;
}

describe('DurableQueue', () => {
  it('keeps items until acknowledged, in order; in-flight items wait again after a restart', () => {
    const q = openQueue();
    for (let n = 1; n <= 5; n++) q.enqueue(TOPIC, payload(n));
    expect(q.stats()).toEqual({ queued: 5, dropped: 0 });

    const first = q.peek(2);
    expect(first.map((i) => JSON.parse(i.payload.toString()).n)).toEqual([1, 2]);
    expect(q.peek(2).map((i) => i.id)).toEqual([first[1]!.id + 1, first[1]!.id + 2]); // in flight ones are skipped
    expect(q.ack(first[0]!.id)).toBe(true);
    expect(q.ack(first[0]!.id)).toBe(false);
    q.release(first[1]!.id);
    expect(q.peek(10).map((i) => JSON.parse(i.payload.toString()).n)).toEqual([2, 5]);
    expect(q.stats()).toEqual({ queued: 4, dropped: 0 });
    q.close();

    const again = openQueue();
    expect(again.stats()).toEqual({ queued: 4, dropped: 0 });
    const items = again.peek(10);
    expect(items.map((i) => JSON.parse(i.payload.toString()).n)).toEqual([2, 3, 4, 5]);
    expect(items[0]).toMatchObject({ topic: TOPIC });
    expect(items[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    // ids keep growing after deletions (never reused)
    expect(again.enqueue(TOPIC, payload(6)).id).toBeGreaterThan(items.at(-1)!.id);
  });

  it('is a WAL-mode SQLite file only its owner can read', () => {
    const q = openQueue();
    q.enqueue(TOPIC, payload(1));
    expect(statSync(q.file).mode & 0o777).toBe(0o600);
    expect(statSync(`${q.file}-wal`).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(q.file)).mode & 0o777).toBe(0o700);
    q.close();
    const other = new Database(q.file, { readonly: true });
    expect(other.pragma('journal_mode', { simple: true })).toBe('wal');
    other.close();
  });

  it('is used by one agent at a time: a second one on the same data folder is refused at once', () => {
    const q = openQueue();
    q.enqueue(TOPIC, payload(1));
    const started = Date.now();
    expect(() => openQueue()).toThrow(/in use by another footfall agent/);
    expect(Date.now() - started).toBeLessThan(1000);
    // The first one is unaffected, and the file opens again once it is closed.
    q.enqueue(TOPIC, payload(2));
    expect(q.stats().queued).toBe(2);
    q.close();
    expect(openQueue().stats().queued).toBe(2);
  });

  it('a damaged file is kept aside and a new one started (the agent would not start at all otherwise)', async () => {
    const file = path.join(dir, 'data', 'queue.sqlite');
    await mkdir(path.dirname(file), { recursive: true });
    const garbage = Buffer.alloc(8192, 0x5a);
    await writeFile(file, garbage);
    const lines: string[] = [];
    const q = openQueue(10_000, pino({ level: 'warn' }, { write: (s: string) => lines.push(s) }));
    q.enqueue(TOPIC, payload(1));
    expect(q.stats()).toEqual({ queued: 1, dropped: 0 });
    const aside = (await readdir(path.dirname(file))).filter((n) => n.startsWith('queue.sqlite.damaged-'));
    expect(aside).toHaveLength(1);
    expect(await readFile(path.join(path.dirname(file), aside[0]!))).toEqual(garbage);
    expect(statSync(path.join(path.dirname(file), aside[0]!)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, msg: expect.stringMatching(/^queue file is damaged/) });
  });

  it('overflow drops the oldest, counts them persistently and says so in the log', () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
    const q = openQueue(50, log);
    for (let n = 1; n <= 80; n++) q.enqueue(TOPIC, payload(n));
    expect(q.stats()).toEqual({ queued: 50, dropped: 30 });
    expect(lines).toHaveLength(30);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, dropped: 1, bound: 50, msg: 'queue full: dropped the oldest messages' });
    q.peek(5); // in flight when the agent stops
    q.close();

    const again = openQueue(50);
    expect(again.stats()).toEqual({ queued: 50, dropped: 30 });
    expect(again.peek(100).map((i) => JSON.parse(i.payload.toString()).n)).toEqual(Array.from({ length: 50 }, (_, i) => 31 + i));
    again.close();

    // A smaller bound on the next start trims the file at once, counted too.
    const smaller = openQueue(40);
    expect(smaller.stats()).toEqual({ queued: 40, dropped: 40 });
  });

  it("discards another shop's items (an earlier enrolment) without counting them as dropped, and says so", () => {
    const lines: string[] = [];
    const q = openQueue(50, pino({ level: 'warn' }, { write: (s: string) => lines.push(s) }));
    const old = 'ff/acme/bandra/up/visit';
    for (let n = 1; n <= 6; n++) q.enqueue(n % 2 ? old : TOPIC, payload(n));
    expect(q.discardOutside('ff/acme/andheri/')).toBe(3);
    expect(q.discardOutside('ff/acme/andheri/')).toBe(0);
    expect(q.stats()).toEqual({ queued: 3, dropped: 0 });
    expect(q.peek(10).map((i) => JSON.parse(i.payload.toString()).n)).toEqual([2, 4, 6]);
    expect(lines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: 40, discarded: 3, topics: { [old]: 3 } })]);
  });

  it("counts dropped per shop: enrolled for another shop it starts at 0, back in the first shop it finds that shop's count", () => {
    const file = path.join(dir, 'data', 'queue.sqlite');
    const open = (shop: string) => {
      const q = new DurableQueue({ file, maxItems: 50, shop });
      cleanups.push(() => q.close());
      return q;
    };
    const andheri = open('site-andheri');
    for (let n = 1; n <= 60; n++) andheri.enqueue(TOPIC, payload(n));
    expect(andheri.stats()).toEqual({ queued: 50, dropped: 10 });
    andheri.close();

    // The same PC (same data folder) enrolled for Bandra: Andheri's losses are not Bandra's.
    const bandra = open('site-bandra');
    expect(bandra.discardOutside('ff/acme/bandra/')).toBe(50);
    expect(bandra.stats()).toEqual({ queued: 0, dropped: 0 });
    for (let n = 1; n <= 53; n++) bandra.enqueue('ff/acme/bandra/up/visit', payload(n));
    expect(bandra.stats()).toEqual({ queued: 50, dropped: 3 });
    bandra.close();
    // Enrolled again for Bandra (a new identity, the same shop): its count goes on.
    const again = open('site-bandra');
    expect(again.stats()).toEqual({ queued: 50, dropped: 3 });
    again.close();

    // Back in Andheri: its own count, which never went down.
    expect(open('site-andheri').stats()).toEqual({ queued: 50, dropped: 10 });
  });

  it('a file of an older agent (one count for the file) keeps its count for the first shop that opens it', () => {
    const old = openQueue(50); // no shop: the count as older agents kept it
    for (let n = 1; n <= 57; n++) old.enqueue(TOPIC, payload(n));
    expect(old.stats()).toEqual({ queued: 50, dropped: 7 });
    old.close();

    const file = path.join(dir, 'data', 'queue.sqlite');
    const upgraded = new DurableQueue({ file, maxItems: 50, shop: 'site-andheri' });
    expect(upgraded.stats()).toEqual({ queued: 50, dropped: 7 });
    upgraded.close();
    const moved = new DurableQueue({ file, maxItems: 50, shop: 'site-bandra' });
    expect(moved.stats().dropped).toBe(0);
    moved.close();
    const back = new DurableQueue({ file, maxItems: 50, shop: 'site-andheri' });
    expect(back.stats().dropped).toBe(7);
    back.close();
  });

  it('drops waiting items before in-flight ones (those are already on the wire)', () => {
    const q = openQueue(3);
    for (let n = 1; n <= 3; n++) q.enqueue(TOPIC, payload(n));
    q.peek(1); // 1 in flight
    q.enqueue(TOPIC, payload(4));
    expect(q.stats()).toEqual({ queued: 3, dropped: 1 });
    q.releaseAll();
    expect(q.peek(10).map((i) => JSON.parse(i.payload.toString()).n)).toEqual([1, 3, 4]);
  });
});

describe('DurableQueue of an agent run as root', () => {
  // Needs root (to run as root and give files away); skipped otherwise.
  it("in the service user's data folder: the queue files are the service user's, also one an earlier root run left", (ctx) => {
    if (process.getuid?.() !== 0) {
      console.warn('skipped: needs root (an agent run as root in the service user\'s data folder)');
      return ctx.skip();
    }
    const service = { uid: 65534, gid: 65534 }; // nobody:nogroup stands for footfall:footfall
    const data = path.join(dir, 'var-lib-footfall');
    mkdirSync(data, { mode: 0o700 });
    chownSync(data, service.uid, service.gid);
    const file = path.join(data, 'queue.sqlite');

    const first = new DurableQueue({ file });
    first.enqueue(TOPIC, payload(1));
    for (const f of [file, `${file}-wal`]) expect(statSync(f)).toMatchObject(service);
    first.close();

    // A file an older agent left as root (it would stop the service at every start: permission denied).
    chownSync(file, 0, 0);
    const again = new DurableQueue({ file });
    again.enqueue(TOPIC, payload(2));
    for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) expect(statSync(f)).toMatchObject(service);
    expect(statSync(file)).toMatchObject(service);
    again.close();

    // In root's own folder the files stay root's.
    const own = new DurableQueue({ file: path.join(dir, 'root-data', 'queue.sqlite') });
    expect(statSync(own.file)).toMatchObject({ uid: 0, gid: 0 });
    own.close();
  });
});

/** A 256 KiB file system (tmpfs) for the test; undefined where it cannot be mounted (not root, no mount). */
function smallDisk(): { dir: string; unmount(): void } | undefined {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return undefined;
  const mountPoint = path.join(dir, 'small-disk');
  mkdirSync(mountPoint);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mountPoint], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return { dir: mountPoint, unmount: () => execFileSync('umount', ['-l', mountPoint], { stdio: 'ignore' }) };
}

describe('DurableQueue on a full disk', () => {
  // Needs root, to mount the small file system; skipped otherwise.
  it('counts only what is on disk when writes fail, and still closes', (ctx) => {
    const disk = smallDisk();
    if (!disk) return ctx.skip();
    cleanups.push(() => disk.unmount());
    const q = new DurableQueue({ file: path.join(disk.dir, 'queue.sqlite'), maxItems: 1000 });
    let stored = 0;
    let failed = 0;
    for (let n = 1; n <= 200; n++) {
      try {
        q.enqueue(TOPIC, JSON.stringify({ n, pad: 'x'.repeat(3000) }));
        stored++;
      } catch (err) {
        expect((err as { code?: string }).code).toBe('SQLITE_FULL');
        failed++;
      }
    }
    expect(failed).toBeGreaterThan(0);
    // Heartbeats report `queued`: what waits on disk, not the attempts.
    expect(q.stats()).toEqual({ queued: stored, dropped: 0 });
    expect(q.peek(1000)).toHaveLength(stored);
    q.close();
    expect(q.open).toBe(false);
  });
});

describe('Publisher', () => {
  it('loses nothing when the broker dies mid-stream and comes back', async () => {
    const received: Received = [];
    // The broker dies right after taking message 100, before it acknowledges it.
    let dead: Promise<void> | undefined;
    let broker = await startBroker(received, {
      onRecord: (b) => {
        if (received.length === 100) dead = b.kill();
      },
    });
    const port = broker.port;
    const q = openQueue();
    const publisher = new Publisher({ queue: q, client: client(port), window: 8 });
    publisher.start();
    cleanups.push(() => publisher.stop());

    const N = 400;
    let produced = 0;
    // The producer holds at 300 until the broker has died: mid-stream however slowly the publisher runs.
    let resume = (): void => {};
    const resumed = new Promise<void>((r) => (resume = r));
    const producing = (async () => {
      while (produced < N) {
        q.enqueue(TOPIC, payload(++produced));
        if (produced === 300) await resumed;
        if (produced % 4 === 0) await new Promise((r) => setTimeout(r, 2));
      }
    })();

    await until('the broker died', () => dead !== undefined);
    await dead;
    expect(produced).toBeLessThan(N); // mid-stream
    resume();
    const atKill = received.length;
    await new Promise((r) => setTimeout(r, 300)); // visits keep coming while the broker is away
    expect(received.length).toBe(atKill);
    expect(q.stats().queued).toBeGreaterThan(0);
    broker = await startBroker(received, { port });

    await producing;
    await until('all delivered', () => new Set(received).size === N && q.stats().queued === 0);
    await publisher.idle();
    const duplicates = expectEachOnceInOrder(received, N);
    expect(duplicates).toBeGreaterThanOrEqual(1); // message 100 was taken but never acknowledged: sent again
    expect(duplicates).toBeLessThanOrEqual(8); // at most one window
    expect(q.stats()).toEqual({ queued: 0, dropped: 0 });
  });

  it('holds everything while the broker is down from the start, then delivers it in order', async () => {
    const received: Received = [];
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const q = openQueue();
    const mqtt = client(port);
    const publisher = new Publisher({ queue: q, client: mqtt });
    publisher.start();
    cleanups.push(() => publisher.stop());
    for (let n = 1; n <= 30; n++) q.enqueue(TOPIC, payload(n));
    await new Promise((r) => setTimeout(r, 300));
    expect(publisher.pending).toBe(0);
    expect(q.stats().queued).toBe(30);

    await startBroker(received, { port });
    await until('delivered', () => q.stats().queued === 0);
    expect(expectEachOnceInOrder(received, 30)).toBe(0);
  });

  it('a full queue during an outage: the survivors arrive after a restart, dropped stays counted', async () => {
    const q = openQueue(50);
    for (let n = 1; n <= 80; n++) q.enqueue(TOPIC, payload(n));
    q.close(); // the agent restarts during the outage

    const received: Received = [];
    const broker = await startBroker(received);
    const again = openQueue(50);
    const publisher = new Publisher({ queue: again, client: client(broker.port) });
    publisher.start();
    cleanups.push(() => publisher.stop());
    await until('delivered', () => again.stats().queued === 0);
    expect(expectEachOnceInOrder(received, 80, 31)).toBe(0);
    expect(again.stats()).toEqual({ queued: 0, dropped: 30 });
  });

  it('items in flight when the agent stops are sent again by the next publisher', async () => {
    const received: Received = [];
    const q = openQueue();
    for (let n = 1; n <= 10; n++) q.enqueue(TOPIC, payload(n));
    // A broker that takes messages and never acknowledges them.
    const silent = await startBroker([], { ack: false });
    const first = new Publisher({ queue: q, client: client(silent.port), window: 4 });
    first.start();
    await until('four in flight', () => first.pending === 4);
    first.stop();
    q.close();

    const again = openQueue();
    expect(again.stats().queued).toBe(10);
    const broker = await startBroker(received);
    const second = new Publisher({ queue: again, client: client(broker.port) });
    second.start();
    cleanups.push(() => second.stop());
    await until('delivered', () => again.stats().queued === 0);
    expect(expectEachOnceInOrder(received, 10)).toBe(0);
  });
});
