import type { VisitMessage } from '../../shared/messages.js';
import type { Store } from '../db/open.js';
import { preparedStatements } from '../db/statement.js';

/**
 * A visit is a stay (docs/visits-and-customers.md, "Visits are stays"). Ingest hands every sighting (one visit
 * message: a pass of one person in front of one camera) to `add`, inside its write transaction, in arrival order:
 *
 * - a sighting that identified nobody is a visit of its own (the shop PC sends one message per linked pass);
 * - a sighting of customer C in shop S from `start` to `end` touches every visit of C in S with
 *   `last_seen_at >= start - gap` and `occurred_at <= end + gap` (any camera of the shop; earlier or later: delivery
 *   may be late or out of order);
 * - touching none, it makes a new visit (an arrival); touching one, it extends that visit (its start earlier, its end
 *   later); touching several (it bridges them), they become one visit: the one that starts first stays, spanning
 *   them all, and the others are deleted. So the visits of a customer in a shop are the same whatever the order in
 *   which their sightings arrive: the maximal runs of sightings with no pause longer than the gap.
 *
 * Found through visits_stay_idx (customer_id, shop_id, last_seen_at).
 */

/** One sighting as ingest stores it. */
export interface Sighting {
  visitId: string;
  companyId: string;
  shopId: string;
  cameraId: string;
  /** RFC 3339 UTC (`toISOString()`): the pass's first and last moment. */
  start: string;
  end: string;
  receivedAt: string;
  customerId: string | null;
  isNewVisitor: boolean;
  similarity: number | null;
  quality: number;
  passedGate: boolean;
  recognitionModel: string | null;
  gender: string | null;
  age: number | null;
  emotion: string | null;
  faceImageId: string | null;
  trackId: string | null;
  staff: boolean;
}

/** A pass longer than this (a shop PC's clock or tracker gone wrong) counts from `occurred_at` alone. */
const MAX_PASS_MS = 12 * 3600 * 1000;

const iso = (ms: number) => new Date(ms).toISOString();

/** The pass of a visit message: `occurred_at`, widened by the tracker's first and last sighting when it sent them. */
export function spanOf(m: Pick<VisitMessage, 'occurred_at' | 'track'>): { start: string; end: string } {
  const at = Date.parse(m.occurred_at);
  let a = at;
  let b = at;
  if (m.track) {
    const first = Date.parse(m.track.first_seen_at);
    const last = Date.parse(m.track.last_seen_at);
    if (Number.isFinite(first) && Number.isFinite(last) && Math.abs(at - first) <= MAX_PASS_MS && Math.abs(last - at) <= MAX_PASS_MS) {
      a = Math.min(a, first, last);
      b = Math.max(b, first, last);
    }
  }
  return { start: iso(a), end: iso(b) };
}

interface Near {
  seq: number;
  occurredAt: string;
  lastSeenAt: string;
}

const statementsOf = preparedStatements((prep) => ({
  insert: prep(
    `insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, last_seen_at, dwell_ms, received_at, customer_id, is_new_visitor,
       similarity, quality, passed_gate, recognition_model, gender, age, emotion, face_image_id, track_id, staff)
     values (@visitId, @companyId, @shopId, @cameraId, @start, @end, @dwell, @receivedAt, @customerId, @isNewVisitor,
       @similarity, @quality, @passedGate, @recognitionModel, @gender, @age, @emotion, @faceImageId, @trackId, @staff)`,
    // The new visit's seq: SQLite's lastInsertRowid, PostgreSQL's returning.
    `insert into visits (visit_id, company_id, shop_id, camera_id, occurred_at, last_seen_at, dwell_ms, received_at, customer_id, is_new_visitor,
       similarity, quality, passed_gate, recognition_model, gender, age, emotion, face_image_id, track_id, staff)
     values (@visitId, @companyId, @shopId, @cameraId, @start, @end, @dwell, @receivedAt, @customerId, @isNewVisitor::int::boolean,
       @similarity, @quality, @passedGate::int::boolean, @recognitionModel, @gender, @age, @emotion, @faceImageId, @trackId, @staff::int::boolean)
     returning seq`,
  ),
  near: prep(
    `select seq, occurred_at as "occurredAt", last_seen_at as "lastSeenAt" from visits indexed by visits_stay_idx
     where customer_id = ? and shop_id = ? and last_seen_at >= ? and occurred_at <= ? order by occurred_at, seq`,
    `select seq, occurred_at as "occurredAt", last_seen_at as "lastSeenAt" from visits
     where customer_id = ? and shop_id = ? and last_seen_at >= ? and occurred_at <= ? order by occurred_at, seq`,
  ),
  extend: prep(
    `update visits set occurred_at = @start, last_seen_at = @end, dwell_ms = @dwell, passed_gate = max(passed_gate, @passedGate),
       face_image_id = coalesce(face_image_id, @faceImageId)
     where seq = @seq`,
    `update visits set occurred_at = @start, last_seen_at = @end, dwell_ms = @dwell, passed_gate = passed_gate or @passedGate::int::boolean,
       face_image_id = coalesce(face_image_id, @faceImageId)
     where seq = @seq`,
  ),
  remove: prep('delete from visits where seq = ?'),
  firstVisit: prep('select seq from visits where customer_id = ? order by occurred_at, seq limit 1'),
  markFirst: prep(
    'update visits set is_new_visitor = (seq = @seq) where customer_id = @id and (is_new_visitor = 1 or seq = @seq)',
    'update visits set is_new_visitor = (seq = @seq) where customer_id = @id and (is_new_visitor or seq = @seq)',
  ),
}));

