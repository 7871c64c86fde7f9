import { z } from 'zod';
import { ApiError, routeDocs, type ResponseDoc, type RouteDoc } from '../openapi/registry.js';

/**
 * The embedded identity provider's paths (server/idp/routes.ts) in the OpenAPI document: Identity Toolkit v1 and
 * Secure Token, as a Firebase client SDK calls them after connectAuthEmulator(auth, "http://HEAD-OFFICE:8080"), and
 * the JWKS. Request bodies are what Google documents and the provider reads (other fields a client sends are
 * ignored); responses are what ./presenter.ts writes; errors are Identity Toolkit's own envelope (./errors.ts).
 */

// ---- Errors -------------------------------------------------------------------------------------------

export const GoogleError = z
  .object({
    error: z.object({
      code: z.number().int().meta({ description: 'The HTTP status' }),
      message: z.string().meta({ description: 'The code clients branch on (INVALID_LOGIN_CREDENTIALS, TOKEN_EXPIRED, ...), then " : " and a detail when there is one' }),
      errors: z.array(z.object({ message: z.string(), domain: z.string(), reason: z.string() })),
      status: z.string().meta({ description: 'INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED or UNAVAILABLE' }),
    }),
  })
  .meta({ id: 'GoogleError', description: "Identity Toolkit's error envelope: `{ error: { code, message, errors: [{ message, domain, reason }], status } }`." });

const EMBEDDED_ONLY = 'Only with FOOTFALL_IDP=embedded (the default); in the other modes the path does not exist (the API 404).';

const errors: Record<number, ResponseDoc> = {
  400: {
    description:
      'Refused, in Identity Toolkit terms: MISSING_* (a required field absent or empty), INVALID_JSON_PAYLOAD, TOO_MANY_ATTEMPTS_TRY_LATER (with Retry-After), ' +
      '"API key not valid" (FOOTFALL_IDP_API_KEY set and `key` not it), and the codes of each operation.',
    json: GoogleError,
    headers: { 'Retry-After': 'Seconds to wait (TOO_MANY_ATTEMPTS_TRY_LATER)' },
  },
  404: {
    description: 'NOT_FOUND: not a method of this provider (GoogleError); or FOOTFALL_IDP is not embedded and the path does not exist (ApiError).',
    json: z.union([GoogleError, ApiError]),
  },
  500: { description: 'INTERNAL_ERROR: something failed on head office (the X-Request-Id header names it in the log).', json: GoogleError },
};

// ---- Requests -----------------------------------------------------------------------------------------

const ApiKeyQuery = z.object({
  key: z.string().optional().meta({ description: 'The Firebase web API key the SDK sends. Checked only when FOOTFALL_IDP_API_KEY is set; any value otherwise.' }),
});

const returnSecureToken = z.boolean().optional().meta({ description: 'Sent by the SDK; tokens are always returned' });
const idToken = z.string().max(8192).meta({ description: 'An ID token of this provider' });
const request = (body: z.ZodType): RouteDoc['request'] => ({ body, query: ApiKeyQuery });

// ---- Responses ----------------------------------------------------------------------------------------

const expiresIn = z.string().meta({ description: "The ID token's lifetime in seconds, as a string (Google's form)" });
const Tokens = { idToken: z.string().meta({ description: 'RS256 JWT signed with a key of /.well-known/jwks.json' }), refreshToken: z.string(), expiresIn };

const ProviderUserInfo = z.object({
  providerId: z.enum(['password', 'phone']),
  email: z.string().optional(),
  federatedId: z.string().optional(),
  rawId: z.string(),
  displayName: z.string().optional(),
  phoneNumber: z.string().optional(),
});

