import Router from '@koa/router';
import { noSpend, rankCustomers, SORTS, spendOf } from './ranking.js';
import { z } from 'zod';
import { audit } from '../audit/service.js';
import { tenantOf, type AppRouter, type Ctx } from '../context.js';
import { dbVersion, readCache } from '../db/read-cache.js';
import { auth } from '../http/auth.js';
import { HttpError, badRequest, notFound, preconditionFailed } from '../http/errors.js';
import { bodyOf, queryOf, validate } from '../http/pipeline.js';
import { customerRef as customerRefKind } from '../references/customers.js';
import { resolve } from '../references/resolver.js';
import { presentAttributes, presentSimilarity, presentStay } from '../visits/presenter.js';
import { exportCustomer } from './export.js';
import { findServableFace, latestFaceOf, readFace } from './faces.js';
import { customersPolicy } from './policy.js';
import { customerRef, faceUrl, ifMatchAllows, presentCustomer, presentProfile, profileTag, type CustomerRow } from './presenter.js';
import { auditPhotoLinks, customerOr404, eraseCustomer, historyOf, markStaff, mergeCustomers, replaceProfile, searchCustomers } from './service.js';

const wholeNumber = z.string().trim().regex(/^\d{1,7}$/, 'must be a whole number').transform(Number);

export const SearchQuery = z.object({
  q: z.string().max(200).optional(),
  limit: wholeNumber.optional(),
  /** Additive (docs/visits-and-customers.md): recent (default), visits or spend; ignored with `q`. */
  sort: z.enum(SORTS, { error: 'must be recent, visits or spend' }).optional(),
  /** Additive: only customers last seen this many days ago or earlier (1 to 3650). */
  lapsed_days: wholeNumber.refine((n) => n >= 1 && n <= 3650, 'must be from 1 to 3650').optional(),
  /** `true`: only staff; `false`: only customers who are not; absent: everyone. */
  staff: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
});

export const CustomerPatch = z.strictObject({
  staff: z.boolean({ error: (i) => (i.input === undefined ? 'is required (true or false): whether this person works for the company' : 'must be true or false') }),
});

/** `+` and 7 to 15 digits after removing spaces, dashes, dots and brackets; a leading `00` counts as `+`. */
export function normalisePhone(input: string): string | undefined {
  const compact = input.replace(/[\s().-]/g, '').replace(/^00/, '+');
  return /^\+[1-9][0-9]{6,14}$/.test(compact) ? compact : undefined;
}

/** A real calendar date as YYYY-MM-DD, from 1900-01-01 to today. */
export function isBirthDate(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === v && v >= '1900-01-01' && v <= new Date().toISOString().slice(0, 10);
}

const text = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .nullish()
    .transform((v) => (v ?? '').trim());

export const ProfileBody = z.strictObject({
  full_name: text(200),
  phone: text(40).transform((v, c) => {
    if (v === '') return '';
    const p = normalisePhone(v);
    if (!p) {
      c.addIssue({ code: 'custom', message: 'must be an international number: + and the country code, then 7 to 15 digits in all (spaces and dashes allowed)' });
      return z.NEVER;
    }
    return p;
  }),
  email: text(254).refine((v) => v === '' || z.email().safeParse(v).success, 'must be an email address').transform((v) => v.toLowerCase()),
  gender: text(32),
  date_of_birth: text(10).refine((v) => v === '' || isBirthDate(v), 'must be a real date as YYYY-MM-DD, not in the future'),
  notes: text(2000),
  consent: z.boolean({ error: (i) => (i.input === undefined ? 'is required (true or false): it records whether the customer agreed to be recognised' : 'must be true or false') }),
});

export const MergeBody = z.strictObject({
  into: z.string().trim().min(1, 'is required: the customer (id or V-number) to keep').max(100),
});

/** The live customer named in the path (uuid, V-<n>, n); a merged-away one resolves to the survivor. 404 otherwise. */
async function customerInPath(ctx: Ctx): Promise<CustomerRow> {
  const db = ctx.deps.store.db;
  const id = await resolve(db, customerRefKind, tenantOf(ctx), String(ctx.params.id), 'path');
  return await customerOr404(db, tenantOf(ctx), id);
}

