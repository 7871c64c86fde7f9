import { ProviderError, type AccountProvider, type PasswordSignIn, type PhoneSignIn, type ProviderAccount } from '../auth-service/provider.js';
import { IdpError } from './errors.js';
import type { EmbeddedIdp } from './service.js';

/** The embedded provider's refusal as the authentication service's ProviderError (same codes as Google's). */
async function mapped<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof IdpError) throw new ProviderError(err.kind, err.code, err.status, err.detail);
    throw err;
  }
}

/**
 * The embedded provider behind the interface the /auth routes use for every provider: calls in process, no HTTP.
 * Sign-up is not here: on the embedded provider an account is a users row, which /auth/client/sign-up makes itself.
 */
export class EmbeddedProvider implements AccountProvider {
  constructor(readonly idp: EmbeddedIdp) {}

  signUp(): Promise<never> {
    return Promise.reject(new ProviderError('refused', 'ADMIN_ONLY_OPERATION'));
  }

  signInWithPassword(email: string, password: string, ip = 'unknown'): Promise<PasswordSignIn> {
    return mapped(() => this.idp.signInWithPassword(email, password, ip));
  }

  lookup(idToken: string): Promise<ProviderAccount | undefined> {
    return mapped(async () => {
      const { user } = await this.idp.accountOf(idToken);
      return { localId: user.id, email: user.email, emailVerified: true, ...(user.phone ? { phoneNumber: user.phone } : {}), disabled: false };
    });
  }

  /** Nothing to roll back: the account is the users row, made (or not) in the sign-up's own transaction. */
  async deleteAccount(): Promise<void> {}

  sendVerificationCode(body: { phoneNumber: string }): Promise<{ sessionInfo: string }> {
    return mapped(async () => ({ sessionInfo: await this.idp.sendVerificationCode(body.phoneNumber) }));
  }

  signInWithPhoneNumber(sessionInfo: string, code: string): Promise<PhoneSignIn> {
    return mapped(async () => ({ ...await this.idp.signInWithPhoneNumber(sessionInfo, code), isNewUser: false }));
  }

  async revokeSessions(uid: string, validSince: number): Promise<void> {
    await this.idp.d.store.tx(async () => await this.idp.revoke(uid, validSince));
  }

  /** Company deletion: the accounts are the company's users rows, deleted with it (refresh tokens cascade). */
  async deleteAccountsByUid(): Promise<number> {
    return 0;
  }
}
