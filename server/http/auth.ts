import type { Ctx, Mw } from '../context.js';
import { atLeast, type Rule } from '../policy.js';
import { findByAccessToken, touchSession } from '../auth/sessions.js';
import { tokenKind } from '../auth/tokens.js';
import { describesSecurity } from './describe.js';
import { addLogField } from './middleware.js';
import { forbidden, noSuchRoute, notFound, tokenExpired, unauthorized } from './errors.js';

/** The bearer token of a request, if any. */
export function bearer(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/** Admin routes do not exist for anyone else: the very answer an unknown route gets (errors middleware). */
const adminOnly = (ctx: Ctx) => noSuchRoute(ctx.method, ctx.path);

/**
 * auth(rule): the first step of every protected route. Resolves the bearer token to a live user session and
 * applies the rule:
 * - no or unknown token: 401 unauthorized (404 on admin routes, which do not exist for anyone else);
 * - an expired access token of a live session: 401 token_expired;
 * - platform admin on tenant routes, anyone else on admin routes: 404;
 * - a tenant role below the rule's: 403 forbidden with the rule's message.
 * Shop-PC tokens are refused here: user routes never accept them.
 */
export function auth(rule: Rule): Mw {
  const adminRoute = rule.least === 'admin';
  return describesSecurity<Mw>(async (ctx, next) => {
    const token = bearer(ctx.get('Authorization'));
    if (!token) throw adminRoute ? adminOnly(ctx) : unauthorized();
    if (tokenKind(token) === 'agent') {
      throw adminRoute ? adminOnly(ctx) : unauthorized('Shop-PC tokens cannot be used on user routes.');
    }
    const found = findByAccessToken(ctx.deps.store.db, token);
    const now = new Date().toISOString();
    if (!found || found.session.revokedAt || found.session.expiresAt <= now || !found.user.active || (found.company && !found.company.active)) {
      throw adminRoute ? adminOnly(ctx) : unauthorized('Your session has ended. Sign in again.');
    }
    const { session, user, company } = found;
    const isAdmin = user.role === 'admin';
    if (adminRoute && !isAdmin) throw adminOnly(ctx);
    if (session.accessExpiresAt <= now) throw tokenExpired();
    if (rule.least !== 'any' && rule.least !== 'admin') {
      if (isAdmin) throw notFound('That');
      if (!atLeast(user.role, rule.least)) throw forbidden(rule.message);
    }
    touchSession(ctx.deps.store.db, session);
    ctx.state.actor = {
      userId: user.id,
      sessionId: session.id,
      companyId: user.companyId,
      companyName: company?.name ?? '',
      role: user.role,
      email: user.email,
      fullName: user.fullName,
    };
    addLogField(ctx, 'user_id', user.id);
    await next();
  }, { scheme: 'userBearer', least: rule.least, message: rule.message });
}
