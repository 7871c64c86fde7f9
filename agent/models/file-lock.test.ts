import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withFileLock } from './file-lock.js';

describe('withFileLock', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
  async function dir(): Promise<string> {
    const d = await mkdtemp(join(tmpdir(), 'footfall-lock-'));
    dirs.push(d);
    return d;
  }

  it('runs callers one at a time and removes the lock afterwards', async () => {
    const d = await dir();
    const lock = join(d, 'x.lock');
    let inside = 0;
    let maxInside = 0;
    const waits: string[] = [];
    const order = await Promise.all(
      [1, 2, 3].map((n) =>
        withFileLock(
          lock,
          async () => {
            inside++;
            maxInside = Math.max(maxInside, inside);
            await new Promise((r) => setTimeout(r, 30));
            inside--;
            return n;
          },
          { pollMs: 10, onWait: (h) => waits.push(h) },
        ),
      ),
    );
    expect(order).toEqual([1, 2, 3]);
    expect(maxInside).toBe(1);
    expect(waits.length).toBeGreaterThan(0);
    expect(waits[0]).toContain(`pid ${process.pid}`);
    expect(await readdir(d)).toEqual([]);
  });

  it('breaks a lock left by a dead process', async () => {
    const d = await dir();
    const lock = join(d, 'x.lock');
    // pid 2^22+1 is above Linux's pid_max default range, so no such process.
    await writeFile(lock, JSON.stringify({ pid: 4194305, host: hostname(), token: 'old', at: new Date().toISOString() }));
    expect(await withFileLock(lock, async () => 'ok', { timeoutMs: 2000, pollMs: 10 })).toBe('ok');
    expect(await readdir(d)).toEqual([]);
  });

  it('gives up after the timeout while a live process holds it, and releases on error', async () => {
    const d = await dir();
    const lock = join(d, 'x.lock');
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: hostname(), token: 'other', at: new Date().toISOString() }));
    await expect(withFileLock(lock, async () => 'never', { timeoutMs: 100, pollMs: 10 })).rejects.toThrow(/Timed out after 0 s waiting for the lock/);
    await rm(lock);
    await expect(withFileLock(lock, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await readdir(d)).toEqual([]);
  });
});
