import { randomUUID } from 'node:crypto';
import { and, count, eq } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import type { CompanyRow, UserRow } from '../auth/sessions.js';
import { conflict } from '../http/errors.js';
import type { CompanyCounts } from './presenter.js';
import { shopCounts } from '../shops/service.js';
import { one, returned } from '../db/query.js';
import { users, companies } from '../db/tables.js';

const uuidLike = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A company by uuid or by its slug (immutable, so safe for an admin to type). */
export async function findCompany(db: Db, idOrSlug: string): Promise<CompanyRow | undefined> {
  const where = uuidLike.test(idOrSlug) ? eq(companies.id, idOrSlug.toLowerCase()) : eq(companies.slug, idOrSlug.toLowerCase());
  return await one(db.select().from(companies).where(where));
}

export async function listCompanies(db: Db): Promise<CompanyRow[]> {
  return await db.select().from(companies).orderBy(companies.createdAt, companies.slug);
}

/** Shops and users per company. */
export async function companyCounts(db: Db): Promise<Map<string, CompanyCounts>> {
  const rows = await db.select({ companyId: users.companyId, n: count() }).from(users).groupBy(users.companyId);
  const sites = await shopCounts(db);
  const out = new Map<string, CompanyCounts>();
  for (const r of rows) if (r.companyId) out.set(r.companyId, { sites: sites.get(r.companyId) ?? 0, users: r.n });
  for (const [companyId, n] of sites) if (!out.has(companyId)) out.set(companyId, { sites: n, users: 0 });
  return out;
}

export async function countsOf(db: Db, companyId: string): Promise<CompanyCounts> {
  return (await companyCounts(db)).get(companyId) ?? { sites: 0, users: 0 };
}

export async function emailTaken(db: Db, email: string): Promise<boolean> {
  return (await one(db.select({ id: users.id }).from(users).where(eq(users.email, email)))) !== undefined;
}

export async function slugTaken(db: Db, slug: string): Promise<boolean> {
  return (await one(db.select({ id: companies.id }).from(companies).where(eq(companies.slug, slug)))) !== undefined;
}

/** A free slug: the derived one, or the derived one with -2, -3... (cut so it still fits). */
export async function freeSlug(db: Db, base: string, max: number): Promise<string> {
  if (!(await slugTaken(db, base))) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = base.slice(0, max - suffix.length).replace(/-+$/, '') + suffix;
    if (!(await slugTaken(db, candidate))) return candidate;
  }
}

/** Company and owner in one go; call inside a transaction. */
export async function createCompanyWithOwner(
  db: Db,
  input: { name: string; slug: string; ownerEmail: string; ownerName: string; passwordHash: string },
): Promise<{ company: CompanyRow; owner: UserRow }> {
  if (await slugTaken(db, input.slug)) throw conflict(`A company with the slug "${input.slug}" already exists.`);
  if (await emailTaken(db, input.ownerEmail)) throw conflict(`${input.ownerEmail} already has an account.`);
  const now = new Date().toISOString();
  const company = await returned(db.insert(companies).values({ id: randomUUID(), slug: input.slug, name: input.name, active: true, createdAt: now }).returning());
  const owner = await returned(db
    .insert(users)
    .values({ id: randomUUID(), companyId: company.id, email: input.ownerEmail, fullName: input.ownerName, role: 'owner', passwordHash: input.passwordHash, active: true, createdAt: now })
    .returning());
  return { company, owner };
}

export async function ownersOf(db: Db, companyId: string): Promise<UserRow[]> {
  return await db
    .select()
    .from(users)
    .where(and(eq(users.companyId, companyId), eq(users.role, 'owner')))
    .orderBy(users.createdAt);
}
