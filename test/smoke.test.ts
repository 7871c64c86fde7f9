import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './support/harness.js';

describe('head office smoke', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('is healthy, and admin -> company -> owner sign-in works', async () => {
    const health = await h.request('GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok', database: 'ok', broker: 'ok' });
    const c = await h.company('Chai Point');
    expect(c.slug).toBe('chai-point');
    expect(c.owner.user).toMatchObject({ role: 'owner', client_id: c.id, client_name: 'Chai Point' });
    const me = await h.request('GET', '/api/auth/me', { token: c.ownerToken });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(c.ownerEmail);
  });
});
