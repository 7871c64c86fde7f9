import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { auditLog } from '../db/tables.js';

/** POST /api/auth/password: a person changes their own password (docs/api-conventions.md, Own password). */
describe('POST /api/auth/password', () => {
  let h: Harness;
  let c: Company;

  beforeAll(async () => {
    h = await startHarness();
    c = await h.company('Password Chain');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('needs the current password; keeps this session, revokes the others, and the new password signs in', async () => {
    const other = await h.login(c.ownerEmail, c.ownerPassword, 'phone');
    const here = await h.login(c.ownerEmail, c.ownerPassword, 'laptop');
    const body = { current_password: c.ownerPassword, new_password: 'a-new-password-42' };
    const r = await h.request('POST', '/api/auth/password', { token: here.access_token, body });
    expect(r.status).toBe(200);
    expect(r.body.revoked).toBeGreaterThanOrEqual(2); // the phone and the harness's own sign-in
    expect((await h.request('GET', '/api/auth/me', { token: here.access_token })).status).toBe(200);
    expect((await h.request('GET', '/api/auth/me', { token: other.access_token })).status).toBe(401);
    expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: other.refresh_token } })).status).toBe(401);
    expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } })).status).toBe(401);
    const again = await h.login(c.ownerEmail, 'a-new-password-42');
    expect(again.user.email).toBe(c.ownerEmail);
    c.ownerPassword = 'a-new-password-42';
  });

  it('refuses a wrong current password (403, nothing changed), a short or unchanged new one (400), no session (401)', async () => {
    const s = await h.login(c.ownerEmail, c.ownerPassword);
    const wrong = await h.request('POST', '/api/auth/password', { token: s.access_token, body: { current_password: 'not-it', new_password: 'another-password-1' } });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ error: 'forbidden', message: 'The current password is wrong, so the password was not changed.' });
    expect((await h.request('GET', '/api/auth/me', { token: s.access_token })).status).toBe(200);
    const short = await h.request('POST', '/api/auth/password', { token: s.access_token, body: { current_password: c.ownerPassword, new_password: 'short' } });
    expect(short.status).toBe(400);
    expect(short.body.message).toBe('new_password: must be at least 8 characters');
    const same = await h.request('POST', '/api/auth/password', { token: s.access_token, body: { current_password: c.ownerPassword, new_password: c.ownerPassword } });
    expect(same.body.message).toBe('new_password: must differ from the current password');
    const missing = await h.request('POST', '/api/auth/password', { token: s.access_token, body: { new_password: 'another-password-1' } });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe('current_password: is required');
    expect((await h.request('POST', '/api/auth/password', { body: { current_password: 'x', new_password: 'yyyyyyyyyy' } })).status).toBe(401);
    expect((await h.request('POST', '/api/auth/login', { body: { email: c.ownerEmail, password: c.ownerPassword } })).status).toBe(200);
  });

  it('the platform admin changes theirs too, and the change is audited', async () => {
    const s = await h.login(h.admin.email, h.admin.password);
    const r = await h.request('POST', '/api/auth/password', { token: s.access_token, body: { current_password: h.admin.password, new_password: 'admin-password-2' } });
    expect(r.status).toBe(200);
    const row = await h.server.store.db.select().from(auditLog).where(eq(auditLog.action, 'auth.password.change'));
    expect(row.length).toBe(2);
    await h.login(h.admin.email, 'admin-password-2');
  });
});