/** The stay rule over one write transaction (a new instance per batch). */
export class Stays {
  private readonly q: ReturnType<typeof statementsOf>;
  /** Per customer touched: visits made minus visits joined away, and the sightings' earliest start and latest end. */
  readonly customers = new Map<string, { visits: number; first: string; last: string }>();

  constructor(
    store: Store,
    private readonly gapMs: number,
  ) {
    this.q = statementsOf(store);
  }

  /** Stores one sighting; `inserted` is the new visit's seq when it made one (an arrival). */
  async add(s: Sighting): Promise<{ inserted?: number }> {
    const id = s.customerId;
    if (id === null) return { inserted: await this.insert(s) };
    const near = await this.q.near.all<Near>(id, s.shopId, iso(Date.parse(s.start) - this.gapMs), iso(Date.parse(s.end) + this.gapMs));
    let made = 0;
    let inserted: number | undefined;
    if (near.length === 0) {
      inserted = await this.insert(s);
      made = 1;
    } else {
      const keep = near[0]!;
      let start = s.start;
      let end = s.end;
      for (const v of near) {
        if (v.occurredAt < start) start = v.occurredAt;
        if (v.lastSeenAt > end) end = v.lastSeenAt;
      }
      await this.q.extend.run({ seq: keep.seq, start, end, dwell: Date.parse(end) - Date.parse(start), passedGate: s.passedGate ? 1 : 0, faceImageId: s.faceImageId });
      for (const v of near.slice(1)) await this.q.remove.run(v.seq);
      made = 1 - near.length;
    }
    const c = this.customers.get(id);
    if (!c) this.customers.set(id, { visits: made, first: s.start, last: s.end });
    else {
      c.visits += made;
      if (s.start < c.first) c.first = s.start;
      if (s.end > c.last) c.last = s.end;
    }
    return inserted === undefined ? {} : { inserted };
  }

  /** `is_new_visitor` on exactly one visit of the customer: the one that starts first (then the first stored). */
  async markFirstVisit(customerId: string): Promise<void> {
    const f = await this.q.firstVisit.get<{ seq: number }>(customerId);
    if (f) await this.q.markFirst.run({ seq: f.seq, id: customerId });
  }

  private async insert(s: Sighting): Promise<number> {
    return (
      await this.q.insert.run({
        visitId: s.visitId,
        companyId: s.companyId,
        shopId: s.shopId,
        cameraId: s.cameraId,
        start: s.start,
        end: s.end,
        dwell: Date.parse(s.end) - Date.parse(s.start),
        receivedAt: s.receivedAt,
        customerId: s.customerId,
        isNewVisitor: s.isNewVisitor ? 1 : 0,
        similarity: s.similarity,
        quality: s.quality,
        passedGate: s.passedGate ? 1 : 0,
        recognitionModel: s.recognitionModel,
        gender: s.gender,
        age: s.age,
        emotion: s.emotion,
        faceImageId: s.faceImageId,
        trackId: s.trackId,
        staff: s.staff ? 1 : 0,
      })
    ).lastInsertRowid;
  }
}

interface StayRow {
  seq: number;
  shopId: string;
  occurredAt: string;
  lastSeenAt: string;
  passedGate: number;
  faceImageId: string | null;
  isNewVisitor: number;
}

/**
 * The stay rule again over all of one customer's visits, after a merge gave them visits of another customer: in each
 * shop, visits with no pause longer than the gap between them become one (the earliest stays, spanning them; the new
 * visitor mark goes with it). Returns how many visits were joined away. Call inside the merge's transaction.
 */
const rejoinStatementsOf = preparedStatements((prep) => ({
  visits: prep(
    `select seq, shop_id as "shopId", occurred_at as "occurredAt", last_seen_at as "lastSeenAt", passed_gate as "passedGate",
       face_image_id as "faceImageId", is_new_visitor as "isNewVisitor"
     from visits where customer_id = ? order by shop_id, occurred_at, seq`,
  ),
  update: prep(
    `update visits set last_seen_at = @lastSeenAt, dwell_ms = @dwell, passed_gate = @passedGate, face_image_id = @faceImageId,
       is_new_visitor = @isNewVisitor where seq = @seq`,
    `update visits set last_seen_at = @lastSeenAt, dwell_ms = @dwell, passed_gate = @passedGate::int::boolean, face_image_id = @faceImageId,
       is_new_visitor = @isNewVisitor::int::boolean where seq = @seq`,
  ),
  remove: prep('delete from visits where seq = ?'),
}));

export async function rejoinStays(store: Store, customerId: string, gapMs: number): Promise<number> {
  const q = rejoinStatementsOf(store);
  const rows = await q.visits.all<StayRow>(customerId);
  let joined = 0;
  let stay: (StayRow & { changed: boolean }) | undefined;
  const close = async () => {
    if (stay?.changed) {
      const { seq, lastSeenAt, passedGate, faceImageId, isNewVisitor } = stay;
      await q.update.run({ seq, lastSeenAt, passedGate, faceImageId, isNewVisitor, dwell: Date.parse(stay.lastSeenAt) - Date.parse(stay.occurredAt) });
    }
  };
  for (const r of rows) {
    if (stay && stay.shopId === r.shopId && Date.parse(r.occurredAt) <= Date.parse(stay.lastSeenAt) + gapMs) {
      if (r.lastSeenAt > stay.lastSeenAt) stay.lastSeenAt = r.lastSeenAt;
      stay.passedGate = Math.max(stay.passedGate, r.passedGate);
      stay.faceImageId ??= r.faceImageId;
      stay.isNewVisitor = Math.max(stay.isNewVisitor, r.isNewVisitor);
      stay.changed = true;
      await q.remove.run(r.seq);
      joined++;
    } else {
      await close();
      stay = { ...r, changed: false };
    }
  }
  await close();
  return joined;
}
