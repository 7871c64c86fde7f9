/**
 * A refusal in Identity Toolkit's own terms: `code` is the word its clients branch on (EMAIL_EXISTS, INVALID_CODE,
 * ...), `detail` the text after " : " in its message. `unavailable`: a part we depend on (the SMS gateway) failed.
 */
export class IdpError extends Error {
  constructor(
    readonly code: string,
    readonly detail?: string,
    readonly status = 400,
    readonly kind: 'refused' | 'unavailable' = 'refused',
  ) {
    super(detail ? `${code} : ${detail}` : code);
  }
}

/** Identity Toolkit's error body: `{ error: { code, message, errors: [{ message, domain, reason }], status } }`. */
export function presentIdpError(e: IdpError) {
  const status = e.status === 401 ? 'UNAUTHENTICATED' : e.status === 403 ? 'PERMISSION_DENIED' : e.status === 404 ? 'NOT_FOUND' : e.status >= 500 ? 'UNAVAILABLE' : 'INVALID_ARGUMENT';
  return { error: { code: e.status, message: e.message, errors: [{ message: e.message, domain: 'global', reason: e.status === 404 ? 'notFound' : 'invalid' }], status } };
}

export const invalidCredentials = () => new IdpError('INVALID_LOGIN_CREDENTIALS');
export const tooManyAttempts = (detail = 'Too many attempts. Wait a while and try again.') => new IdpError('TOO_MANY_ATTEMPTS_TRY_LATER', detail);
export const adminOnly = (detail: string) => new IdpError('ADMIN_ONLY_OPERATION', detail);
