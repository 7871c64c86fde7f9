import Router from '@koa/router';
import { z } from 'zod';
import { audit } from '../audit/service.js';
import { actorOf, tenantOf, type AppRouter } from '../context.js';
import { customerOr404 } from '../customers/service.js';
import { auth } from '../http/auth.js';
import { conflict } from '../http/errors.js';
import { bodyOf, queryOf, validate } from '../http/pipeline.js';
import { customerRef } from '../references/customers.js';
import { resolve } from '../references/resolver.js';
import { shopRef } from '../references/shops.js';
import { getShop } from '../shops/service.js';
import { purchasesPolicy } from './policy.js';
import { presentPurchase } from './presenter.js';
import { isCurrency, minorDigits, purchasesOf, recordPurchase, samePurchase, toMinor } from './service.js';

export const PurchaseBody = z
  .strictObject({
    /** Optional idempotency key made by the client: a retry with the same id and content answers the stored sale. */
    purchase_id: z.uuid('must be a uuid').optional(),
    visitor_id: z.string().trim().min(1, 'is required: the customer (id, V-number or number)').max(100),
    site_id: z.string().trim().min(1, 'is required: the shop (id or slug)').max(200),
    amount: z.number().positive('must be more than 0').max(1e12, 'is too large'),
    currency: z
      .string()
      .trim()
      .toUpperCase()
      .refine(isCurrency, 'must be an ISO 4217 currency code such as INR, USD or EUR'),
    items: z.array(z.string().trim().min(1, 'must not be empty').max(200)).max(200, 'at most 200 items').default([]),
    source: z.string().trim().max(64).default(''),
    notes: z.string().trim().max(2000).default(''),
  })
  .superRefine((p, c) => {
    if (isCurrency(p.currency) && toMinor(p.amount, p.currency) === undefined) {
      const d = minorDigits(p.currency);
      c.addIssue({ code: 'custom', path: ['amount'], message: d === 0 ? `${p.currency} has no decimals` : `${p.currency} has at most ${d} decimals` });
    }
  });

/** GET /api/visitors/{id}/purchases: `limit` 1 to 500, default 100. */
export const PurchasesQuery = z.object({
  limit: z.string().trim().regex(/^\d{1,3}$/, 'must be a whole number from 1 to 500').transform(Number).refine((n) => n >= 1 && n <= 500, 'must be from 1 to 500').optional(),
});

export function purchasesRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api' });

  /** A customer's purchases, newest first (not in the spec: docs/visits-and-customers.md). */
  r.get('/visitors/:id/purchases', auth(purchasesPolicy.view), validate({ query: PurchasesQuery }), async (ctx) => {
    const db = ctx.deps.store.db;
    const companyId = tenantOf(ctx);
    const customer = await customerOr404(db, companyId, await resolve(db, customerRef, companyId, String(ctx.params.id), 'path'));
    const { limit = 100 } = queryOf(ctx, PurchasesQuery);
    ctx.body = (await purchasesOf(db, customer.id, limit)).map(({ purchase, shop }) => presentPurchase(purchase, customer, shop ?? undefined));
  });

  /**
   * Records a sale for a customer in a shop. 201 with the purchase; a retry with the same purchase_id and content
   * answers 200 with the stored one (409 if the content differs). Unknown customer or shop: 404.
   */
  r.post('/purchases', auth(purchasesPolicy.record), validate({ body: PurchaseBody }), async (ctx) => {
    const b = bodyOf(ctx, PurchaseBody);
    const { store } = ctx.deps;
    const companyId = tenantOf(ctx);
    const actor = actorOf(ctx);
    const { row, customer, shop, created } = await store.tx(async () => {
      // Inside the body: on PostgreSQL store.db is the transaction's connection only there.
      const db = store.db;
      const customer = await customerOr404(db, companyId, await resolve(db, customerRef, companyId, b.visitor_id, 'path'));
      const shop = (await getShop(db, await resolve(db, shopRef, companyId, b.site_id, 'path')))!;
      const input = {
        id: b.purchase_id?.toLowerCase(),
        companyId,
        customerId: customer.id,
        shopId: shop.id,
        amountMinor: toMinor(b.amount, b.currency)!,
        currency: b.currency,
        items: b.items,
        source: b.source,
        notes: b.notes,
        createdBy: actor.userId,
        createdByEmail: actor.email,
      };
      const { row, created } = await recordPurchase(db, input);
      if (!created) {
        if (!samePurchase(row, input)) throw conflict('purchase_id: a different purchase was already recorded with this id.');
        return { row, customer, shop, created };
      }
      await audit(ctx, { action: 'purchase.create', target: row.id, detail: { visitor_id: customer.id, site_id: shop.id, amount_minor: row.amountMinor, currency: row.currency } });
      return { row, customer, shop, created };
    });
    ctx.status = created ? 201 : 200;
    ctx.body = presentPurchase(row, customer, shop);
  });

  return r;
}
