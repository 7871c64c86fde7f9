import type { VisitMessage } from '../../shared/messages.js';
import type { Config } from '../config.js';
import { linkFace, unlinkedFaces, type FaceImageRow } from '../customers/faces.js';
import { sql } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import type { Store } from '../db/open.js';
import { amongIds, rows } from '../db/raw.js';
import { preparedStatements } from '../db/statement.js';
import type { Decision, Visit } from '../identity/matcher.js';
import { templateToBlob, unitCopy } from '../identity/vector.js';
import { announceArrivals, type ArrivalRange } from './arrivals-relay.js';
import { tickGalleryClock } from './gallery-clock.js';
import type { Identities } from './identities.js';
import type { IngestStats } from './ingest-core.js';
import { Stays, spanOf } from './stays.js';

/** One visit message waiting for the next batch. */
export interface Pending {
  /** The main thread's number for the message (ascending): it is acknowledged once written. */
  id: number;
  username: string;
  msg: VisitMessage;
  /** Decoded and checked (finite, not all zeros); undefined: footfall without identity. */
  embedding: Float32Array | undefined;
  receivedAt: string;
  /** When it was queued (performance.now()): the batch window counts from the oldest queued visit. */
  queuedAt: number;
}

/** A batch decided against a gallery that an erasure or merge on the main thread had just made stale. */
export class StaleGallery extends Error {}

interface Shop {
  id: string;
  companyId: string;
  active: boolean;
}

/**
 * A batch's writes (IngestCore's transaction: server/visits/ingest-core.ts describes the rules). `touched` collects
 * the galleries (company, model) the batch decided against, so a failed transaction can take back what it changed
 * in them (Identities.undo) and a committed one keep it (Identities.settle). Throws
 * StaleGallery when a decision met a customer the main thread erased, merged or re-templated meanwhile.
 */
