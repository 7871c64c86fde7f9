import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../audit/service.js';
import { actorOf, type Ctx } from '../context.js';
import { HttpError, badRequest, unauthorized } from '../http/errors.js';
import { bookAttempt, clearFailures } from './login-limits.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { revokeUserSessions } from './sessions.js';
import { one } from '../db/query.js';
import { users } from '../db/tables.js';

/**
 * POST /api/auth/password (docs/api-conventions.md, Own password): the signed-in person changes their own password.
 * The current password is required and checked like a sign-in (the same throttle: a stolen session cannot guess
 * it); the new one must have the configured minimum length and differ from the current one. Every other session of
 * the person is revoked; this one stays signed in.
 */
export const PasswordBody = z.strictObject({
  current_password: z.string().min(1, 'is required').max(1024, 'must be at most 1024 characters'),
  new_password: z.string().max(1024, 'must be at most 1024 characters'),
});

export async function changeOwnPassword(ctx: Ctx, body: z.output<typeof PasswordBody>): Promise<{ revoked: number }> {
  const { store, config } = ctx.deps;
  const actor = actorOf(ctx);
  const min = config.FOOTFALL_PASSWORD_MIN_LENGTH;
  if (body.new_password.length < min) throw badRequest(`new_password: must be at least ${min} characters`);
  if (body.new_password === body.current_password) throw badRequest('new_password: must differ from the current password');
  const user = await one(store.db.select().from(users).where(eq(users.id, actor.userId)));
  if (!user) throw unauthorized('Your session has ended. Sign in again.');
  const attempt = await store.tx(async () => await bookAttempt(store.db, config, user.email, ctx.ip || 'unknown'));
  if (attempt === undefined) throw new HttpError(429, 'too_many_attempts', 'Too many wrong passwords. Wait 15 minutes and try again.');
  if (!(await verifyPassword(user.passwordHash, body.current_password))) {
    throw new HttpError(403, 'forbidden', 'The current password is wrong, so the password was not changed.');
  }
  const hash = await hashPassword(body.new_password);
  return await store.tx(async () => {
    await clearFailures(store.db, user.email);
    await store.db.update(users).set({ passwordHash: hash }).where(eq(users.id, user.id));
    const revoked = await revokeUserSessions(store.db, user.id, 'password_changed', actor.sessionId);
    await audit(ctx, { action: 'auth.password.change', target: user.id, detail: { other_sessions_revoked: revoked } });
    return { revoked };
  });
}
