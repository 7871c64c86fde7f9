import { sql } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import { bySql, rows, amongIds } from '../db/raw.js';
import { fromMinor } from '../purchases/service.js';
import type { CustomerRow } from './presenter.js';
import { customers } from '../db/tables.js';

/**
 * The customers list sorted and filtered for the console (GET /api/visitors `sort`, `lapsed_days`; docs/
 * visits-and-customers.md) and each customer's lifetime spend (additive fields `purchases`, `spend`,
 * `spend_currency`). Spend is the sum of the customer's purchases in the currency most of them were in (ties: the
 * larger amount); purchases in other currencies are counted in `purchases` but not in `spend`.
 */

export const SORTS = ['recent', 'visits', 'spend'] as const;
export type Sort = (typeof SORTS)[number];

export interface Spend {
  purchases: number;
  spend: number;
  spend_currency: string;
}

export const noSpend: Spend = { purchases: 0, spend: 0, spend_currency: '' };

/** Spend per customer id, for the given customers (one grouped query over purchases_customer_idx). */
export async function spendOf(db: Db, ids: readonly string[]): Promise<Map<string, Spend>> {
  const out = new Map<string, Spend>();
  if (ids.length === 0) return out;
  const sums = await rows<{ id: string; currency: string; n: number; minor: number }>(db, sql`
    select p.customer_id as id, p.currency as currency, count(*) as n, sum(p.amount_minor) as minor
    from purchases p where ${amongIds(sql`p.customer_id`, ids)}
    group by p.customer_id, p.currency`);
  const best = new Map<string, { currency: string; n: number; major: number }>();
  for (const r of sums) {
    const major = fromMinor(r.minor, r.currency);
    const s = out.get(r.id) ?? { ...noSpend };
    s.purchases += r.n;
    out.set(r.id, s);
    const b = best.get(r.id);
    if (!b || r.n > b.n || (r.n === b.n && major > b.major)) best.set(r.id, { currency: r.currency, n: r.n, major });
  }
  for (const [id, b] of best) Object.assign(out.get(id)!, { spend: b.major, spend_currency: b.currency });
  return out;
}

/**
 * The company's live customers, `sort`ed (recent: last seen first; visits: most visits first; spend: largest spend
 * in the company's main currency first, customers without purchases last), optionally only those not seen for
 * `lapsedDays` days or more (lapsed: they came before, not lately).
 */
export async function rankCustomers(db: Db, companyId: string, sort: Sort, lapsedDays: number | undefined, limit: number, staff?: boolean, now = Date.now()): Promise<CustomerRow[]> {
  // `true`: SQLite reads it as 1, PostgreSQL wants a boolean.
  const lapsed = lapsedDays === undefined ? sql`true` : sql`c.last_seen_at is not null and c.last_seen_at < ${new Date(now - lapsedDays * 86_400_000).toISOString()}`;
  // SQLite's 0/1 as written (`staff = 1` lets it use the partial index customers_company_staff_idx, `= true` does
  // not); PostgreSQL's column is a boolean.
  const onlyStaff = staff === undefined ? sql`true` : bySql(sql`c.staff = ${staff ? 1 : 0}`, staff ? sql`c.staff` : sql`not c.staff`);
  const base = sql`c.company_id = ${companyId} and c.erased_at is null and c.merged_into is null and ${lapsed} and ${onlyStaff}`;
  // `nulls last`: SQLite's default for desc (so its plan is the same), PostgreSQL's is nulls first.
  const order =
    sort === 'visits'
      ? sql`c.visit_count desc, c.last_seen_at desc nulls last, c.number desc`
      : sort === 'spend'
        ? sql`coalesce(s.minor, 0) desc, c.last_seen_at desc nulls last, c.number desc`
        : sql`c.last_seen_at is null, c.last_seen_at desc, c.number desc`;
  const main = sql`(select p.currency from purchases p where p.company_id = ${companyId} group by p.currency order by count(*) desc, p.currency limit 1)`;
  const spendJoin =
    sort === 'spend'
      ? sql`left join (select p.customer_id as id, sum(p.amount_minor) as minor from purchases p where p.company_id = ${companyId} and p.currency = ${main} group by p.customer_id) s on s.id = c.id`
      : sql``;
  const ids = (await rows<{ id: string }>(db, sql`select c.id as id from ${customers} c ${spendJoin} where ${base} order by ${order} limit ${limit}`)).map((r) => r.id);
  if (ids.length === 0) return [];
  const byId = new Map((await db.select().from(customers).where(amongIds(sql`${customers.id}`, ids))).map((c) => [c.id, c]));
  return ids.map((id) => byId.get(id)!).filter(Boolean);
}