export async function writeBatch(deps: { store: Store; config: Config; identities: Identities }, batch: readonly Pending[], touched: Set<string>): Promise<Written> {
  const { store, config, identities } = deps;
  const db = store.db;
  const q = statementsOf(store);
  const now = new Date().toISOString();
  const out: Written = { ranges: [], discard: [], counts: {} };
  const count = (k: keyof IngestStats, n = 1) => (out.counts[k] = (out.counts[k] ?? 0) + n);

  // Shops (and whether their company is active), by broker username.
  const shopOf = new Map<string, Shop>();
  for (const username of new Set(batch.map((b) => b.username))) {
    const r = await q.shopByUsername.get<{ id: string; companyId: string; active: number }>(username);
    if (r) shopOf.set(username, { id: r.id, companyId: r.companyId, active: r.active === 1 });
  }

  // Keep what may be stored: a live shop, an active company, a visit_id not seen before.
  const accepted: { item: Pending; shop: Shop }[] = [];
  const dropFaces = new Map<string, string[]>();
  const dropFace = (companyId: string, id: string | undefined) => {
    if (!id) return;
    const list = dropFaces.get(companyId) ?? [];
    list.push(id);
    dropFaces.set(companyId, list);
  };
  for (const item of batch) {
    const shop = shopOf.get(item.username);
    if (!shop) {
      count('unknownShop');
      continue;
    }
    if (!shop.active) {
      count('suspended');
      dropFace(shop.companyId, item.msg.face_image_id);
      continue;
    }
    accepted.push({ item, shop });
  }
  // Each visit id is recorded once per company: a sighting whose id is there already (sent again after a lost
  // PUBACK, or twice in this batch) is a duplicate. One statement a visit, the insert that finds it there, instead of
  // a lookup and then the insert; the whole batch is one transaction, so a batch that fails records none of them.
  const fresh: typeof accepted = [];
  for (const a of accepted) {
    if ((await q.insertSighting.run(a.shop.companyId, a.item.msg.visit_id, a.item.receivedAt)).changes === 0) count('duplicates');
    else fresh.push(a);
  }

  // Identity: one batched decision per (company, model), in arrival order.
  const decisions = new Map<Pending, Decision>();
  const groups = new Map<string, { companyId: string; model: string; items: Pending[] }>();
  // A company in count-only mode (docs/privacy.md) recognises no one: an embedding sent anyway (a shop PC that has
  // not pulled the change yet, or a queue from before it) is dropped here, and the visit counted without identity.
  const countOnly = new Map<string, boolean>();
  for (const { item, shop } of fresh) {
    if (!item.embedding) continue;
    let off = countOnly.get(shop.companyId);
    if (off === undefined) countOnly.set(shop.companyId, (off = ((await q.recognition.get<{ r: string }>(shop.companyId))?.r ?? 'all') === 'off'));
    if (off) {
      item.embedding = undefined;
      continue;
    }
    const model = item.msg.recognition_model!;
    const k = `${shop.companyId}\u0000${model}`;
    const g = groups.get(k) ?? { companyId: shop.companyId, model, items: [] };
    g.items.push(item);
    groups.set(k, g);
  }
  const templates = new Map<string, Buffer>();
  // Each company's gallery clock moves on once per batch: what this batch adds or changes is stamped with the new
  // tick, and the matcher first takes in what others stamped before it (server/visits/gallery-clock.ts).
  const ticks = new Map<string, number>();
  const stampOf = new Map<string, number>();
  for (const [k, g] of groups) {
    touched.add(k);
    let tick = ticks.get(g.companyId);
    if (tick === undefined) ticks.set(g.companyId, (tick = await tickGalleryClock(store, g.companyId)));
    const matcher = await identities.matcherAt(g.companyId, g.model, tick);
    let next = (await q.maxNumber.get<{ n: number | null }>(g.companyId))?.n ?? 0;
    const vs: Visit[] = g.items.map((i) => ({ embedding: i.embedding!, passedGate: i.msg.passed_gate, at: Date.parse(i.msg.occurred_at) }));
    // New customers are written once the batch is decided (the decision is synchronous; the writes are not on
    // PostgreSQL), before any visit that names them.
    const made: unknown[][] = [];
    const ds = matcher.decideBatch(vs, (v) => {
      // Time-ordered (UUIDv7): a new customer's entries in the indexes keyed by customer (its own key, its visits') go
      // at their ends instead of at random pages (docs/decisions.md, "Visit, crossing and customer ids are UUIDv7").
      const id = uuidv7();
      made.push([id, g.companyId, ++next, g.model, templateToBlob(unitCopy(v.embedding)), now, tick]);
      count('newCustomers');
      return id;
    });
    for (const row of made) await q.insertCustomer.run(...row);
    ds.forEach((d, i) => {
      decisions.set(g.items[i]!, d);
      if (d.kind === 'match') {
        count('matched');
        if (d.template) {
          templates.set(d.customerId, templateToBlob(d.template.template));
          stampOf.set(d.customerId, tick);
        }
      }
    });
  }
  const templateCounts = new Map<string, number>();
  for (const d of decisions.values()) if (d.kind === 'match' && d.template) templateCounts.set(d.customerId, d.template.count);

  // The decisions against the database, in this transaction: a customer erased or merged by the main thread, or
  // whose template it replaced (merge), since this gallery last heard of it means the gallery is stale.
  const before = new Map<string, number | undefined>();
  for (const d of decisions.values()) {
    if (d.kind !== 'match') continue;
    const had = d.template ? d.template.count - 1 : undefined;
    const seen = before.get(d.customerId);
    if (!before.has(d.customerId) || (had !== undefined && (seen === undefined || had < seen))) before.set(d.customerId, had);
  }
  const staffIds = new Set<string>();
  const firstSeen = new Map<string, string | null>();
  for (const [id, had] of before) {
    const r = await q.customerState.get<{ count: number; erasedAt: string | null; mergedInto: string | null; staff: number; firstSeenAt: string | null }>(id);
    if (!r || r.erasedAt || r.mergedInto || (had !== undefined && r.count !== had)) throw new StaleGallery(`customer ${id} changed`);
    if (r.staff) staffIds.add(id);
    firstSeen.set(id, r.firstSeenAt);
  }

  // Face images: linked to an identified visit's customer; otherwise (or with photos off) discarded.
  const faceOf = new Map<Pending, string>();
  for (const { item, shop } of fresh) {
    const faceId = item.msg.face_image_id;
    if (!faceId) continue;
    const d = decisions.get(item);
    const customerId = d && d.kind !== 'footfall' ? d.customerId : undefined;
    if (config.FOOTFALL_IMAGES === 'off' || !customerId) {
      dropFace(shop.companyId, faceId);
      continue;
    }
    if (await linkFace(db, { id: faceId, companyId: shop.companyId, customerId, visitId: item.msg.visit_id, at: now })) faceOf.set(item, faceId);
  }
  for (const [companyId, ids] of dropFaces) out.discard.push(...await unlinkedFaces(db, companyId, ids));

  if (fresh.length === 0) return out;

  // The visits, in arrival order: each sighting makes a visit or extends (joins) its customer's visits (stays.ts).
  const stays = new Stays(store, config.FOOTFALL_VISIT_GAP_S * 1000);
  const shopIds = new Set<string>();
  const ranges = new Map<string, ArrivalRange>();
  for (const { item, shop } of fresh) {
    const d = decisions.get(item);
    const m = item.msg;
    const customerId = d && d.kind !== 'footfall' ? d.customerId : null;
    const r = await stays.add({
      visitId: m.visit_id,
      companyId: shop.companyId,
      shopId: shop.id,
      cameraId: m.camera_id,
      ...spanOf(m),
      receivedAt: item.receivedAt,
      customerId,
      isNewVisitor: d?.kind === 'new',
      similarity: d?.kind === 'match' ? d.similarity : null,
      quality: m.quality,
      passedGate: m.passed_gate,
      recognitionModel: m.recognition_model ?? null,
      gender: m.attributes?.gender ?? null,
      age: m.attributes?.age ?? null,
      emotion: m.attributes?.emotion ?? null,
      faceImageId: faceOf.get(item) ?? null,
      trackId: m.track?.id ?? null,
      staff: customerId !== null && staffIds.has(customerId),
    });
    if (r.inserted !== undefined) {
      const range = ranges.get(shop.companyId);
      if (range) range[2] = Math.max(range[2], r.inserted);
      else ranges.set(shop.companyId, [shop.companyId, r.inserted, r.inserted]);
    } else count('extended');
    shopIds.add(shop.id);
  }
  count('stored', fresh.length);

  // Customer stats and templates: one update per customer; exactly one first visit each. Each statement sets only
  // columns that change: SQLite rewrites the index entries of every column a SET names, changed or not, and the
  // first-seen indexes alone were ~2 of the ~14 pages a returning visit wrote (docs/decisions.md, "Ingest CPU per
  // visit, third round"). A customer's first sighting is earlier than the stored one only when it is new (made in
  // this batch, read as undefined here) or a shop PC sends an old visit late.
  for (const [id, st] of stays.customers) {
    const template = templates.get(id);
    const stats = { n: st.visits, last: st.last, id };
    if (template) await q.updateCustomerTemplate.run({ ...stats, template, count: templateCounts.get(id)!, tick: stampOf.get(id)! });
    else await q.updateCustomer.run(stats);
    // Which visit is the customer's first changes only with their first sighting: when it did not move earlier, the
    // visit marked first stays the earliest (a joined stay keeps its earliest visit's row).
    const first = firstSeen.get(id);
    if (first == null || st.first < first) {
      await q.setFirstSeen.run({ first: st.first, id });
      await stays.markFirstVisit(id);
    }
  }

  // The shops' last visit. On PostgreSQL after the commit (IngestCore, touchShops): the heartbeat flush updates the
  // same rows, and a serializable transaction that updates a row another committed since its snapshot is refused
  // ("could not serialize access due to concurrent update"), which re-ran whole batches in the bench runs.
  if (store.dialect === 'postgres') out.touch = { at: now, shopIds: [...shopIds] };
  else for (const shopId of shopIds) await q.touchShop.run(now, shopId);

  // What the arrival streams get after the commit: the positions of the new visits, per company. On PostgreSQL every
  // process's streams get them through the database (arrivals-relay.ts), this one's included; on SQLite the main
  // thread reads and presents them for the companies that have a stream open (VisitIngest), and none otherwise.
  if (store.dialect === 'postgres') await announceArrivals(store, [...ranges.values()]);
  else out.ranges = [...ranges.values()];
  return out;
}

