import { z } from 'zod';
import { SessionEnvelope } from '../auth/openapi.js';
import { routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

const TenantRole = z.enum(['staff', 'manager', 'owner']);

/** Response shapes of ./presenter.ts. */
export const TeamMember = z
  .object({
    id: Uuid,
    email: z.string(),
    full_name: z.string(),
    role: TenantRole,
    active: z.boolean(),
    last_login_at: z.string().meta({ description: 'RFC 3339 timestamp; empty when the member has never signed in' }),
    created_at: Timestamp,
    phone: z.string().nullable().meta({ description: 'E.164 number for staff phone sign-in; null when none' }),
  })
  .meta({ id: 'TeamMember' });

export const Invitation = z
  .object({ id: Uuid, email: z.string(), full_name: z.string(), role: TenantRole, invited_by: z.string(), expires_at: Timestamp, created_at: Timestamp })
  .meta({ id: 'Invitation' });

const member = { id: 'Member id (uuid) or email address' };

export const teamDocs = routeDocs({
  'GET /api/team': { summary: 'Members of the company', responses: { 200: { description: 'Every member', json: z.array(TeamMember) } } },
  'POST /api/team/members': {
    summary: 'Add a member',
    description: 'The password, generated or supplied, is in this answer and nowhere else.',
    responses: { 201: { description: 'Created', json: TeamMember.extend({ password: z.string() }) }, 409: '`conflict`: the address already has an account, or the phone is another member’s' },
  },
  'POST /api/team/invitations': {
    summary: 'Invite someone',
    responses: { 201: { description: 'The invitation with its code (shown once)', json: Invitation.extend({ code: z.string() }) }, 409: '`conflict`: already an account or a pending invitation (`invitation_id`)' },
  },
  'GET /api/team/invitations': { summary: 'Pending invitations', responses: { 200: { description: 'Pending invitations (no codes)', json: z.array(Invitation) } } },
  'DELETE /api/team/invitations/{id}': { summary: 'Withdraw an invitation', params: { id: 'Invitation id' }, responses: { 204: 'Withdrawn' } },
  'POST /api/team/{id}/password': {
    summary: "Reset a member's password",
    description: 'Every session of the member is revoked in the same transaction.',
    params: member,
    responses: { 200: { description: 'The new password, shown once', json: z.object({ password: z.string() }) } },
  },
  'PATCH /api/team/{id}': {
    summary: 'Change a member’s role, active flag or phone',
    params: member,
    responses: { 200: { description: 'The member as changed', json: TeamMember }, 409: '`last_owner`: the change would leave no active owner; `conflict`: phone in use' },
  },
  'GET /api/auth/invitation': {
    summary: 'Preview an invitation by its code',
    params: { code: 'The invitation code' },
    security: [],
    responses: {
      200: { description: 'What the invitee sees before choosing a password', json: z.object({ client_name: z.string(), email: z.string(), full_name: z.string(), role: TenantRole }) },
      403: 'The company is suspended',
      404: '`invalid_code`: unknown, expired, spent or withdrawn (one message for all)',
      409: 'The address got an account meanwhile',
    },
  },
  'POST /api/auth/register': {
    summary: 'Accept an invitation: create the account and sign in',
    security: [],
    responses: {
      201: { description: 'Signed in', json: SessionEnvelope },
      403: 'The company is suspended',
      404: '`invalid_code`: unknown, expired, spent or withdrawn',
      409: '`conflict`: the address already has an account',
    },
  },
});
