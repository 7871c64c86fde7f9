import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';

/**
 * Shops opened at once in one company (docs/benchmarks.md, "What the runs found", finding 3): on PostgreSQL each
 * opening's serializable transaction read the company's shops (is the slug taken?) and inserted one, so concurrent
 * openings formed read/write cycles and exhausted the store's re-runs (a 500).
 */
describe('opening many shops of one company at once', () => {
  let h: Harness;
  let owner: string;

  beforeAll(async () => {
    h = await startHarness();
    owner = (await h.company('Many Doors')).ownerToken;
  });
  afterAll(() => h.close());

  it('twelve at once: every one 201, all stored, slugs and broker logins distinct', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `Branch ${i + 1}`);
    const replies = await Promise.all(names.map((name) => h.request('POST', '/api/sites', { token: owner, body: { name } })));
    expect(replies.map((r) => r.status)).toEqual(names.map(() => 201));
    const list = await h.request('GET', '/api/sites', { token: owner });
    expect(list.status).toBe(200);
    expect(list.body.map((s: any) => s.name).sort()).toEqual([...names].sort());
    expect(new Set(replies.map((r) => r.body.broker_username)).size).toBe(12);
  });

  it('the same derived slug asked for at once: one each, suffixed, none lost', async () => {
    const replies = await Promise.all(Array.from({ length: 8 }, () => h.request('POST', '/api/sites', { token: owner, body: { name: 'Market Road' } })));
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 201));
    const slugs = replies.map((r) => r.body.slug).sort();
    expect(slugs).toEqual(['market-road', ...Array.from({ length: 7 }, (_, i) => `market-road-${i + 2}`)].sort());
  });
});
