import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { alone } from './alone.js';
import type { Store } from './open.js';
import { openStore } from './store.js';

/** Two head-office processes' stores over one database (on SQLite: one process, so each job just runs). */
describe('alone: one process of several runs a named job', () => {
  let h: Harness;
  let other: Store;
  beforeAll(async () => {
    h = await startHarness();
    other = await openStore(h.server.deps.config, { pool: 2 });
  });
  afterAll(async () => {
    await other?.close();
    await h?.close();
  });

  it('while one runs the job, the other skips it (PostgreSQL) or runs it (SQLite, one process); then either may', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const first = alone(h.server.store, 'test-job', async () => {
      await held;
      return 'first';
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = await alone(other, 'test-job', async () => 'second');
    expect(second).toBe(h.server.store.dialect === 'postgres' ? undefined : 'second');
    // Another job's name is not held.
    expect(await alone(other, 'another-job', async () => 'another')).toBe('another');
    release();
    expect(await first).toBe('first');
    expect(await alone(other, 'test-job', async () => 'later')).toBe('later');
  });

  it('a job that throws lets the name go', async () => {
    await expect(alone(h.server.store, 'failing-job', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await alone(other, 'failing-job', async () => 'ran')).toBe('ran');
  });
});
