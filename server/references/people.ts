import { and, eq } from 'drizzle-orm';
import type { RefKind } from './resolver.js';
import { one } from '../db/query.js';
import { users } from '../db/tables.js';

/** A person: uuid, or their email address (case-insensitive). Never a platform admin (not in any tenant). */
export const personRef: RefKind = {
  noun: 'person',
  byId: async (db, tenantId, id) => (await one(db.select({ id: users.id }).from(users).where(and(eq(users.id, id), eq(users.companyId, tenantId)))))?.id,
  byRef: async (db, tenantId, ref) =>
    (await db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.email, ref.toLowerCase()), eq(users.companyId, tenantId))))
      .map((r) => r.id),
};