const epochMs = z.string().meta({ description: 'Epoch milliseconds, as a string' });
const IdpAccount = z
  .object({
    localId: z.string().meta({ description: "The user's id on head office (the ID token's `sub`)" }),
    email: z.string(),
    emailVerified: z.boolean(),
    displayName: z.string(),
    phoneNumber: z.string().optional(),
    providerUserInfo: z.array(ProviderUserInfo),
    validSince: z.string().optional().meta({ description: 'Epoch seconds: tokens issued before it are revoked (signed out everywhere)' }),
    disabled: z.boolean(),
    createdAt: epochMs.optional(),
    lastLoginAt: epochMs.optional(),
    lastRefreshAt: z.string().optional().meta({ format: 'date-time' }),
  })
  .meta({ id: 'IdpAccount', description: 'An account as accounts:lookup shows it (never a password hash).' });

const PasswordSignIn = z.object({
  kind: z.literal('identitytoolkit#VerifyPasswordResponse'),
  localId: z.string(),
  email: z.string(),
  displayName: z.string(),
  registered: z.literal(true),
  ...Tokens,
});

const PhoneSignIn = z.object({ ...Tokens, localId: z.string(), isNewUser: z.literal(false), phoneNumber: z.string() });

const Update = z.object({
  kind: z.literal('identitytoolkit#SetAccountInfoResponse'),
  localId: z.string(),
  email: z.string(),
  displayName: z.string(),
  emailVerified: z.boolean(),
  providerUserInfo: z.array(ProviderUserInfo),
  idToken: Tokens.idToken.optional().meta({ description: 'New tokens when the password or email changed (older sessions are revoked)' }),
  refreshToken: z.string().optional(),
  expiresIn: expiresIn.optional(),
});

const TokenGrant = z.object({
  access_token: z.string().meta({ description: 'The new ID token (the same as id_token)' }),
  expires_in: expiresIn,
  token_type: z.literal('Bearer'),
  refresh_token: z.string().meta({ description: 'The rotated refresh token: the one sent is used up; persist this one first' }),
  id_token: z.string(),
  user_id: z.string(),
  project_id: z.string(),
});

const Jwks = z.object({
  keys: z.array(z.object({ kty: z.literal('RSA'), n: z.string(), e: z.string(), kid: z.string(), alg: z.literal('RS256'), use: z.literal('sig') })),
});

// ---- Operations ---------------------------------------------------------------------------------------