function imagesDisabled(): HttpError {
  return new HttpError(404, 'images_disabled', 'This server stores no customer photos (FOOTFALL_IMAGES is off).');
}

export function customersRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api' });

  r.get('/visitors', auth(customersPolicy.view), validate({ query: SearchQuery }), async (ctx) => {
    const q = queryOf(ctx, SearchQuery);
    const { config, store } = ctx.deps;
    const max = config.FOOTFALL_VISITOR_SEARCH_LIMIT_MAX;
    const limit = q.limit ?? config.FOOTFALL_VISITOR_SEARCH_LIMIT_DEFAULT;
    if (limit < 1 || limit > max) throw badRequest(`limit: must be from 1 to ${max}`);
    const staff = q.staff === undefined ? undefined : q.staff === 'true';
    const companyId = tenantOf(ctx);
    const text = (q.q ?? '').trim();
    const list = async () => {
      const ranked = text === '' && (q.sort !== undefined || q.lapsed_days !== undefined);
      const rows = ranked ? (await rankCustomers(store.db, companyId, q.sort ?? 'recent', q.lapsed_days, limit, staff)) : await searchCustomers(store.db, companyId, q.q, limit, staff);
      const spend = await spendOf(store.db, rows.map((c) => c.id));
      return rows.map((c) => ({ ...presentCustomer(c), ...(spend.get(c.id) ?? noSpend) }));
    };
    // A search, or a lapsed filter (it moves with the clock), is read every time.
    if (text !== '' || q.lapsed_days !== undefined) {
      ctx.body = await list();
      return;
    }
    // The lists without a query (the app's customer list, the console's orders): read again only when the database
    // changed.
    const cache = readCache<string>(store.db, 'visitors-recent', 256);
    const key = `${companyId}|${limit}|${q.sort ?? ''}|${staff ?? ''}`;
    const version = dbVersion(store.db);
    let json = cache.get(key, version);
    if (json === undefined) {
      json = JSON.stringify(await list());
      cache.set(key, version, json);
    }
    ctx.type = 'json';
    ctx.body = json;
  });

  /**
   * Marks a customer as staff (or not): their visits make no arrivals and footfall and conversion reports leave them
   * out, their past visits included (docs/visits-and-customers.md, "Staff").
   */
  r.patch('/visitors/:id', auth(customersPolicy.markStaff), validate({ body: CustomerPatch }), async (ctx) => {
    const { staff } = bodyOf(ctx, CustomerPatch);
    const row = await ctx.deps.store.tx(async () => await markStaff(ctx, await customerInPath(ctx), staff));
    ctx.set('ETag', profileTag(row));
    ctx.body = { ...presentCustomer(row), ...((await spendOf(ctx.deps.store.db, [row.id])).get(row.id) ?? noSpend), profile: presentProfile(row) };
  });

  r.get('/visitors/:id', auth(customersPolicy.view), async (ctx) => {
    const c = await customerInPath(ctx);
    await audit(ctx, { action: 'customer.view', target: c.id, detail: { ref: customerRef(c.number), read: 'profile' } });
    ctx.set('ETag', profileTag(c));
    ctx.body = { ...presentCustomer(c), ...((await spendOf(ctx.deps.store.db, [c.id])).get(c.id) ?? noSpend), profile: presentProfile(c) };
  });

  r.get('/visitors/:id/history', auth(customersPolicy.view), async (ctx) => {
    const c = await customerInPath(ctx);
    await audit(ctx, { action: 'customer.view', target: c.id, detail: { ref: customerRef(c.number), read: 'history' } });
    ctx.body = (await historyOf(ctx.deps.store.db, c.id)).map((v) => ({
      id: v.visitId,
      occurred_at: v.occurredAt,
      ...presentStay(v),
      site: v.shopName,
      site_id: v.shopId,
      site_slug: v.shopSlug,
      camera_id: v.cameraId,
      is_new_visitor: v.isNewVisitor,
      similarity: presentSimilarity(v),
      quality: v.quality,
      attributes: presentAttributes(v),
    }));
  });

  /**
   * Whole replace. With `If-Match` (the ETag of GET /api/visitors/{id}), only if the profile is still the one read:
   * else 412 and nothing changes, so two people editing at once cannot undo each other's change unseen.
   */
  r.put('/visitors/:id/profile', auth(customersPolicy.editProfile), validate({ body: ProfileBody }), async (ctx) => {
    const body = bodyOf(ctx, ProfileBody);
    const ifMatch = ctx.get('If-Match');
    const { store } = ctx.deps;
    const row = await store.tx(async () => {
      const current = await customerInPath(ctx);
      if (ifMatch && !ifMatchAllows(ifMatch, profileTag(current))) {
        throw preconditionFailed('Someone changed this profile since you read it (If-Match does not match its ETag). Read it again, then save your change.');
      }
      return await replaceProfile(ctx, current, body);
    });
    ctx.set('ETag', profileTag(row));
    // With the lifetime spend (additive), like GET: the page that saved shows the customer from this answer.
    ctx.body = { ...presentCustomer(row), ...((await spendOf(store.db, [row.id])).get(row.id) ?? noSpend), profile: presentProfile(row) };
  });

  /** Subject access: everything held about the customer as a JSON download (docs/privacy.md). */
  r.get('/visitors/:id/export', auth(customersPolicy.export), async (ctx) => {
    const c = await customerInPath(ctx);
    const document = await ctx.deps.store.tx(async () => await exportCustomer(ctx, c));
    ctx.set('Content-Disposition', `attachment; filename="customer-${customerRef(c.number)}.json"`);
    ctx.body = document;
  });

  r.delete('/visitors/:id', auth(customersPolicy.erase), async (ctx) => {
    const c = await customerInPath(ctx);
    ctx.body = await eraseCustomer(ctx, c.id);
  });

  r.post('/visitors/:id/merge', auth(customersPolicy.merge), validate({ body: MergeBody }), async (ctx) => {
    const { into } = bodyOf(ctx, MergeBody);
    const { store, identities } = ctx.deps;
    const companyId = tenantOf(ctx);
    const out = await store.tx(async () => {
      const drop = await customerInPath(ctx);
      const keepId = await resolve(store.db, customerRefKind, companyId, into, 'path');
      if (keepId === drop.id) throw badRequest('into: a customer cannot be merged into itself.');
      const keep = await customerOr404(store.db, companyId, keepId);
      return { drop, ...await mergeCustomers(ctx, keep, drop) };
    });
    if (out.sameModel) identities.afterMerge(companyId, out.row.recognitionModel, out.row.id, out.drop.id, out.merged);
    else identities.afterErase(companyId, out.drop.recognitionModel, out.drop.id, undefined);
    ctx.body = { ...presentCustomer(out.row), profile: presentProfile(out.row), merged: { id: out.drop.id, ref: customerRef(out.drop.number), visits_moved: out.visitsMoved, visits_joined: out.visitsJoined } };
  });

  r.get('/visitors/:id/image', auth(customersPolicy.photos), async (ctx) => {
    const c = await customerInPath(ctx);
    if (ctx.deps.config.FOOTFALL_IMAGES === 'off') throw imagesDisabled();
    const face = await latestFaceOf(ctx.deps.store.db, c.id);
    if (!face) throw new HttpError(404, 'no_image', 'No photo of this customer has been captured.');
    await auditPhotoLinks(ctx, 'GET /api/visitors/{id}/image', [{ faceImageId: face.id, customerId: c.id }]);
    ctx.body = { available: true, url: faceUrl(face.id), auth: true };
  });

  r.get('/faces/:id', auth(customersPolicy.photos), async (ctx) => {
    const { config, store } = ctx.deps;
    if (config.FOOTFALL_IMAGES === 'off') throw imagesDisabled();
    const face = await findServableFace(store.db, tenantOf(ctx), String(ctx.params.id));
    if (!face) throw notFound('That photo');
    const jpeg = await readFace(ctx.deps, face);
    if (!jpeg) throw notFound('That photo');
    await audit(ctx, { action: 'photo.view', target: face.id, detail: { visitor_id: face.customerId } });
    ctx.set('Cache-Control', 'private, no-store');
    ctx.type = 'image/jpeg';
    ctx.body = jpeg;
  });

  return r;
}
