import Router from '@koa/router';
import { z } from 'zod';
import { actorOf, tenantOf, type AppRouter } from '../context.js';
import { auth } from '../http/auth.js';
import { bodyOf, validate } from '../http/pipeline.js';
import { rule } from '../policy.js';
import { frequencyOf, setFrequency } from './service.js';

/** Every member chooses their own report e-mails. */
export const digestsPolicy = { own: rule('staff', 'choose report e-mails') };

export const SubscriptionBody = z.object({ frequency: z.enum(['daily', 'weekly', 'off'], { error: 'must be daily, weekly or off' }) }).strict();

export function digestsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/reports/subscription' });
  r.get('/', auth(digestsPolicy.own), async (ctx) => {
    const a = actorOf(ctx);
    ctx.body = { frequency: await frequencyOf(ctx.deps.store.db, { id: a.userId, role: a.role }), hour: ctx.deps.config.FOOTFALL_REPORT_EMAIL_HOUR, email: a.email };
  });
  r.put('/', auth(digestsPolicy.own), validate({ body: SubscriptionBody }), async (ctx) => {
    const a = actorOf(ctx);
    await setFrequency(ctx.deps.store.db, { id: a.userId, companyId: tenantOf(ctx) }, bodyOf(ctx, SubscriptionBody).frequency);
    ctx.body = { frequency: await frequencyOf(ctx.deps.store.db, { id: a.userId, role: a.role }), hour: ctx.deps.config.FOOTFALL_REPORT_EMAIL_HOUR, email: a.email };
  });
  return r;
}
