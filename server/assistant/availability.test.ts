import { afterAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';

/** GET /api/assistant: whether the assistant can be asked on this head office (the console's tab depends on it). */
describe('GET /api/assistant', () => {
  const harnesses: Harness[] = [];
  afterAll(async () => {
    await Promise.all(harnesses.map((h) => h.close()));
  });

  it('false when not configured or misconfigured, true with a URL and a model; a session is required', async () => {
    for (const [overrides, available] of [
      [{}, false],
      [{ FOOTFALL_ASSISTANT_URL: 'http://127.0.0.1:9/v1' }, false],
      [{ FOOTFALL_ASSISTANT_URL: 'http://127.0.0.1:9/v1', FOOTFALL_ASSISTANT_MODEL: 'any-model' }, true],
    ] as const) {
      const h = await startHarness(overrides);
      harnesses.push(h);
      const c = await h.company();
      const r = await h.request('GET', '/api/assistant', { token: c.ownerToken });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ available });
      expect((await h.request('GET', '/api/assistant')).status).toBe(401);
    }
  });
});
