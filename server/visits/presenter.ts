import type { Config } from '../config.js';
import { isReturning } from './returning.js';
import { customerLabel, customerRef, presentImage, type ImageObject } from '../customers/presenter.js';

/** A visit joined with its shop and customer: what the feed query and ingest's fan-out read. */
export interface FeedRow {
  seq: number;
  visitId: string;
  occurredAt: string;
  /** null only on rows stored before stays (read as occurred_at). */
  lastSeenAt: string | null;
  dwellMs: number;
  shopId: string;
  shopName: string;
  shopSlug: string;
  shopTimezone: string;
  cameraId: string;
  customerId: string | null;
  customerNumber: number | null;
  customerName: string | null;
  customerFirstSeenAt: string | null;
  isNewVisitor: boolean;
  similarity: number | null;
  quality: number;
  gender: string | null;
  age: number | null;
  emotion: string | null;
  faceImageId: string | null;
}

export interface Arrival {
  visit_id: string;
  occurred_at: string;
  /** Additive (docs/visits-and-customers.md): the stay's latest sighting so far, and its length in seconds. */
  last_seen_at: string;
  dwell_s: number;
  site_id: string;
  site: string;
  site_slug: string;
  camera_id: string;
  visitor_id?: string;
  visitor_ref?: string;
  label: string;
  is_new_visitor: boolean;
  /** Additive: the customer was seen on a visit before this visit's local day (returning.ts; the reports' meaning). */
  returning: boolean;
  similarity: number;
  quality: number;
  attributes: { gender?: string; age?: number; emotion?: string };
  image: ImageObject;
}

export function presentAttributes(r: Pick<FeedRow, 'gender' | 'age' | 'emotion'>): Arrival['attributes'] {
  const a: Arrival['attributes'] = {};
  if (r.gender !== null) a.gender = r.gender;
  if (r.age !== null) a.age = r.age;
  if (r.emotion !== null) a.emotion = r.emotion;
  return a;
}

/**
 * `similarity`: the cosine similarity to the matched customer's template; 1 for the visit that enrolled a new
 * customer (the template is that face); 0 when nobody was identified.
 */
export function presentSimilarity(r: Pick<FeedRow, 'customerId' | 'isNewVisitor' | 'similarity'>): number {
  if (r.customerId === null) return 0;
  if (r.isNewVisitor) return 1;
  return r.similarity === null ? 0 : Math.round(r.similarity * 10_000) / 10_000;
}

/** A stay's end and length (additive fields of Arrival and history rows): whole seconds. */
export function presentStay(r: Pick<FeedRow, 'occurredAt' | 'lastSeenAt' | 'dwellMs'>): { last_seen_at: string; dwell_s: number } {
  return { last_seen_at: r.lastSeenAt ?? r.occurredAt, dwell_s: Math.round(r.dwellMs / 1000) };
}

/** The spec's Arrival. The sequence is never in it (it is only inside the opaque cursor). */
export function presentArrival(r: FeedRow, config: Config): Arrival {
  const identified = r.customerId !== null && r.customerNumber !== null;
  return {
    visit_id: r.visitId,
    occurred_at: r.occurredAt,
    ...presentStay(r),
    site_id: r.shopId,
    site: r.shopName,
    site_slug: r.shopSlug,
    camera_id: r.cameraId,
    ...(identified ? { visitor_id: r.customerId!, visitor_ref: customerRef(r.customerNumber!) } : {}),
    label: identified ? customerLabel(r.customerNumber!, r.customerName ?? '') : '',
    is_new_visitor: identified && r.isNewVisitor,
    returning: identified && isReturning(r.shopTimezone, r.occurredAt, r.customerFirstSeenAt),
    similarity: presentSimilarity(r),
    quality: r.quality,
    attributes: presentAttributes(r),
    image: presentImage(config, r.faceImageId, identified ? 'No photo was captured for this visit.' : 'Photos are kept only for identified customers.'),
  };
}
