import Router from '@koa/router';
import { companyCounting, silentDoors } from '../cameras/counting.js';
import { z } from 'zod';
import { audit } from '../audit/service.js';
import { shopCameraStates } from '../cameras/service.js';
import { slugProblem, slugify } from '../clients/slug.js';
import { actorOf, tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { badRequest, conflict, notFound } from '../http/errors.js';
import { bodyOf, queryOf, validate } from '../http/pipeline.js';
import { shopRef } from '../references/shops.js';
import { resolve } from '../references/resolver.js';
import { checkShop } from './check.js';
import { OpeningHoursInput } from './hours.js';
import { mapInfraErrors, requireKey } from './errors.js';
import { clearRetained, shopAddress } from './notices.js';
import { shopsPolicy } from './policy.js';
import { presentEnrolmentCode, presentOpenedShop, presentShopCheck, presentSite } from './presenter.js';
import { shopsToday } from '../crossings/service.js';
import {
  DEFAULT_TIMEZONE,
  canonicalTimezone,
  companySlugOf,
  createEnrolmentCode,
  createShop,
  deleteShop,
  freeShopSlug,
  getShop,
  listShops,
  shopBlockers,
  updateShop,
  type ShopRow,
} from './service.js';

export const CreateShopBody = z.object({
  name: z.string().trim().min(1, 'is required').max(200),
  slug: z.string().trim().max(200).optional(),
  timezone: z.string().trim().max(64).optional(),
});

/** PATCH /api/sites/{site}: the shop's settings (additive fields; docs/operations.md). Omitted: unchanged; null: cleared. */
export const PatchShopBody = z
  .object({
    name: z.string().trim().min(1, 'is required').max(200).optional(),
    opening_hours: OpeningHoursInput.nullable().optional(),
    region: z
      .string()
      .trim()
      .max(100, 'must be at most 100 characters')
      .nullable()
      .optional()
      .transform((v) => (v === '' ? null : v)),
    occupancy_limit: z.number().int('must be a whole number').min(1, 'must be at least 1').max(100_000, 'must be at most 100000').nullable().optional(),
  })
  .strict();

/** GET /api/sites: `region` keeps the shops of that region (an empty value: the shops without one). */
export const SitesQuery = z.object({ region: z.string().trim().max(100, 'must be at most 100 characters').optional() });

export const EnrolmentCodeBody = z.object({
  label: z.string().trim().max(100).optional(),
  days: z.number().int('must be a whole number').min(1, 'must be at least 1').optional(),
});

/** The shop named in the path (slug or uuid), in the caller's company; 404 otherwise. */
export async function shopInPath(ctx: Ctx): Promise<ShopRow> {
  const db = ctx.deps.store.db;
  const id = await resolve(db, shopRef, tenantOf(ctx), String(ctx.params.site), 'path');
  const shop = await getShop(db, id);
  if (!shop) throw notFound('That shop');
  return shop;
}

export function shopsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/sites' });

  r.get('/', auth(shopsPolicy.view), validate({ query: SitesQuery }), async (ctx) => {
    const now = Date.now();
    const db = ctx.deps.store.db;
    const { region } = queryOf(ctx, SitesQuery);
    const list = (await listShops(db, tenantOf(ctx))).filter((s) => region === undefined || (s.region ?? '') === region);
    const today = await shopsToday(db, list, new Date(now));
    const silent = await silentDoors(db, ctx.deps.config, tenantOf(ctx), now);
    ctx.body = list.map((s) => presentSite(s, ctx.deps.config, today.get(s.id)!, now, silent.get(s.id) ?? null));
  });

  r.get('/:site', auth(shopsPolicy.view), async (ctx) => {
    const now = Date.now();
    const shop = await shopInPath(ctx);
    const today = await shopsToday(ctx.deps.store.db, [shop], new Date(now));
    const silent = await silentDoors(ctx.deps.store.db, ctx.deps.config, shop.companyId, now);
    ctx.body = presentSite(shop, ctx.deps.config, today.get(shop.id)!, now, silent.get(shop.id) ?? null);
  });

  r.post('/', auth(shopsPolicy.open), validate({ body: CreateShopBody }), async (ctx) => {
    const body = bodyOf(ctx, CreateShopBody);
    const { config, store, shopLogins } = ctx.deps;
    const companyId = tenantOf(ctx);
    requireKey(ctx, 'open shops');
    const min = config.FOOTFALL_SLUG_MIN_LENGTH;
    const max = config.FOOTFALL_SLUG_MAX_LENGTH;
    let slug: string | undefined;
    let derived: string | undefined;
    if (body.slug) {
      slug = body.slug.toLowerCase().replace(/[/+#]/g, '');
      const problem = slugProblem(slug, min, max);
      if (problem) throw badRequest(`slug: ${problem}`);
    } else {
      derived = slugify(body.name, max);
      if (derived.length < min) throw badRequest(`slug: could not derive one from "${body.name}"; send a slug of ${min} to ${max} lower-case letters, digits and dashes`);
    }
    const timezone = body.timezone ? canonicalTimezone(body.timezone) : DEFAULT_TIMEZONE;
    if (!timezone) throw badRequest(`timezone: "${body.timezone}" is not an IANA time zone name (for example Asia/Kolkata or Europe/London)`);
    try {
      const { sealed } = shopLogins.newSecret();
      // One opening at a time per company (PostgreSQL; the lock is taken before BEGIN, so each sees the previous one's
      // shop): each reads the company's slugs and inserts one, so openings at once formed read/write cycles on the
      // slug index and exhausted the re-runs (a 500), or took the same derived slug (a unique violation, also a 500).
      const shop = await store.tx(async () => {
        const made = await createShop(store.db, {
                  companyId,
                  companySlug: await companySlugOf(store.db, companyId),
                  name: body.name,
                  slug: slug ?? (await freeShopSlug(store.db, companyId, derived!, max)),
                  timezone,
                  sealedSecret: sealed,
                });
        await audit(ctx, { action: 'shop.open', target: made.id, detail: { slug: made.slug, broker_username: made.brokerUsername } });
        // Registration with the broker is the last step: if it refuses, the transaction (shop and login) rolls back.
        shopLogins.assertAccepting();
        return made;
      }, { locks: [`shops:${companyId}`] });
      ctx.status = 201;
      ctx.body = presentOpenedShop(shop);
    } catch (err) {
      throw mapInfraErrors(err, 'open shops');
    }
  });

  r.patch('/:site', auth(shopsPolicy.edit), validate({ body: PatchShopBody }), async (ctx) => {
    const body = bodyOf(ctx, PatchShopBody);
    const { store } = ctx.deps;
    const now = Date.now();
    const shop = await store.tx(async () => {
      const found = await shopInPath(ctx);
      const changes = {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.opening_hours !== undefined ? { openingHours: body.opening_hours } : {}),
        ...(body.region !== undefined ? { region: body.region } : {}),
        ...(body.occupancy_limit !== undefined ? { occupancyLimit: body.occupancy_limit } : {}),
      };
      const updated = await updateShop(store.db, found.id, changes);
      await audit(ctx, { action: 'shop.edit', target: found.id, detail: { slug: found.slug, fields: Object.keys(body) } });
      return updated;
    });
    const today = await shopsToday(store.db, [shop], new Date(now));
    ctx.body = presentSite(shop, ctx.deps.config, today.get(shop.id)!, now);
  });

  r.delete('/:site', auth(shopsPolicy.remove), async (ctx) => {
    const { store, shopLogins, broker, log } = ctx.deps;
    const shop = await store.tx(async () => {
      const found = await shopInPath(ctx);
      const blockers = await shopBlockers(store.db, found.id);
      if (blockers.length > 0) throw conflict(`${found.name} cannot be removed: ${blockers.join('; ')}.`, 'site_not_empty');
      const address = await shopAddress(store.db, found.id);
      await deleteShop(store.db, found.id);
      await audit(ctx, { action: 'shop.remove', target: found.id, detail: { slug: found.slug, broker_username: found.brokerUsername } });
      return { ...found, address };
    });
    // Committed: the login is gone from the database; now end its connections.
    const closed = await shopLogins.end(shop.brokerUsername, { remove: true }).catch((err: unknown) => {
      log.error({ err, username: shop.brokerUsername }, 'the broker has not removed the shop login yet (retried)');
      return undefined;
    });
    if (shop.address) clearRetained(broker, shop.address);
    log.info({ shop_id: shop.id, connections_closed: closed }, 'shop removed');
    ctx.body = { deleted: shop.slug, site_id: shop.id };
  });

  r.get('/:site/check', auth(shopsPolicy.view), async (ctx) => {
    const shop = await shopInPath(ctx);
    const cams = await shopCameraStates(ctx.deps.store.db, shop.id, (await companyCounting(ctx.deps.store.db, ctx.deps.config, shop.companyId, shop.id)).health);
    ctx.body = presentShopCheck(shop, checkShop(shop, cams, ctx.deps.config));
  });

  r.post('/:site/enrolment-code', auth(shopsPolicy.enrolmentCode), validate({ body: EnrolmentCodeBody }), async (ctx) => {
    const body = bodyOf(ctx, EnrolmentCodeBody);
    const { config, store, keys } = ctx.deps;
    const max = config.FOOTFALL_ENROLMENT_CODE_DAYS_MAX;
    const days = body.days ?? config.FOOTFALL_ENROLMENT_CODE_DAYS_DEFAULT;
    if (days > max) throw badRequest(`days: must be at most ${max}`);
    requireKey(ctx, 'create enrolment codes');
    const actor = actorOf(ctx);
    try {
      ctx.body = await store.tx(async () => {
        const shop = await shopInPath(ctx);
        const { code, row } = await createEnrolmentCode(store.db, keys, { shop, label: body.label ?? '', days, requestedBy: actor.userId, requestedByEmail: actor.email });
        await audit(ctx, { action: 'shop.enrolment_code', target: shop.id, detail: { code_id: row.id, slug: shop.slug, label: row.label, expires_at: row.expiresAt } });
        return presentEnrolmentCode(code, row, shop);
      });
      ctx.status = 201;
    } catch (err) {
      throw mapInfraErrors(err, 'create enrolment codes');
    }
  });

  return r;
}
