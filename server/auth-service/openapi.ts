import { z } from 'zod';
import { routeDocs } from '../openapi/registry.js';

/**
 * The /auth answers of ./presenter.ts (auth-service spec v2, Resources). Every success carries `requestId`; every
 * failure is the service's envelope (AuthError). The embedded identity provider's Google-compatible paths are
 * registered beside its routes the same way (docs/api.md, "Registering a route").
 */
const ClientUser = z.object({ id: z.string(), email: z.string(), displayName: z.string(), phone: z.string().nullable() });
const Tenant = z.object({ tenantId: z.string(), tenantName: z.string() });
const Business = z.object({ businessId: z.string(), businessName: z.string() });
const tokens = {
  sessionToken: z.string().meta({ description: "The provider's ID token: send it as Authorization: Bearer on /auth" }),
  refreshToken: z.string().nullable().meta({ description: "The provider's refresh token; null on the device path (the SDK keeps its own)" }),
  expiresInSeconds: z.number().int(),
};

export const ClientEnvelope = z.object({ ...tokens, user: ClientUser, tenant: Tenant, business: Business, requestId: z.string() }).meta({ id: 'ClientAuthEnvelope' });
export const StaffEnvelope = z
  .object({ ...tokens, user: z.object({ id: z.string(), phone: z.string() }), staff: z.object({ staffId: z.string() }), requiresProfileSetup: z.boolean(), requestId: z.string() })
  .meta({ id: 'StaffAuthEnvelope' });

const SessionContext = z
  .object({
    allowed: z.boolean(),
    reason: z.string().nullable(),
    message: z.string().nullable(),
    kind: z.enum(['client', 'staff']),
    role: z.enum(['staff', 'manager', 'owner', 'admin']).nullable(),
    user: ClientUser.nullable(),
    tenant: Tenant.nullable(),
    business: Business.nullable(),
    staff: z.object({ staffId: z.string() }).nullable(),
    expiresInSeconds: z.number().int(),
    requestId: z.string(),
  })
  .meta({ id: 'AuthSession' });

const SignedOut = z.object({ signedOut: z.literal(true), requestId: z.string() });

const common = {
  429: { description: '`too_many_attempts` (details.retryAfterSeconds) or the provider’s rate limit', headers: { 'Retry-After': 'Seconds to wait' } },
  502: 'AUTH_PROVIDER_ERROR: the provider could not be reached or refused',
  503: 'AUTH_PROVIDER_ERROR `not_configured`: no identity provider is set up (FOOTFALL_IDP_*)',
};
const signOut = (who: string) => ({
  summary: `Sign ${who} out everywhere`,
  description: 'Every token authenticated up to this second is refused from now on, here and at the provider.',
  security: ['idToken' as const],
  responses: { 200: { description: 'Signed out', json: SignedOut }, 401: 'UNAUTHENTICATED: no, bad, expired or revoked ID token', 403: 'FORBIDDEN: the wrong sign-out route for this kind of sign-in', 502: common[502], 503: common[503] },
});

export const authServiceDocs = routeDocs({
  'POST /auth/client/sign-in': {
    summary: 'Client sign-in with email and password',
    security: [],
    responses: { 200: { description: 'Signed in', json: ClientEnvelope }, 401: 'UNAUTHENTICATED `invalid_credentials`', 403: 'FORBIDDEN: not a member allowed to sign in here', ...common },
  },
  'POST /auth/client/sign-up': {
    summary: 'Client sign-up: a new company and its owner',
    security: [],
    responses: { 201: { description: 'Signed up and signed in', json: ClientEnvelope }, 409: 'VALIDATION_ERROR `email_taken`', ...common },
  },
  'POST /auth/staff/phone/start': {
    summary: 'Start a staff phone sign-in',
    description:
      'Without an attestation (`recaptchaToken` or `playIntegrityToken`): CLIENT_IDP_SDK, verify the number on the device with the SDK. With one: the provider sends an SMS (IDENTITY_PROVIDER_SMS with `sessionInfo`).',
    security: [],
    responses: {
      200: {
        description: 'The next step',
        json: z.union([
          z.object({ mode: z.literal('CLIENT_IDP_SDK'), provider: z.string(), phoneNumber: z.string(), nextStep: z.string(), requestId: z.string() }),
          z.object({ mode: z.literal('IDENTITY_PROVIDER_SMS'), phoneNumber: z.string(), sessionInfo: z.string(), requestId: z.string() }),
        ]),
      },
      401: 'UNAUTHENTICATED: the app verification was refused',
      403: 'FORBIDDEN `unknown_phone`',
      ...common,
    },
  },
  'POST /auth/staff/phone/verify': {
    summary: 'Finish a staff phone sign-in',
    description: 'Device path: `idToken` of the SDK’s phone sign-in. SMS path: `sessionInfo` and `code`.',
    security: [],
    responses: { 200: { description: 'Signed in', json: StaffEnvelope }, 401: 'UNAUTHENTICATED: wrong or expired code, or a bad ID token', 403: 'FORBIDDEN: not an active staff member', ...common },
  },
  'GET /auth/session': {
    summary: 'What the ID token’s holder may do here',
    description: 'Not allowed: `allowed` false with `reason` and `message`, and no role, user, tenant, business or staff (show the message and sign out locally).',
    security: ['idToken'],
    responses: { 200: { description: 'The session context', json: SessionContext }, 401: 'UNAUTHENTICATED: no, bad, expired or revoked ID token', 502: common[502], 503: common[503] },
  },
  'POST /auth/client/sign-out': signOut('a client'),
  'POST /auth/staff/sign-out': signOut('a staff member'),
  'POST /auth/sign-out': signOut('either kind'),
});
