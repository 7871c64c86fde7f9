import type { Actor, Mw } from '../context.js';
import type { Db } from '../db/open.js';
import { atLeast, type Rule } from '../policy.js';
import { findByAccessToken, nowIso, touchSession } from '../auth/sessions.js';
import { tokenKind } from '../auth/tokens.js';
import { describesSecurity } from './describe.js';
import { addLogField } from './middleware.js';
import { HttpError, forbidden, noSuchRoute, notFound, tokenExpired, unauthorized } from './errors.js';

/** The bearer token of a request, if any. */
export function bearer(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * Who a bearer token belongs to under a rule: the actor, or the error the request gets. The one check both lanes run:
 * auth() below (every Koa route) and the fast lane (server/http/fast-lane.ts). Marks the session used (at most once a
 * minute). Shop-PC tokens are refused: user routes never accept them.
 * - no or unknown token: 401 unauthorized (404 on admin routes, which do not exist for anyone else);
 * - an expired access token of a live session: 401 token_expired;
 * - platform admin on tenant routes, anyone else on admin routes: 404;
 * - a tenant role below the rule's: 403 forbidden with the rule's message.
 */
export async function authenticate(db: Db, token: string | undefined, rule: Rule, method: string, path: string): Promise<Actor | HttpError> {
  const adminRoute = rule.least === 'admin';
  const adminOnly = () => noSuchRoute(method, path);
  if (!token) return adminRoute ? adminOnly() : unauthorized();
  if (tokenKind(token) === 'agent') {
    return adminRoute ? adminOnly() : unauthorized('Shop-PC tokens cannot be used on user routes.');
  }
  const found = await findByAccessToken(db, token);
  const now = nowIso();
  if (!found || found.session.revokedAt || found.session.expiresAt <= now || !found.user.active || (found.company && !found.company.active)) {
    return adminRoute ? adminOnly() : unauthorized('Your session has ended. Sign in again.');
  }
  const { session, user, company } = found;
  const isAdmin = user.role === 'admin';
  if (adminRoute && !isAdmin) return adminOnly();
  if (session.accessExpiresAt <= now) return tokenExpired();
  if (rule.least !== 'any' && rule.least !== 'admin') {
    if (isAdmin) return notFound('That');
    if (!atLeast(user.role, rule.least)) return forbidden(rule.message);
  }
  await touchSession(db, session);
  return {
    userId: user.id,
    sessionId: session.id,
    companyId: user.companyId,
    companyName: company?.name ?? '',
    role: user.role,
    email: user.email,
    fullName: user.fullName,
  };
}

/** auth(rule): the first step of every protected route (see authenticate). */
export function auth(rule: Rule): Mw {
  return describesSecurity<Mw>(async (ctx, next) => {
    const actor = await authenticate(ctx.deps.store.db, bearer(ctx.get('Authorization')), rule, ctx.method, ctx.path);
    if (actor instanceof HttpError) throw actor;
    ctx.state.actor = actor;
    addLogField(ctx, 'user_id', actor.userId);
    await next();
  }, { scheme: 'userBearer', least: rule.least, message: rule.message });
}
