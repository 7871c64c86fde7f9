import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from './ports.js';
import { startRoundRobinProxy, type RoundRobinProxy } from './round-robin-proxy.js';

/** A backend that answers with its name and what it was sent; `/events` is an event stream written on `push`. */
async function backend(name: string) {
  const streams = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-backend': name });
      res.write('retry: 2000\n\n');
      streams.add(res);
      res.on('close', () => streams.delete(res));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', 'x-backend': name });
      res.end(JSON.stringify({ name, method: req.method, url: req.url, body: Buffer.concat(chunks).toString() }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    streams,
    push: (data: string) => {
      for (const s of streams) s.write(`data: ${data}\n\n`);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('round-robin proxy (test/support/round-robin-proxy.ts)', () => {
  let one: Awaited<ReturnType<typeof backend>>;
  let two: Awaited<ReturnType<typeof backend>>;
  let proxy: RoundRobinProxy;
  let dead: string;

  beforeAll(async () => {
    one = await backend('one');
    two = await backend('two');
    dead = `http://127.0.0.1:${await closedPort()}`;
    proxy = await startRoundRobinProxy([one.url, dead, two.url]);
  });
  afterAll(async () => {
    await proxy.close();
    await one.close();
    await two.close();
  });

  it('sends requests to the backends in turn, bodies and statuses passed on; a refused backend’s turn goes to the next', async () => {
    const names: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${proxy.url}/things?i=${i}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) });
      expect(res.status).toBe(201);
      const body = (await res.json()) as { name: string; url: string; body: string };
      expect(body).toMatchObject({ url: `/things?i=${i}`, body: JSON.stringify({ i }) });
      expect(res.headers.get('x-backend')).toBe(body.name);
      names.push(body.name);
    }
    // Turns: one, dead (refused: two takes it), two, one, dead (two), two.
    expect(names).toEqual(['one', 'two', 'two', 'one', 'two', 'two']);
    expect(proxy.refused).toEqual([0, 2, 0]);
    expect(proxy.answered).toEqual([2, 0, 4]);
  });

  it('an event stream passes through as it is written, not when it ends; closing it closes the backend’s', async () => {
    const ac = new AbortController();
    const res = await fetch(`${proxy.url}/events`, { signal: ac.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const owner = res.headers.get('x-backend') === 'one' ? one : two;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (part: string) => {
      while (!text.includes(part)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${part}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await readUntil('retry: 2000');
    owner.push('first');
    await readUntil('data: first');
    owner.push('second');
    await readUntil('data: second');
    expect(owner.streams.size).toBe(1);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    await expect.poll(() => owner.streams.size).toBe(0);
  });

  it('502 when no backend takes the connection', async () => {
    const none = await startRoundRobinProxy([dead]);
    try {
      const res = await fetch(`${none.url}/anything`);
      expect(res.status).toBe(502);
      expect(await res.json()).toMatchObject({ error: 'bad_gateway' });
      expect(none.refused).toEqual([1]);
    } finally {
      await none.close();
    }
  });
});
