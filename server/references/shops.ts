import { and, eq } from 'drizzle-orm';
import { shops } from '../shops/schema.js';
import type { RefKind } from './resolver.js';

/** A shop: uuid, or its slug (case-insensitive; slugs are lower-case). */
export const shopRef: RefKind = {
  noun: 'shop',
  byId: (db, tenantId, id) => db.select({ id: shops.id }).from(shops).where(and(eq(shops.id, id), eq(shops.companyId, tenantId))).get()?.id,
  byRef: (db, tenantId, ref) =>
    db
      .select({ id: shops.id })
      .from(shops)
      .where(and(eq(shops.slug, ref.toLowerCase()), eq(shops.companyId, tenantId)))
      .all()
      .map((r) => r.id),
};
