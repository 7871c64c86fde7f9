import Router from '@koa/router';
import { z } from 'zod';
import { tenantOf, type AppRouter } from '../context.js';
import { eq } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { auth } from '../http/auth.js';
import { bodyOf, validate } from '../http/pipeline.js';
import { privacyPolicy } from './policy.js';
import { presentPrivacy } from './presenter.js';
import { RECOGNITION_MODES } from './schema.js';
import { notifyShop, type ShopAddress } from '../shops/notices.js';
import { changePrivacy, privacyOf } from './service.js';
import { companies, shops } from '../db/tables.js';

const days = (what: string) => z.number({ error: `must be a whole number of days (${what})` }).int('must be a whole number of days').min(1, 'must be at least 1 day').max(3650, 'must be at most 3650 days');

export const PrivacyPatch = z
  .strictObject({
    recognition: z.enum(RECOGNITION_MODES, { error: 'must be all, consented or off' }).optional(),
    template_retention_days: days('templates of customers without consent').optional(),
    visit_retention_days: days('visits and door crossings').nullable().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, 'Send at least one of recognition, template_retention_days, visit_retention_days.');

/** Every shop of the company, to be told to pull its camera list again (which carries the recognition mode). */
async function shopAddressesOf(db: Db, companyId: string): Promise<ShopAddress[]> {
  return await db.select({ companySlug: companies.slug, shopSlug: shops.slug }).from(shops).innerJoin(companies, eq(companies.id, shops.companyId)).where(eq(shops.companyId, companyId));
}

export function privacyRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/company' });

  r.get('/privacy', auth(privacyPolicy.read), async (ctx) => {
    ctx.body = presentPrivacy(await privacyOf(ctx.deps.store.db, tenantOf(ctx)));
  });

  /**
   * Changes the settings; existing data follows by the privacy sweep, which starts at once. A recognition change is
   * pushed to the company's shop PCs (they pull their camera list, which carries it).
   */
  r.patch('/privacy', auth(privacyPolicy.change), validate({ body: PrivacyPatch }), async (ctx) => {
    const body = bodyOf(ctx, PrivacyPatch);
    const companyId = tenantOf(ctx);
    const { store } = ctx.deps;
    const { before, after } = await store.tx(async () => await changePrivacy(ctx, companyId, body));
    if (before.recognition !== after.recognition) {
      for (const address of (await shopAddressesOf(store.db, companyId))) notifyShop(ctx.deps.broker, ctx.log, address, 'cameras', { kind: 'cameras_changed', at: new Date().toISOString() });
    }
    void ctx.deps.privacy?.request();
    ctx.body = presentPrivacy(after);
  });

  return r;
}
