import { count, eq, max } from 'drizzle-orm';
import type { Db, Store } from '../db/open.js';
import type { FeedRow } from './presenter.js';
import { one } from '../db/query.js';
import { preparedStatements } from '../db/statement.js';
import { visits } from '../db/tables.js';

/**
 * The feed's rows (FeedRow's columns): staff's visits are never arrivals (docs/visits-and-customers.md, "Staff").
 * `not v.staff` reads the same on both stores (SQLite's 0/1, PostgreSQL's boolean).
 */
const FEED_SELECT = `select v.seq as "seq", v.visit_id as "visitId", v.occurred_at as "occurredAt", v.last_seen_at as "lastSeenAt",
  v.dwell_ms as "dwellMs", v.shop_id as "shopId", s.name as "shopName", s.slug as "shopSlug", s.timezone as "shopTimezone",
  v.camera_id as "cameraId", v.customer_id as "customerId", c.number as "customerNumber", c.full_name as "customerName",
  c.first_seen_at as "customerFirstSeenAt", v.is_new_visitor as "isNewVisitor", v.similarity as "similarity",
  v.quality as "quality", v.gender as "gender", v.age as "age", v.emotion as "emotion", v.face_image_id as "faceImageId"
from visits v join shops s on s.id = v.shop_id left join customers c on c.id = v.customer_id`;

/**
 * The feed's five statements (after a position or the tail, the company or one shop; a range), prepared once per
 * store (server/db/statement.ts): polling is the mobile app's main path, and building the query cost more than
 * running it. They run where `store.db` runs, so inside `store.tx` on the transaction's connection; built per `db`
 * instead (drizzle's prepared queries are bound to one), they were built again for every transaction on PostgreSQL,
 * whose `db` there is a new object each time (docs/benchmarks.md, finding 4).
 */
const statementsOf = preparedStatements((prep) => ({
  after: prep(`${FEED_SELECT} where v.company_id = @company and v.seq > @after and not v.staff order by v.seq limit @limit`),
  afterInShop: prep(`${FEED_SELECT} where v.company_id = @company and v.shop_id = @shop and v.seq > @after and not v.staff order by v.seq limit @limit`),
  tail: prep(`${FEED_SELECT} where v.company_id = @company and not v.staff order by v.seq desc limit @limit`),
  tailInShop: prep(`${FEED_SELECT} where v.company_id = @company and v.shop_id = @shop and not v.staff order by v.seq desc limit @limit`),
  range: prep(`${FEED_SELECT} where v.company_id = @company and v.seq >= @from and v.seq <= @to and not v.staff order by v.seq`),
}));

type RawFeedRow = Omit<FeedRow, 'isNewVisitor'> & { isNewVisitor: number | boolean };

/**
 * A statement's rows as FeedRows. On SQLite they are read when called, in the caller's synchronous step (the stream's
 * catch-up relies on that); the promise only hands them over.
 */
async function feedRows(rows: Promise<RawFeedRow[]>): Promise<FeedRow[]> {
  const out = (await rows) as FeedRow[];
  for (const r of out) r.isNewVisitor = Boolean(r.isNewVisitor);
  return out;
}

/** Rows after a position, ascending (a poll with a cursor; a stream catching up). */
export async function feedAfter(store: Store, companyId: string, after: number, limit: number, shopId?: string): Promise<FeedRow[]> {
  const s = statementsOf(store);
  return await feedRows(shopId ? s.afterInShop.all({ company: companyId, shop: shopId, after, limit }) : s.after.all({ company: companyId, after, limit }));
}

/** The latest `limit` rows, ascending (a poll without a cursor). */
export async function feedTail(store: Store, companyId: string, limit: number, shopId?: string): Promise<FeedRow[]> {
  const s = statementsOf(store);
  return (await feedRows(shopId ? s.tailInShop.all({ company: companyId, shop: shopId, limit }) : s.tail.all({ company: companyId, limit }))).reverse();
}

/** Rows of a seq range for some companies (ingest's fan-out of one committed batch; the arrivals relay). */
export async function feedRange(store: Store, companyIds: string[], from: number, to: number): Promise<FeedRow[]> {
  if (companyIds.length === 0) return [];
  const s = statementsOf(store);
  if (companyIds.length === 1) return await feedRows(s.range.all({ company: companyIds[0]!, from, to }));
  const pages: FeedRow[][] = [];
  for (const company of companyIds) pages.push(await feedRows(s.range.all({ company, from, to })));
  return pages.flat().sort((a, b) => a.seq - b.seq);
}

/** The company's newest position (0 when it has no visit): an empty poll without a cursor answers it. */
export async function headSeq(db: Db, companyId: string): Promise<number> {
  return (await one(db.select({ seq: max(visits.seq) }).from(visits).where(eq(visits.companyId, companyId))))?.seq ?? 0;
}

/** Visits recorded for a shop (a shop with visits cannot be removed). */
export async function shopVisitCount(db: Db, shopId: string): Promise<number> {
  return (await one(db.select({ n: count() }).from(visits).where(eq(visits.shopId, shopId))))?.n ?? 0;
}
