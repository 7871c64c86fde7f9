import { and, eq } from 'drizzle-orm';
import type { RefKind } from './resolver.js';
import { one } from '../db/query.js';
import { shops } from '../db/tables.js';

/** A shop: uuid, or its slug (case-insensitive; slugs are lower-case). */
export const shopRef: RefKind = {
  noun: 'shop',
  byId: async (db, tenantId, id) => (await one(db.select({ id: shops.id }).from(shops).where(and(eq(shops.id, id), eq(shops.companyId, tenantId)))))?.id,
  byRef: async (db, tenantId, ref) =>
    (await db
      .select({ id: shops.id })
      .from(shops)
      .where(and(eq(shops.slug, ref.toLowerCase()), eq(shops.companyId, tenantId))))
      .map((r) => r.id),
};
