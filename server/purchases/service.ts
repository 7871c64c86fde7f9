import { randomUUID } from 'node:crypto';
import { desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { one, returned } from '../db/query.js';
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

export async function findPurchase(db: Db, id: string): Promise<PurchaseRow | undefined> {
  return await one(db.select().from(purchases).where(eq(purchases.id, id)));
}

/** Call inside a transaction. */
export async function insertPurchase(db: Db, p: NewPurchase): Promise<PurchaseRow> {
  return await returned(db
    .insert(purchases)
    .values({ ...p, id: p.id ?? randomUUID(), createdAt: new Date().toISOString() })
    .returning());
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
