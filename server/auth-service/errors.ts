import { HttpError } from '../http/errors.js';

/**
 * The authentication service's error envelope (spec auth-service-v2, Errors): `{ code, message, details, requestId }`,
 * used for every path under /auth, unknown ones and malformed bodies included. /api keeps its `{ error, message }`.
 * Statuses and the extra codes for what is not an auth route (unknown path, wrong method, a bug): docs/auth-service.md.
 */
export const authCodes = ['UNAUTHENTICATED', 'FORBIDDEN', 'VALIDATION_ERROR', 'AUTH_PROVIDER_ERROR'] as const;
export type AuthCode = (typeof authCodes)[number];

/** Every /auth failure is an HttpError whose `extra` is the envelope's `details`. */
export const authError = (status: number, code: AuthCode, message: string, details: Record<string, unknown> = {}) => new HttpError(status, code, message, details);

export const unauthenticated = (message: string, reason: string, details: Record<string, unknown> = {}) => authError(401, 'UNAUTHENTICATED', message, { reason, ...details });
export const denied = (message: string, reason: string, details: Record<string, unknown> = {}) => authError(403, 'FORBIDDEN', message, { reason, ...details });
export const invalid = (message: string, details: Record<string, unknown> = {}) => authError(400, 'VALIDATION_ERROR', message, details);
export const tooManyAttempts = (retryAfterSeconds: number) =>
  authError(429, 'UNAUTHENTICATED', `Too many attempts. Wait ${Math.ceil(retryAfterSeconds / 60)} minutes and try again.`, { reason: 'too_many_attempts', retryAfterSeconds });

/** The identity provider is not set up on this server (FOOTFALL_IDP_* unset): every /auth route answers this. */
export const notConfigured = () =>
  authError(503, 'AUTH_PROVIDER_ERROR', 'Sign-in with the identity provider is not set up on this server. Ask whoever runs head office to configure it (FOOTFALL_IDP_*).', {
    reason: 'not_configured',
  });

export function isAuthServicePath(path: string): boolean {
  return path === '/auth' || path.startsWith('/auth/');
}

const byStatus: Record<number, string> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'VALIDATION_ERROR',
  415: 'VALIDATION_ERROR',
  429: 'UNAUTHENTICATED',
  501: 'METHOD_NOT_ALLOWED',
};

/**
 * The /auth body for an error the `errors` middleware has already turned into an HttpError. The service's own
 * errors keep their code and details; anything else (unknown path, wrong method, an unreadable body, a bug) gets
 * the code of its status and its /api code as `details.reason`.
 */
export function authServiceEnvelope(e: HttpError, requestId: string) {
  const own = (authCodes as readonly string[]).includes(e.code);
  const code = own ? e.code : (byStatus[e.status] ?? (e.status >= 500 ? 'INTERNAL' : 'VALIDATION_ERROR'));
  const details = own ? e.extra : { reason: e.code };
  return { code, message: e.message, details, requestId };
}

