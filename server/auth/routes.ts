import Router from '@koa/router';
import { z } from 'zod';
import { actorOf, type AppRouter } from '../context.js';
import { auth } from '../http/auth.js';
import type { FastRoute } from '../http/fast-lane.js';
import { notFound, unauthorized } from '../http/errors.js';
import { bodyOf, transaction, validate } from '../http/pipeline.js';
import { deviceLabel } from './device.js';
import { changeOwnPassword, PasswordBody } from './password-change.js';
import { authPolicy } from './policy.js';
import { presentActor, presentDeviceSession, presentEnvelope } from './presenter.js';
import { login } from './service.js';
import { listUserSessions, revokeSession, revokeUserSessions, rotate } from './sessions.js';

const email = z.string().trim().toLowerCase().pipe(z.email('must be an email address'));
const device = z.string().max(200).optional();

export const LoginBody = z.object({ email, password: z.string().min(1, 'is required').max(1024), device });
export const RefreshBody = z.object({ refresh_token: z.string().min(1, 'is required').max(512), device });
const SessionId = z.uuid();

/** GET /api/auth/me: the signed-in person. Answered by the fast lane too (server/http/fast-lane.ts), from this definition. */
export const meRoute: FastRoute = { path: '/api/auth/me', rule: authPolicy.self, answer: (_deps, actor) => presentActor(actor) };

export function authRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/auth' });

  r.post('/login', validate({ body: LoginBody }), async (ctx) => {
    const body = bodyOf(ctx, LoginBody);
    const { issued, user, company } = await login(ctx, body.email, body.password, deviceLabel(body.device, ctx.get('User-Agent')));
    ctx.body = presentEnvelope(issued, user, company);
  });

  r.post(
    '/refresh',
    validate({ body: RefreshBody }),
    transaction(async (ctx) => {
      const body = bodyOf(ctx, RefreshBody);
      const device = body.device === undefined ? undefined : deviceLabel(body.device, undefined);
      const result = await rotate(ctx.deps.store.db, ctx.deps.config, body.refresh_token, device);
      if (!result.ok) {
        if (result.reason === 'reused') {
          // Commit the revocation, then refuse: this token was already used, so a copy of it is abroad.
          ctx.status = 401;
          ctx.body = { error: 'unauthorized', message: 'This refresh token was already used, so the session has been signed out to keep it safe. Sign in again.' };
          return;
        }
        throw unauthorized('This session has ended. Sign in again.');
      }
      ctx.body = presentEnvelope(result.issued, result.user, result.company);
    }),
  );

  r.post(
    '/logout',
    auth(authPolicy.self),
    transaction(async (ctx) => {
      await revokeSession(ctx.deps.store.db, actorOf(ctx).sessionId, 'logout');
      ctx.status = 204;
    }),
  );

  /** Own password (docs/api-conventions.md): current password required; the person's other sessions are revoked. */
  r.post('/password', auth(authPolicy.self), validate({ body: PasswordBody }), async (ctx) => {
    ctx.body = await changeOwnPassword(ctx, bodyOf(ctx, PasswordBody));
  });

  r.get('/me', auth(meRoute.rule), (ctx) => {
    ctx.body = meRoute.answer(ctx.deps, actorOf(ctx));
  });

  r.get('/sessions', auth(authPolicy.self), async (ctx) => {
    const actor = actorOf(ctx);
    ctx.body = (await listUserSessions(ctx.deps.store.db, actor.userId)).map((s) => presentDeviceSession(s, actor.sessionId));
  });

  r.post(
    '/sessions/revoke-others',
    auth(authPolicy.self),
    transaction(async (ctx) => {
      const actor = actorOf(ctx);
      ctx.body = { revoked: await revokeUserSessions(ctx.deps.store.db, actor.userId, 'revoked_by_user', actor.sessionId) };
    }),
  );

  r.delete(
    '/sessions/:id',
    auth(authPolicy.self),
    transaction(async (ctx) => {
      const actor = actorOf(ctx);
      const id = SessionId.safeParse(ctx.params.id);
      const own = id.success && (await listUserSessions(ctx.deps.store.db, actor.userId)).some((s) => s.id === id.data);
      if (!id.success || !own) throw notFound('That session');
      await revokeSession(ctx.deps.store.db, id.data, 'revoked_by_user');
      ctx.status = 204;
    }),
  );

  return r;
}

