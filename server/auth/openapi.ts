import { z } from 'zod';
import { routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

/** Response shapes of ./presenter.ts (docs/api.md, "Registering a route"). */
export const User = z
  .object({
    id: Uuid,
    email: z.string(),
    full_name: z.string(),
    role: z.enum(['staff', 'manager', 'owner', 'admin']),
    client_id: z.string().meta({ description: "The company's id; empty for the platform admin" }),
    client_name: z.string().meta({ description: 'Empty for the platform admin' }),
  })
  .meta({ id: 'User' });

export const SessionEnvelope = z
  .object({
    access_token: z.string().meta({ description: 'Opaque; send as Authorization: Bearer. Lives up to twelve hours.' }),
    refresh_token: z.string().meta({ description: 'Opaque and single use: a refresh rotates both tokens.' }),
    expires_at: Timestamp.meta({ description: "The access token's expiry" }),
    user: User,
  })
  .meta({ id: 'SessionEnvelope' });

export const DeviceSession = z
  .object({
    id: Uuid,
    device: z.string(),
    created_at: Timestamp,
    last_used_at: Timestamp,
    expires_at: Timestamp.meta({ description: 'When the device is signed out if it stops refreshing' }),
    current: z.boolean().meta({ description: 'The session making this request' }),
  })
  .meta({ id: 'DeviceSession' });

export const authDocs = routeDocs({
  'POST /api/auth/login': {
    summary: 'Sign in with email and password',
    description: 'Returns a session envelope. Wrong password and unknown account give the same 401 `bad_credentials`.',
    security: [],
    responses: {
      200: { description: 'Signed in', json: SessionEnvelope },
      401: '`bad_credentials`: the email address or password is wrong (the same answer for both)',
      429: { description: '`too_many_attempts`: 10 failures for an account or 60 for an address within 15 minutes', headers: { 'Retry-After': 'Seconds to wait' } },
    },
  },
  'POST /api/auth/refresh': {
    summary: 'Rotate both tokens',
    description:
      'Spends the refresh token and returns a new pair. The old refresh token stops working the instant the new pair is issued; sending it again signs the session out (401). Refresh once, behind one lock, and persist the new tokens before anything else (docs/api.md).',
    security: [],
    responses: { 200: { description: 'The new pair', json: SessionEnvelope }, 401: 'The refresh token is unknown, spent or its session ended: sign in again' },
  },
  'POST /api/auth/logout': { summary: 'Sign this session out', responses: { 204: 'Signed out' } },
  'GET /api/auth/me': { summary: 'The signed-in user', responses: { 200: { description: 'The user', json: User } } },
  'GET /api/auth/sessions': { summary: "The caller's device sessions", responses: { 200: { description: 'Live sessions, the current one marked', json: z.array(DeviceSession) } } },
  'POST /api/auth/sessions/revoke-others': {
    summary: 'Sign out every other session of the caller',
    responses: { 200: { description: 'How many were signed out', json: z.object({ revoked: z.number().int() }) } },
  },
  'DELETE /api/auth/sessions/{id}': { summary: 'Sign one of the caller’s devices out', params: { id: 'Session id (uuid)' }, responses: { 204: 'Signed out' } },
});