/** What a provider error means for the caller. `refused` codes the service does not know are 502 (and logged). */
const providerCodes: Record<string, { status: number; code: AuthCode; reason: string; message: string; field?: string }> = {
  INVALID_LOGIN_CREDENTIALS: { status: 401, code: 'UNAUTHENTICATED', reason: 'invalid_credentials', message: 'The email address or password is wrong.' },
  EMAIL_NOT_FOUND: { status: 401, code: 'UNAUTHENTICATED', reason: 'invalid_credentials', message: 'The email address or password is wrong.' },
  INVALID_PASSWORD: { status: 401, code: 'UNAUTHENTICATED', reason: 'invalid_credentials', message: 'The email address or password is wrong.' },
  USER_DISABLED: { status: 403, code: 'FORBIDDEN', reason: 'provider_account_disabled', message: 'This sign-in has been disabled at the identity provider.' },
  EMAIL_EXISTS: { status: 409, code: 'VALIDATION_ERROR', reason: 'email_taken', field: 'email', message: 'This email address already has an account. Sign in instead.' },
  WEAK_PASSWORD: { status: 400, code: 'VALIDATION_ERROR', reason: 'weak_password', field: 'password', message: 'password: the identity provider finds this password too weak; choose a longer one.' },
  INVALID_EMAIL: { status: 400, code: 'VALIDATION_ERROR', reason: 'invalid_email', field: 'email', message: 'email: must be an email address' },
  INVALID_PHONE_NUMBER: { status: 400, code: 'VALIDATION_ERROR', reason: 'invalid_phone_number', field: 'phoneNumber', message: 'phoneNumber: the identity provider does not accept this phone number.' },
  CAPTCHA_CHECK_FAILED: { status: 401, code: 'UNAUTHENTICATED', reason: 'app_verification_failed', message: 'The app verification (reCAPTCHA or Play Integrity) was refused. Try again from the app.' },
  INVALID_RECAPTCHA_TOKEN: { status: 401, code: 'UNAUTHENTICATED', reason: 'app_verification_failed', message: 'The app verification (reCAPTCHA or Play Integrity) was refused. Try again from the app.' },
  INVALID_APP_CREDENTIAL: { status: 401, code: 'UNAUTHENTICATED', reason: 'app_verification_failed', message: 'The app verification (reCAPTCHA or Play Integrity) was refused. Try again from the app.' },
  INVALID_PLAY_INTEGRITY_TOKEN: { status: 401, code: 'UNAUTHENTICATED', reason: 'app_verification_failed', message: 'The app verification (reCAPTCHA or Play Integrity) was refused. Try again from the app.' },
  INVALID_CODE: { status: 401, code: 'UNAUTHENTICATED', reason: 'invalid_code', message: 'The code is wrong. Check the text message and try again.' },
  INVALID_VERIFICATION_CODE: { status: 401, code: 'UNAUTHENTICATED', reason: 'invalid_code', message: 'The code is wrong. Check the text message and try again.' },
  SESSION_EXPIRED: { status: 401, code: 'UNAUTHENTICATED', reason: 'session_expired', message: 'This code has expired. Start again to get a new one.' },
  CODE_EXPIRED: { status: 401, code: 'UNAUTHENTICATED', reason: 'session_expired', message: 'This code has expired. Start again to get a new one.' },
  INVALID_SESSION_INFO: { status: 401, code: 'UNAUTHENTICATED', reason: 'session_expired', message: 'This verification is not valid any more. Start again to get a new code.' },
  TOKEN_EXPIRED: { status: 401, code: 'UNAUTHENTICATED', reason: 'token_expired', message: 'The ID token has expired. Get a fresh one from the SDK and try again.' },
  INVALID_ID_TOKEN: { status: 401, code: 'UNAUTHENTICATED', reason: 'token_invalid', message: 'The ID token is not valid for this service.' },
  USER_NOT_FOUND: { status: 401, code: 'UNAUTHENTICATED', reason: 'token_invalid', message: 'The account of this ID token no longer exists at the identity provider.' },
  TOO_MANY_ATTEMPTS_TRY_LATER: { status: 429, code: 'AUTH_PROVIDER_ERROR', reason: 'provider_rate_limited', message: 'The identity provider is refusing attempts for now. Wait a while and try again.' },
  QUOTA_EXCEEDED: { status: 429, code: 'AUTH_PROVIDER_ERROR', reason: 'provider_quota_exceeded', message: 'The identity provider cannot send more codes for now. Wait a while and try again.' },
};

/** A ProviderError as the caller sees it. `known` is false for codes that point at our configuration (log them). */
export function fromProvider(err: { kind: 'refused' | 'unavailable'; code: string; detail?: string | undefined }): { error: HttpError; known: boolean } {
  if (err.code === 'SMS_SEND_FAILED') {
    // The embedded provider's SMS gateway (FOOTFALL_SMS=http) refused or did not answer: say so, with its reason.
    return {
      error: authError(502, 'AUTH_PROVIDER_ERROR', `The text message with the code could not be sent: ${err.detail ?? 'the SMS gateway failed'}. Try again in a moment.`, {
        reason: 'sms_not_sent',
        providerCode: err.code,
        ...(err.detail ? { gateway: err.detail } : {}),
      }),
      known: true,
    };
  }
  if (err.kind === 'unavailable') {
    return {
      error: authError(502, 'AUTH_PROVIDER_ERROR', 'The identity provider could not be reached or gave no usable answer. Try again in a moment.', { reason: 'provider_unavailable', providerCode: err.code }),
      known: true,
    };
  }
  const m = providerCodes[err.code];
  if (!m) {
    return {
      error: authError(502, 'AUTH_PROVIDER_ERROR', 'The identity provider refused the request. Ask whoever runs head office to check its configuration.', { reason: 'provider_refused', providerCode: err.code }),
      known: false,
    };
  }
  // Projects without email enumeration protection answer EMAIL_NOT_FOUND or INVALID_PASSWORD: echoing that would
  // tell a guesser whether the address has an account. Both are reported as the protected projects' code.
  const providerCode = m.reason === 'invalid_credentials' ? 'INVALID_LOGIN_CREDENTIALS' : err.code;
  const details: Record<string, unknown> = { reason: m.reason, providerCode };
  if (m.field) details.fields = { [m.field]: m.message.replace(/^\w+: /, '') };
  return { error: authError(m.status, m.code, m.message, details), known: true };
}
