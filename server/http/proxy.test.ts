import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';

/**
 * Behind a reverse proxy (FOOTFALL_TRUST_PROXY), the caller's address is the one the proxy appended: the last entry
 * of X-Forwarded-For. Entries before it are whatever the client sent, so they must not count, or every per-IP limit
 * could be dodged with a made-up header.
 */
describe('client address behind a trusted proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ FOOTFALL_TRUST_PROXY: true, FOOTFALL_LOGIN_MAX_FAILURES_IP: 3, FOOTFALL_LOGIN_MAX_FAILURES_ACCOUNT: 100 });
  });
  afterAll(async () => {
    await h?.close();
  });

  const guess = (i: number, forwardedFor: string) =>
    h.request('POST', '/api/auth/login', { body: { email: `spray-${i}@nowhere.test`, password: 'guess-password' }, headers: { 'X-Forwarded-For': forwardedFor } });

  it('counts failures against the address the proxy appended, whatever the client put before it', async () => {
    for (let i = 0; i < 3; i++) expect((await guess(i, `10.0.0.${i}, 203.0.113.9`)).status).toBe(401);
    const blocked = await guess(3, '10.0.0.99, 203.0.113.9');
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('too_many_attempts');
    // Another client behind the same proxy is not blocked.
    expect((await guess(4, '198.51.100.7')).status).toBe(401);
  });
});
