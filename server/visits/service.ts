import { and, asc, count, desc, eq, gt, gte, lte, max, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/open.js';
import type { FeedRow } from './presenter.js';
import { one, prepareNamed } from '../db/query.js';
import { onPostgres } from '../db/raw.js';
import { customers, shops, visits } from '../db/tables.js';

const feedColumns = {
  seq: visits.seq,
  visitId: visits.visitId,
  occurredAt: visits.occurredAt,
  lastSeenAt: visits.lastSeenAt,
  dwellMs: visits.dwellMs,
  shopId: visits.shopId,
  shopName: shops.name,
  shopSlug: shops.slug,
  shopTimezone: shops.timezone,
  cameraId: visits.cameraId,
  customerId: visits.customerId,
  customerNumber: customers.number,
  customerName: customers.fullName,
  customerFirstSeenAt: customers.firstSeenAt,
  isNewVisitor: visits.isNewVisitor,
  similarity: visits.similarity,
  quality: visits.quality,
  gender: visits.gender,
  age: visits.age,
  emotion: visits.emotion,
  faceImageId: visits.faceImageId,
};

/** The feed's rows: staff's visits are never arrivals (docs/visits-and-customers.md, "Staff"). */
function feedQuery(db: Db, where: SQL | undefined) {
  return db
    .select(feedColumns)
    .from(visits)
    .innerJoin(shops, eq(shops.id, visits.shopId))
    .leftJoin(customers, eq(customers.id, visits.customerId))
    .where(and(where, eq(visits.staff, false)));
}

/**
 * The feed's four statements (after a position or the tail; the company or one shop), built and prepared once per
 * database: polling is the mobile app's main path, and building the query cost more than running it.
 */
function feedStatements(db: Db) {
  const company = sql.placeholder('company');
  const shop = sql.placeholder('shop');
  const after = sql.placeholder('after');
  const limit = sql.placeholder('limit');
  const inCompany = eq(visits.companyId, company);
  const inShop = and(eq(visits.companyId, company), eq(visits.shopId, shop));
  return {
    after: prepareNamed(feedQuery(db, and(inCompany, gt(visits.seq, after))).orderBy(asc(visits.seq)).limit(limit), 'feed_after'),
    afterInShop: prepareNamed(feedQuery(db, and(inShop, gt(visits.seq, after))).orderBy(asc(visits.seq)).limit(limit), 'feed_after_in_shop'),
    tail: prepareNamed(feedQuery(db, inCompany).orderBy(desc(visits.seq)).limit(limit), 'feed_tail'),
    tailInShop: prepareNamed(feedQuery(db, inShop).orderBy(desc(visits.seq)).limit(limit), 'feed_tail_in_shop'),
    range: prepareNamed(feedQuery(db, and(inCompany, gte(visits.seq, sql.placeholder('from')), lte(visits.seq, sql.placeholder('to')))).orderBy(asc(visits.seq)), 'feed_range'),
  };
}

interface Statement {
  all(values: Record<string, unknown>): FeedRow[];
  execute(values: Record<string, unknown>): PromiseLike<FeedRow[]>;
}

/**
 * A statement's rows: SQLite's at once (.all, the hot poll as it was), PostgreSQL's awaited (.execute: its .all
 * gives rows not yet mapped to the columns).
 */
async function answer(s: Statement, values: Record<string, unknown>): Promise<FeedRow[]> {
  return onPostgres ? await s.execute(values) : s.all(values);
}

const prepared = new WeakMap<Db, ReturnType<typeof feedStatements>>();

function statements(db: Db): ReturnType<typeof feedStatements> {
  let s = prepared.get(db);
  if (!s) prepared.set(db, (s = feedStatements(db)));
  return s;
}

/**
 * Rows after a position, ascending (a poll with a cursor; a stream catching up). On SQLite the rows are read when
 * called, in the caller's synchronous step (the stream's catch-up relies on that); the promise only hands them over.
 */
export async function feedAfter(db: Db, companyId: string, after: number, limit: number, shopId?: string): Promise<FeedRow[]> {
  const s = statements(db);
  return await (shopId ? answer(s.afterInShop, { company: companyId, shop: shopId, after, limit }) : answer(s.after, { company: companyId, after, limit }));
}

/** The latest `limit` rows, ascending (a poll without a cursor). */
export async function feedTail(db: Db, companyId: string, limit: number, shopId?: string): Promise<FeedRow[]> {
  const s = statements(db);
  return (await (shopId ? answer(s.tailInShop, { company: companyId, shop: shopId, limit }) : answer(s.tail, { company: companyId, limit }))).reverse();
}

/** Rows of a seq range for some companies (ingest's fan-out of one committed batch). */
export async function feedRange(db: Db, companyIds: string[], from: number, to: number): Promise<FeedRow[]> {
  if (companyIds.length === 0) return [];
  // One prepared statement per company (ingest calls this for every batch; building the query cost more than running it).
  const s = statements(db);
  if (companyIds.length === 1) return await answer(s.range, { company: companyIds[0]!, from, to });
  const pages: FeedRow[][] = [];
  for (const company of companyIds) pages.push(await answer(s.range, { company, from, to }));
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
