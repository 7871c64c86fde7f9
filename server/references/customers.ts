import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import type { RefKind } from './resolver.js';
import { one } from '../db/query.js';
import { customers } from '../db/tables.js';

/** `V-<n>`, `v-<n>` or the bare number `<n>`: the customer number, or undefined. */
export function customerNumberOf(ref: string): number | undefined {
  const m = /^(?:v-?)?([1-9][0-9]{0,14})$/i.exec(ref.trim());
  return m ? Number(m[1]) : undefined;
}

/** Follows merges to the surviving customer; undefined for an erased one. */
async function live(db: Db, tenantId: string, id: string): Promise<string | undefined> {
  let current = id;
  for (let hops = 0; hops < 32; hops++) {
    const row = await one(db
      .select({ id: customers.id, erasedAt: customers.erasedAt, mergedInto: customers.mergedInto })
      .from(customers)
      .where(and(eq(customers.id, current), eq(customers.companyId, tenantId))));
    if (!row || row.erasedAt) return undefined;
    if (!row.mergedInto) return row.id;
    current = row.mergedInto;
  }
  return undefined;
}

/**
 * A customer: uuid, `V-<number>` or the bare number (case-insensitive `V-`). Erased customers never resolve; a
 * customer merged into another resolves to the survivor (references are safe to store).
 */
export const customerRef: RefKind = {
  noun: 'customer',
  byId: async (db, tenantId, id) => await live(db, tenantId, id),
  byRef: async (db, tenantId, ref) => {
    const n = customerNumberOf(ref);
    if (n === undefined) return [];
    const row = await one(db
      .select({ id: customers.id })
      .from(customers)
      .where(and(eq(customers.companyId, tenantId), eq(customers.number, n))));
    const id = row && (await live(db, tenantId, row.id));
    return id ? [id] : [];
  },
};
