import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Envelope, type Harness } from './support/harness.js';

/**
 * The spec's onboarding chain end to end, over real HTTP: platform admin creates a company and its owner ->
 * owner invites a manager -> manager registers with the code typed carelessly -> manager adds a staff
 * member -> staff signs in -> owner deactivates staff -> staff's token is refused at once.
 */
describe('onboarding', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('admin -> owner -> invited manager -> staff, and deactivation ends the staff session at once', async () => {
    // 1. The platform admin creates the company and its owner; the owner password is returned once.
    const admin = await h.adminToken();
    const created = await h.request('POST', '/api/admin/clients', {
      token: admin,
      body: { company_name: 'Onboarding Tea House', owner_email: 'owner@teahouse.test', owner_name: 'Olive Owner' },
    });
    expect(created.status).toBe(201);
    const owner = await h.login('owner@teahouse.test', created.body.password);
    expect(owner.user).toMatchObject({ role: 'owner', client_name: 'Onboarding Tea House' });

    // 2. The owner invites a manager.
    const invitation = await h.request('POST', '/api/team/invitations', {
      token: owner.access_token,
      body: { email: 'manager@teahouse.test', full_name: 'Max Manager', role: 'manager', expires_in_days: 3 },
    });
    expect(invitation.status).toBe(201);
    const code: string = invitation.body.code;
    expect(code).toMatch(/^[A-Z0-9]{6}(?:-[A-Z0-9]{6}){3}$/);

    // 3. The manager registers, typing the code in lower case without dashes.
    const typed = code.toLowerCase().replaceAll('-', '');
    const previewed = await h.request('GET', `/api/auth/invitation?code=${typed}`);
    expect(previewed.body).toEqual({ client_name: 'Onboarding Tea House', email: 'manager@teahouse.test', full_name: 'Max Manager', role: 'manager' });
    const registered = await h.request<Envelope>('POST', '/api/auth/register', { body: { code: typed, full_name: 'Max Manager', password: 'manager-password' } });
    expect(registered.status).toBe(201);
    expect(registered.body.user).toMatchObject({ email: 'manager@teahouse.test', role: 'manager', client_id: created.body.client_id });
    const managerToken = registered.body.access_token;

    // 4. The manager adds a staff member (password generated, shown once).
    const staffMade = await h.request('POST', '/api/team/members', { token: managerToken, body: { email: 'staff@teahouse.test', full_name: 'Sam Staff' } });
    expect(staffMade.status).toBe(201);
    expect(staffMade.body).toMatchObject({ role: 'staff', active: true, last_login_at: '' });

    // 5. Staff signs in.
    const staff = await h.login('staff@teahouse.test', staffMade.body.password, 'Shop floor phone');
    expect((await h.request('GET', '/api/auth/me', { token: staff.access_token })).status).toBe(200);
    const team = await h.request('GET', '/api/team', { token: staff.access_token });
    expect(team.body.map((m: { email: string; role: string }) => `${m.role}:${m.email}`)).toEqual([
      'owner:owner@teahouse.test',
      'manager:manager@teahouse.test',
      'staff:staff@teahouse.test',
    ]);

    // 6. The owner deactivates the staff member (by email reference).
    const off = await h.request('PATCH', '/api/team/staff@teahouse.test', { token: owner.access_token, body: { active: false } });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ email: 'staff@teahouse.test', active: false });

    // 7. The staff token is refused at once, and so is signing in again.
    const refused = await h.request('GET', '/api/auth/me', { token: staff.access_token });
    expect(refused.status).toBe(401);
    expect((await h.request('POST', '/api/auth/refresh', { body: { refresh_token: staff.refresh_token } })).status).toBe(401);
    expect((await h.request('POST', '/api/auth/login', { body: { email: 'staff@teahouse.test', password: staffMade.body.password } })).status).toBe(403);
    // The others carry on.
    expect((await h.request('GET', '/api/auth/me', { token: managerToken })).status).toBe(200);
  });
});