/**
 * The locks a batch's transaction holds on PostgreSQL, one per company of its shops: two head-office processes never
 * write the same company's visits at once, so (1) the same new face seen by both makes one customer (the second
 * decides after the first committed, on a gallery caught up with it) and (2) a company's visits commit in `seq`
 * order, which the visits feed's cursor relies on. Different companies are written in parallel.
 */
export async function batchLocks(store: Store, batch: readonly Pending[]): Promise<string[] | undefined> {
  if (store.dialect !== 'postgres') return undefined;
  const usernames = [...new Set(batch.map((b) => b.username))];
  const found = await rows<{ companyId: string }>(store.db, sql`select distinct company_id as "companyId" from shops where ${amongIds(sql`broker_username`, usernames)}`);
  return found.map((r) => `ingest:${r.companyId}`);
}

/**
 * The hot statements of ingest, prepared once per database (plain SQL, server/db/statement.ts: building them through
 * drizzle for every row cost more than running them on SQLite).
 */
const statementsOf = preparedStatements((prep) => ({
  maxNumber: prep('select max(number) as n from customers where company_id = ?'),
  insertCustomer: prep(
    'insert into customers (id, company_id, number, recognition_model, template, template_count, created_at, gallery_tick) values (?, ?, ?, ?, ?, 1, ?, ?)',
  ),
  insertSighting: prep('insert into sightings (company_id, visit_id, received_at) values (?, ?, ?) on conflict do nothing'),
  updateCustomer: prep(
    'update customers set visit_count = max(0, visit_count + @n), last_seen_at = max(coalesce(last_seen_at, @last), @last) where id = @id',
    // PostgreSQL's scalar max is greatest; its parameters' types are spelled out where a coalesce alone would leave
    // them unknown.
    `update customers set visit_count = greatest(0, visit_count + @n::integer),
       last_seen_at = greatest(coalesce(last_seen_at, @last::timestamptz), @last::timestamptz) where id = @id`,
  ),
  updateCustomerTemplate: prep(
    `update customers set visit_count = max(0, visit_count + @n), last_seen_at = max(coalesce(last_seen_at, @last), @last),
       template = @template, template_count = @count, gallery_tick = @tick
     where id = @id`,
    `update customers set visit_count = greatest(0, visit_count + @n::integer),
       last_seen_at = greatest(coalesce(last_seen_at, @last::timestamptz), @last::timestamptz),
       template = @template, template_count = @count, gallery_tick = @tick
     where id = @id`,
  ),
  // Guarded as well: the stored time is never moved later.
  setFirstSeen: prep(
    'update customers set first_seen_at = @first where id = @id and (first_seen_at is null or first_seen_at > @first)',
    'update customers set first_seen_at = @first::timestamptz where id = @id and (first_seen_at is null or first_seen_at > @first::timestamptz)',
  ),
  touchShop: prep('update shops set last_event_at = ? where id = ?', 'update shops set last_event_at = greatest(last_event_at, ?::timestamptz) where id = ?'),
  shopByUsername: prep(
    'select s.id as id, s.company_id as "companyId", c.active as active from shops s join companies c on c.id = s.company_id where s.broker_username = ?',
  ),
  recognition: prep('select recognition as r from company_privacy where company_id = ?'),
  customerState: prep(
    'select template_count as count, erased_at as "erasedAt", merged_into as "mergedInto", staff, first_seen_at as "firstSeenAt" from customers where id = ?',
  ),
}));

export interface Written {
  /** SQLite: the visits this batch wrote, per company, for the arrival streams (read by the main thread). */
  ranges: ArrivalRange[];
  discard: FaceImageRow[];
  /** Counted only once committed. */
  counts: Partial<IngestStats>;
  /** PostgreSQL: the shops whose last visit to set after the commit (touchShops). */
  touch?: { at: string; shopIds: string[] };
}

/**
 * Sets the shops' last visit after the batch committed, at READ COMMITTED (last writer wins, and never back in time:
 * `greatest`), so it takes no part in serialization conflicts with the heartbeat flush's writes of the same rows.
 */
export async function touchShops(store: Store, touch: { at: string; shopIds: string[] }): Promise<void> {
  const q = statementsOf(store);
  await store.tx(async () => {
    for (const shopId of touch.shopIds) await q.touchShop.run(touch.at, shopId);
  }, { readCommitted: true });
}
