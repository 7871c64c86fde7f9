import { eq } from 'drizzle-orm';
import type { Ctx } from '../context.js';
import { auditSignIn } from '../audit/service.js';
import { HttpError } from '../http/errors.js';
import { bookAttempt, clearFailures, forgetAttempt } from './login-limits.js';
import { verifyPassword } from './passwords.js';
import { createSession, type CompanyRow, type IssuedSession, type UserRow } from './sessions.js';
import { one } from '../db/query.js';
import { companies, users } from '../db/tables.js';

export interface SignedIn {
  issued: IssuedSession;
  user: UserRow;
  company: CompanyRow | null;
}

const badCredentials = () => new HttpError(401, 'bad_credentials', 'The email address or password is wrong.');
const tooMany = () => new HttpError(429, 'too_many_attempts', 'Too many failed sign-ins. Wait 15 minutes and try again.');

/**
 * Email and password sign-in. Unknown account and wrong password are the same answer, in the same time
 * (verifyPassword hashes a dummy). Throttled before the password is even checked; a right password for a
 * deactivated account or a suspended company is 403 and not counted as a failure.
 */
export async function login(ctx: Ctx, email: string, password: string, device: string): Promise<SignedIn> {
  const { store, config } = ctx.deps;
  const ip = ctx.ip || 'unknown';
  // Booked as a failure before the (slow) password check, so a burst of parallel guesses meets the limit too.
  const attempt = await store.tx(async () => await bookAttempt(store.db, config, email, ip));
  if (attempt === undefined) throw tooMany();
  const found = await one(store.db.select({ user: users, company: companies }).from(users).leftJoin(companies, eq(companies.id, users.companyId)).where(eq(users.email, email)));
  const ok = await verifyPassword(found?.user.passwordHash, password);
  if (!found || !ok) throw badCredentials(); // the booked row stays: it is this failure
  const { user, company } = found;
  if (user.role === 'admin' && user.companyId !== null) throw badCredentials();
  const refused = !user.active
    ? 'This account has been deactivated. Ask a manager or owner of your company to reactivate it.'
    : company && !company.active
      ? 'Your company is suspended. Contact your Footfall platform administrator.'
      : undefined;
  if (refused) {
    await store.tx(async () => await forgetAttempt(store.db, attempt)); // the password was right: not a failed guess
    throw new HttpError(403, 'forbidden', refused);
  }
  const issued = await store.tx(async () => {
    await clearFailures(store.db, email);
    await store.db.update(users).set({ lastLoginAt: new Date().toISOString() }).where(eq(users.id, user.id));
    await auditSignIn(store, user, 'password', ctx.state.requestId, { device });
    return await createSession(store.db, config, user, device);
  });
  return { issued, user, company };
}