export const idpDocs = routeDocs({
  'POST /identitytoolkit.googleapis.com/v1/accounts:signUp': {
    summary: 'Sign up (always refused: accounts are made on head office)',
    description:
      `${EMBEDDED_ONLY} Answers 400 ADMIN_ONLY_OPERATION (make the account with POST /auth/client/sign-up, or a manager adds the member), ` +
      'or OPERATION_NOT_ALLOWED for an anonymous sign-up (no email).',
    security: [],
    request: request(z.looseObject({ email: z.string().optional(), password: z.string().optional(), displayName: z.string().optional(), returnSecureToken })),
    responses: { ...errors },
  },
  'POST /identitytoolkit.googleapis.com/v1/accounts:signInWithPassword': {
    summary: 'Sign in with email and password',
    description: `${EMBEDDED_ONLY} Errors: MISSING_EMAIL, INVALID_EMAIL, MISSING_PASSWORD, INVALID_LOGIN_CREDENTIALS (a wrong password and an unknown address alike), USER_DISABLED, TOO_MANY_ATTEMPTS_TRY_LATER.`,
    security: [],
    request: request(z.looseObject({ email: z.string().max(254), password: z.string().max(1024), returnSecureToken })),
    responses: { 200: { description: 'Signed in: an ID token and a refresh token', json: PasswordSignIn }, ...errors },
  },
  'POST /identitytoolkit.googleapis.com/v1/accounts:lookup': {
    summary: 'The account of an ID token',
    description: `${EMBEDDED_ONLY} Errors: MISSING_ID_TOKEN, INVALID_ID_TOKEN, TOKEN_EXPIRED (expired or revoked), USER_NOT_FOUND.`,
    security: [],
    request: request(z.looseObject({ idToken })),
    responses: { 200: { description: 'The account', json: z.object({ kind: z.literal('identitytoolkit#GetAccountInfoResponse'), users: z.array(IdpAccount) }) }, ...errors },
  },
  'POST /identitytoolkit.googleapis.com/v1/accounts:update': {
    summary: "Change the signed-in user's display name, password or email",
    description: `${EMBEDDED_ONLY} A new password or email revokes the user's other sessions and returns new tokens. Errors: MISSING_ID_TOKEN, INVALID_ID_TOKEN, TOKEN_EXPIRED, WEAK_PASSWORD, INVALID_EMAIL, INVALID_DISPLAY_NAME, EMAIL_EXISTS.`,
    security: [],
    request: request(z.looseObject({ idToken, displayName: z.string().max(1000).optional(), password: z.string().max(1024).optional(), email: z.string().max(254).optional(), phoneNumber: z.string().max(32).optional(), returnSecureToken })),
    responses: { 200: { description: 'The account as changed (with new tokens when the password or email changed)', json: Update }, ...errors },
  },
  'POST /identitytoolkit.googleapis.com/v1/accounts:delete': {
    summary: 'Delete an account (always refused: a manager removes team members)',
    description: `${EMBEDDED_ONLY} Answers 400 ADMIN_ONLY_OPERATION.`,
    security: [],
    request: request(z.looseObject({ idToken: idToken.optional() })),
    responses: { ...errors },
  },
  'POST /identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode': {
    summary: 'Text a one-time sign-in code to a team member’s phone',
    description: `${EMBEDDED_ONLY} The number must be exactly one active team member's. Errors: MISSING_PHONE_NUMBER, INVALID_PHONE_NUMBER (not E.164), TOO_MANY_ATTEMPTS_TRY_LATER; 502 SMS_SEND_FAILED when the SMS gateway fails (the attempt is not counted).`,
    security: [],
    request: request(z.looseObject({ phoneNumber: z.string().max(32).meta({ description: 'E.164, e.g. +919812345678' }), recaptchaToken: z.string().optional().meta({ description: 'Ignored' }) })),
    responses: {
      200: { description: 'Sent: the handle to sign in with the code', json: z.object({ sessionInfo: z.string() }) },
      ...errors,
      502: { description: 'SMS_SEND_FAILED: the SMS gateway did not take the message; try again later.', json: GoogleError },
    },
  },
  'POST /identitytoolkit.googleapis.com/v1/accounts:signInWithPhoneNumber': {
    summary: 'Sign in with the texted code',
    description: `${EMBEDDED_ONLY} Errors: MISSING_SESSION_INFO, MISSING_CODE, INVALID_SESSION_INFO, INVALID_CODE, SESSION_EXPIRED, USER_DISABLED, TOO_MANY_ATTEMPTS_TRY_LATER; OPERATION_NOT_ALLOWED for linking (idToken) or a temporaryProof.`,
    security: [],
    request: request(z.looseObject({ sessionInfo: z.string().max(4096), code: z.string().max(16) })),
    responses: { 200: { description: 'Signed in', json: PhoneSignIn }, ...errors },
  },
  'POST /securetoken.googleapis.com/v1/token': {
    summary: 'Exchange a refresh token for a new ID token (Secure Token)',
    description:
      `${EMBEDDED_ONLY} Form-encoded (as the SDK sends it) or JSON; \`grantType\` and \`refreshToken\` are accepted for the snake_case names. ` +
      'The refresh token rotates: the one sent is used up. Errors: MISSING_GRANT_TYPE, INVALID_GRANT_TYPE, MISSING_REFRESH_TOKEN, INVALID_REFRESH_TOKEN, TOKEN_EXPIRED, USER_DISABLED.',
    security: [],
    request: {
      ...request(z.looseObject({ grant_type: z.literal('refresh_token'), refresh_token: z.string().max(4096) })),
      alsoAs: ['application/x-www-form-urlencoded'],
    },
    responses: { 200: { description: 'New tokens', json: TokenGrant }, ...errors },
  },
  'GET /.well-known/jwks.json': {
    summary: "The provider's public signing keys (JWKS)",
    description: `${EMBEDDED_ONLY} Verify ID tokens with these (RS256, by \`kid\`); cached for 5 minutes.`,
    security: [],
    responses: { 200: { description: 'The public keys', json: Jwks }, 404: { description: EMBEDDED_ONLY, json: ApiError } },
  },
});
