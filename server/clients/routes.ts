import Router from '@koa/router';
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { audit } from '../audit/service.js';
import { generatePassword, hashPassword } from '../auth/passwords.js';
import { revokeCompanySessions, revokeUserSessions } from '../auth/sessions.js';
import { endProviderSessions } from '../idp/tokens.js';
import type { AppRouter, Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { HttpError, badRequest, notFound } from '../http/errors.js';
import { bodyOf, validate } from '../http/pipeline.js';
import { clientsPolicy } from './policy.js';
import { presentCompany } from './presenter.js';
import { companyHealth, noHealth } from './health.js';
import { companyCounts, countsOf, createCompanyWithOwner, findCompany, freeSlug, listCompanies, ownersOf } from './service.js';
import { slugProblem, slugify } from './slug.js';
import { users, companies } from '../db/tables.js';

const email = z.string().trim().toLowerCase().pipe(z.email('must be an email address'));
const name = z.string().trim().min(1, 'is required').max(200);

export const CreateClientBody = z.object({
  company_name: name,
  slug: z.string().trim().max(200).optional(),
  owner_email: email,
  owner_name: name,
  password: z.string().max(1024).optional(),
});
export const PatchClientBody = z.object({ active: z.boolean({ error: 'must be true or false' }) });
export const OwnerPasswordBody = z.object({ email: email.optional() });
export const DeleteClientBody = z.object({ confirm: z.string({ error: "is required: type the company's slug to confirm" }) });

async function companyOr404(ctx: Ctx) {
  const company = await findCompany(ctx.deps.store.db, String(ctx.params.id));
  if (!company) throw notFound('That company');
  return company;
}

export function clientsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/admin' });
  r.use(auth(clientsPolicy.manage));

  r.get('/clients', async (ctx) => {
    const db = ctx.deps.store.db;
    const counts = await companyCounts(db);
    const health = await companyHealth(db, ctx.deps.config);
    ctx.body = (await listCompanies(db)).map((c) => ({ ...presentCompany(c, counts.get(c.id) ?? { sites: 0, users: 0 }), ...(health.get(c.id) ?? noHealth) }));
  });

  r.post('/clients', validate({ body: CreateClientBody }), async (ctx) => {
    const body = bodyOf(ctx, CreateClientBody);
    const { config, store } = ctx.deps;
    const min = config.FOOTFALL_SLUG_MIN_LENGTH;
    const max = config.FOOTFALL_SLUG_MAX_LENGTH;
    let slug: string;
    if (body.slug) {
      slug = body.slug.toLowerCase().replace(/[/+#]/g, '');
      const problem = slugProblem(slug, min, max);
      if (problem) throw badRequest(`slug: ${problem}`);
    } else {
      const derived = slugify(body.company_name, max);
      if (derived.length < min) throw badRequest(`slug: could not derive one from "${body.company_name}"; send a slug of ${min} to ${max} lower-case letters, digits and dashes`);
      slug = await freeSlug(store.db, derived, max);
    }
    const supplied = body.password?.length ? body.password : undefined;
    if (supplied && supplied.length < config.FOOTFALL_PASSWORD_MIN_LENGTH) {
      throw badRequest(`password: must be at least ${config.FOOTFALL_PASSWORD_MIN_LENGTH} characters (or leave it empty to have one generated)`);
    }
    const password = supplied ?? generatePassword();
    const passwordHash = await hashPassword(password);
    const { company, owner } = await store.tx(async () => {
      const made = await createCompanyWithOwner(store.db, { name: body.company_name, slug, ownerEmail: body.owner_email, ownerName: body.owner_name, passwordHash });
      await audit(ctx, { action: 'client.create', companyId: null, target: made.company.id, detail: { slug, owner_email: body.owner_email } });
      return made;
    });
    ctx.status = 201;
    ctx.body = { client_id: company.id, slug: company.slug, owner_email: owner.email, password };
  });

  r.patch('/clients/:id', validate({ body: PatchClientBody }), async (ctx) => {
    const { active } = bodyOf(ctx, PatchClientBody);
    const { store } = ctx.deps;
    ctx.body = await store.tx(async () => {
      const company = await companyOr404(ctx);
      let revoked = 0;
      if (company.active !== active) {
        await store.db
          .update(companies)
          .set({ active, suspendedAt: active ? null : new Date().toISOString() })
          .where(eq(companies.id, company.id));
        if (!active) revoked = await revokeCompanySessions(store.db, company.id, 'company_suspended');
        await audit(ctx, { action: active ? 'client.reactivate' : 'client.suspend', companyId: null, target: company.id, detail: { sessions_revoked: revoked } });
      }
      return { client: presentCompany({ ...company, active }, await countsOf(store.db, company.id)), sessions_revoked: revoked };
    });
  });

  r.post('/clients/:id/owner-password', validate({ body: OwnerPasswordBody }), async (ctx) => {
    const body = bodyOf(ctx, OwnerPasswordBody);
    const { store } = ctx.deps;
    const company = await companyOr404(ctx);
    const owners = await ownersOf(store.db, company.id);
    let owner;
    if (body.email) {
      owner = owners.find((o) => o.email === body.email);
      if (!owner) throw badRequest(`${body.email} is not an owner of ${company.name}. Owners: ${owners.map((o) => o.email).join(', ') || 'none'}.`, { owners: owners.map((o) => o.email) });
    } else {
      const active = owners.filter((o) => o.active);
      const candidates = active.length > 0 ? active : owners;
      if (candidates.length === 0) throw badRequest(`${company.name} has no owner.`, { owners: [] });
      if (candidates.length > 1) {
        throw badRequest(`${company.name} has several owners; say which one with "email": ${candidates.map((o) => o.email).join(', ')}.`, { owners: candidates.map((o) => o.email) });
      }
      owner = candidates[0]!;
    }
    const password = generatePassword();
    const passwordHash = await hashPassword(password);
    const target = owner;
    await store.tx(async () => {
      (await store.db.update(users).set({ passwordHash }).where(eq(users.id, target.id)));
      await endProviderSessions(store.db, target.id); // the same account on /auth's embedded provider
      const revoked = await revokeUserSessions(store.db, target.id, 'password_reset');
      await audit(ctx, { action: 'client.owner_password', companyId: null, target: target.id, detail: { company_id: company.id, email: target.email, sessions_revoked: revoked } });
    });
    ctx.body = { email: target.email, password };
  });

  r.delete('/clients/:id', validate({ body: DeleteClientBody }), async (ctx) => {
    const { confirm } = bodyOf(ctx, DeleteClientBody);
    const { store, purgers, log } = ctx.deps;
    const company = await companyOr404(ctx);
    if (company.active) throw new HttpError(409, 'still_active', `${company.name} is still active. Suspend it first (PATCH with "active": false), then delete it.`);
    if (confirm.trim().toLowerCase() !== company.slug) throw badRequest(`confirm: type the company's slug "${company.slug}" to confirm the deletion`);
    const removed: Record<string, number> = {};
    for (const purger of purgers) {
      try {
        removed[purger.name] = await purger.purge(company.id);
      } catch (err) {
        log.error({ err, purger: purger.name, company_id: company.id }, 'company deletion stopped');
        throw new HttpError(purger.failure.status, purger.failure.code, purger.failure.message);
      }
    }
    await store.tx(async () => {
      // Re-read: it may have been reactivated (or deleted) while the purgers ran.
      const now = await findCompany(store.db, company.id);
      if (!now) throw notFound('That company');
      if (now.active) throw new HttpError(409, 'still_active', `${company.name} was reactivated during the deletion; its rows were kept. Suspend it and delete it again.`);
      (await store.db.delete(companies).where(eq(companies.id, company.id)));
      await audit(ctx, { action: 'client.delete', companyId: null, target: company.id, detail: { slug: company.slug, ...removed } });
    });
    ctx.body = { deleted: company.slug, images_deleted: removed.images ?? 0 };
  });

  return r;
}
