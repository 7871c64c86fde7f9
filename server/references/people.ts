import { and, eq } from 'drizzle-orm';
import { users } from '../auth/schema.js';
import type { RefKind } from './resolver.js';

/** A person: uuid, or their email address (case-insensitive). Never a platform admin (not in any tenant). */
export const personRef: RefKind = {
  noun: 'person',
  byId: (db, tenantId, id) => db.select({ id: users.id }).from(users).where(and(eq(users.id, id), eq(users.companyId, tenantId))).get()?.id,
  byRef: (db, tenantId, ref) =>
    db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.email, ref.toLowerCase()), eq(users.companyId, tenantId)))
      .all()
      .map((r) => r.id),
};
