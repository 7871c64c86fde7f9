import { randomUUID } from 'node:crypto';
import { desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { one } from '../db/query.js';
import { bySql } from '../db/raw.js';
import { shops, purchases } from '../db/tables.js';

export type PurchaseRow = typeof purchases.$inferSelect;

const currencies = new Set(Intl.supportedValuesOf('currency'));

/** ISO 4217 codes this server's ICU knows (upper case). */
export function isCurrency(code: string): boolean {
  return currencies.has(code);
}

/** Digits after the decimal point in the currency's minor unit (INR 2, JPY 0, KWD 3). */
export function minorDigits(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
}

/** The amount in minor units, or undefined when it has more decimals than the currency allows. */
export function toMinor(amount: number, currency: string): number | undefined {
  const scaled = amount * 10 ** minorDigits(currency);
  const minor = Math.round(scaled);
  return Math.abs(scaled - minor) < 1e-6 * Math.max(1, Math.abs(scaled)) ? minor : undefined;
}

export function fromMinor(minor: number, currency: string): number {
  const d = minorDigits(currency);
  return Number((minor / 10 ** d).toFixed(d));
}

export interface NewPurchase {
  id?: string | undefined;
  companyId: string;
  customerId: string;
  shopId: string;
  amountMinor: number;
  currency: string;
  items: string[];
  source: string;
  notes: string;
  createdBy: string;
  createdByEmail: string;
}

/**
 * Records a purchase; call it inside a transaction. When its id is taken already (the client's retry, or another
 * sale under the same id), nothing is written and the stored row comes back instead, `created` false. One insert
 * that gives way to the key rather than a look-up and then an insert: two retries sent at once cannot both find the
 * id free and both insert, the second failing on the key with a 500. On PostgreSQL the second waits for the first's
 * commit and is refused as a serialization failure, run again by the store, and then finds the row.
 */
export async function recordPurchase(db: Db, p: NewPurchase): Promise<{ row: PurchaseRow; created: boolean }> {
  const id = p.id ?? randomUUID();
  const [row] = await db
    .insert(purchases)
    .values({ ...p, id, createdAt: new Date().toISOString() })
    .onConflictDoNothing({ target: purchases.id })
    .returning();
  if (row) return { row, created: true };
  const stored = await one(db.select().from(purchases).where(eq(purchases.id, id)));
  if (!stored) throw new Error(`purchase ${id}: the insert gave way to a row the transaction cannot see`);
  return { row: stored, created: false };
}

/** Whether a stored purchase is the same sale as a retried request (same id, same content). */
export function samePurchase(row: PurchaseRow, p: NewPurchase): boolean {
  return (
    row.companyId === p.companyId &&
    row.customerId === p.customerId &&
    row.shopId === p.shopId &&
    row.amountMinor === p.amountMinor &&
    row.currency === p.currency &&
    JSON.stringify(row.items) === JSON.stringify(p.items) &&
    row.source === p.source &&
    row.notes === p.notes
  );
}

/**
 * Of two purchases recorded in the same millisecond, the later recorded: SQLite's rowid. PostgreSQL's table has no
 * insertion counter (a text key); its row's physical position (ctid) follows insertion order until the row is updated
 * (a merge moves purchases to the kept customer), which leaves only ties within one millisecond in doubt.
 */
const laterRecorded = bySql(sql`${purchases}.rowid desc`, sql`${purchases}.ctid desc`);

/** A customer's purchases, newest first (then last recorded first), each with its shop (none when the shop was removed since). */
export async function purchasesOf(db: Db, customerId: string, limit: number): Promise<{ purchase: PurchaseRow; shop: { id: string; name: string; slug: string } | null }[]> {
  return await db
    .select({ purchase: purchases, shop: { id: shops.id, name: shops.name, slug: shops.slug } })
    .from(purchases)
    .leftJoin(shops, eq(shops.id, purchases.shopId))
    .where(eq(purchases.customerId, customerId))
    .orderBy(desc(purchases.createdAt), laterRecorded)
    .limit(limit);
}
