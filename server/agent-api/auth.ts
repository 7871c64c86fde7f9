import { eq } from 'drizzle-orm';
import { hashToken, tokenKind } from '../auth/tokens.js';
import type { AgentCaller, Ctx, Mw } from '../context.js';
import { bearer } from '../http/auth.js';
import { describesSecurity } from '../http/describe.js';
import { unauthorized } from '../http/errors.js';
import { addLogField } from '../http/middleware.js';
import { one } from '../db/query.js';
import { companies, shops } from '../db/tables.js';

/**
 * agentAuth(): the first step of every /api/agent route but enrolment. Only a shop PC's own token (`ffs_...`)
 * passes; a user's session is refused with 401 (and user routes refuse shop-PC tokens, see server/http/auth.ts).
 * The token is revoked by re-enrolment (a new token replaces it) and by removing the shop.
 */
export function agentAuth(): Mw {
  return describesSecurity<Mw>(async (ctx, next) => {
    const token = bearer(ctx.get('Authorization'));
    if (!token) throw unauthorized("Send the shop PC's token: Authorization: Bearer ffs_...");
    const kind = tokenKind(token);
    if (kind !== 'agent') {
      throw unauthorized(kind ? 'Shop-PC routes take the shop PC’s own token, never a user session.' : 'That is not a shop-PC token. Enrol the shop PC to get one.');
    }
    const row = await one(ctx.deps.store.db
      .select({ shopId: shops.id, shopSlug: shops.slug, companyId: shops.companyId, companySlug: companies.slug, brokerUsername: shops.brokerUsername })
      .from(shops)
      .innerJoin(companies, eq(companies.id, shops.companyId))
      .where(eq(shops.agentTokenHash, hashToken(token))));
    if (!row) throw unauthorized('This shop-PC token is no longer valid: the shop PC was enrolled again or the shop was removed. Enrol it with a new code.');
    ctx.state.agent = row;
    addLogField(ctx, 'shop_id', row.shopId);
    await next();
  }, { scheme: 'shopBearer' });
}

export function agentOf(ctx: Ctx): AgentCaller {
  if (!ctx.state.agent) throw new Error('agent route has no agentAuth() in its pipeline');
  return ctx.state.agent;
}
