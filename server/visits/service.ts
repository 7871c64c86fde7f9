import { and, asc, count, desc, eq, gt, gte, inArray, lte, max, type SQL } from 'drizzle-orm';
import { customers } from '../customers/schema.js';
import type { Db } from '../db/open.js';
import { shops } from '../shops/schema.js';
import type { FeedRow } from './presenter.js';
import { visits } from './schema.js';

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

function scope(companyId: string, shopId: string | undefined): SQL {
  return shopId ? and(eq(visits.companyId, companyId), eq(visits.shopId, shopId))! : eq(visits.companyId, companyId);
}

/** Rows after a position, ascending (a poll with a cursor; a stream catching up). */
export function feedAfter(db: Db, companyId: string, after: number, limit: number, shopId?: string): FeedRow[] {
  return feedQuery(db, and(scope(companyId, shopId), gt(visits.seq, after)))
    .orderBy(asc(visits.seq))
    .limit(limit)
    .all();
}

/** The latest `limit` rows, ascending (a poll without a cursor). */
export function feedTail(db: Db, companyId: string, limit: number, shopId?: string): FeedRow[] {
  return feedQuery(db, scope(companyId, shopId)).orderBy(desc(visits.seq)).limit(limit).all().reverse();
}

/** Rows of a seq range for some companies (ingest's fan-out of one committed batch). */
export function feedRange(db: Db, companyIds: string[], from: number, to: number): FeedRow[] {
  if (companyIds.length === 0) return [];
  return feedQuery(db, and(inArray(visits.companyId, companyIds), gte(visits.seq, from), lte(visits.seq, to)))
    .orderBy(asc(visits.seq))
    .all();
}

/** The company's newest position (0 when it has no visit): an empty poll without a cursor answers it. */
export function headSeq(db: Db, companyId: string): number {
  return db.select({ seq: max(visits.seq) }).from(visits).where(eq(visits.companyId, companyId)).get()?.seq ?? 0;
}

/** Visits recorded for a shop (a shop with visits cannot be removed). */
export function shopVisitCount(db: Db, shopId: string): number {
  return db.select({ n: count() }).from(visits).where(eq(visits.shopId, shopId)).get()?.n ?? 0;
}
