import { and, asc, desc, eq, inArray, isNull, like, or, sql, type SQL } from 'drizzle-orm';
import { audit } from '../audit/service.js';
import type { Ctx } from '../context.js';
import type { Db } from '../db/open.js';
import { HttpError, notFound } from '../http/errors.js';
import { DEFAULT_MATCHER_OPTIONS } from '../identity/matcher.js';
import { mergedTemplate, type TemplateState } from '../identity/template.js';
import { templateFromBlob, templateToBlob } from '../identity/vector.js';
import { customerNumberOf } from '../references/customers.js';
import { rejoinStays } from '../visits/stays.js';
import { tickGalleryClock } from '../visits/gallery-clock.js';
import { destroyMoved, faceFile, facesOf, moveAside, putBack, StorageError } from './faces.js';
import { customerRef, type CustomerRow } from './presenter.js';
import { changes, one, returned } from '../db/query.js';
import { bySql, onPostgres, rows } from '../db/raw.js';
import { purchases, shops, visits, customerConsents, customers, doNotEnrol, faceImages } from '../db/tables.js';

/** A live (not erased, not merged-away) customer of the company, by id; 404 otherwise. */
export async function customerOr404(db: Db, companyId: string, id: string): Promise<CustomerRow> {
  const row = await one(db.select().from(customers).where(and(eq(customers.id, id), eq(customers.companyId, companyId))));
  if (!row || row.erasedAt || row.mergedInto) throw notFound('That customer');
  return row;
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** What the customer list presents (presentCustomer): every column but the template and bookkeeping. */
const listedColumns = {
  id: customers.id,
  number: customers.number,
  fullName: customers.fullName,
  phone: customers.phone,
  email: customers.email,
  gender: customers.gender,
  dateOfBirth: customers.dateOfBirth,
  notes: customers.notes,
  consent: customers.consent,
  visitCount: customers.visitCount,
  firstSeenAt: customers.firstSeenAt,
  lastSeenAt: customers.lastSeenAt,
  staff: customers.staff,
};

export type ListedCustomer = Pick<CustomerRow, keyof typeof listedColumns>;

/**
 * The list without a query (most recently seen first), prepared once per database: the app's customer list. On
 * PostgreSQL a named statement (drizzle's pg prepare() takes the name): each pooled connection plans it once.
 */
function recentQuery(db: Db) {
  const query = db
    .select(listedColumns)
    .from(customers)
    .where(and(eq(customers.companyId, sql.placeholder('company')), isNull(customers.erasedAt), isNull(customers.mergedInto)))
    .orderBy(sql`${customers.lastSeenAt} is null`, desc(customers.lastSeenAt), desc(customers.number))
    .limit(sql.placeholder('limit'));
  return onPostgres ? (query as unknown as { prepare(name: string): ReturnType<typeof query.prepare> }).prepare('customers_recent') : query.prepare();
}

const recentStatements = new WeakMap<Db, ReturnType<typeof recentQuery>>();

function recentStatement(db: Db): ReturnType<typeof recentQuery> {
  let s = recentStatements.get(db);
  if (!s) recentStatements.set(db, (s = recentQuery(db)));
  return s;
}

/**
 * Customer search. Without `q`: most recently seen first. With `q`: the name or email contains it (letter case
 * ignored), the phone contains its digits (when it has at least three and looks like a phone number), or it is the
 * customer number with or without `V-`; an exact number match comes first, then most recently seen. Erased and
 * merged-away customers never appear.
 */
export async function searchCustomers(db: Db, companyId: string, q: string | undefined, limit: number, staff?: boolean): Promise<ListedCustomer[]> {
  // Staff only: their ids from customers_company_staff_idx (a short list; SQLite would rather scan the company's
  // customers, whose rows carry a 2 KiB template), then the rows by primary key.
  let staffIds: string[] | undefined;
  if (staff === true) {
    // The hint is SQLite's; PostgreSQL's planner takes the partial index by itself.
    const staffOnly = bySql(
      sql`select id from customers indexed by customers_company_staff_idx where company_id = ${companyId} and staff = 1`,
      sql`select id from customers where company_id = ${companyId} and staff`,
    );
    staffIds = (await rows<{ id: string }>(db, staffOnly)).map((r) => r.id);
    if (staffIds.length === 0) return [];
  }
  const base = and(
    eq(customers.companyId, companyId),
    isNull(customers.erasedAt),
    isNull(customers.mergedInto),
    staffIds ? inArray(customers.id, staffIds) : staff === false ? eq(customers.staff, false) : undefined,
  )!;
  const text = (q ?? '').trim();
  const recent = [sql`${customers.lastSeenAt} is null`, desc(customers.lastSeenAt), desc(customers.number)];
  if (text === '' && staff === undefined) {
    // SQLite's statement answers at once (.all); PostgreSQL's prepared query is executed (its .all gives unmapped rows).
    return onPostgres ? await recentStatement(db).execute({ company: companyId, limit }) : recentStatement(db).all({ company: companyId, limit });
  }
  if (text === '') return await db.select(listedColumns).from(customers).where(base).orderBy(...recent).limit(limit);
  const pattern = `%${escapeLike(text.toLowerCase())}%`;
  const any: SQL[] = [
    sql`lower(${customers.fullName}) like ${pattern} escape '\\'`,
    sql`lower(${customers.email}) like ${pattern} escape '\\'`,
  ];
  const digits = text.replace(/\D/g, '');
  if (/^[+\d\s().-]+$/.test(text) && digits.length >= 3) any.push(like(customers.phone, `%${digits}%`));
  const n = customerNumberOf(text);
  if (n !== undefined) any.push(eq(customers.number, n));
  const order = n !== undefined ? [sql`case when ${customers.number} = ${n} then 0 else 1 end`, ...recent] : recent;
  return await db
    .select(listedColumns)
    .from(customers)
    .where(and(base, or(...any)))
    .orderBy(...order)
    .limit(limit);
}

/** What an erased or merged-away customer row keeps of a person: nothing (no template, no profile, no consent). */
export const cleared = {
  template: null,
  templateCount: 0,
  fullName: '',
  phone: '',
  email: '',
  gender: '',
  dateOfBirth: '',
  notes: '',
  consent: false,
  visitCount: 0,
} as const;

/** The customer's visits, newest first. */
export async function historyOf(db: Db, customerId: string) {
  return await db
    .select({
      visitId: visits.visitId,
      occurredAt: visits.occurredAt,
      lastSeenAt: visits.lastSeenAt,
      dwellMs: visits.dwellMs,
      shopId: visits.shopId,
      shopName: shops.name,
      shopSlug: shops.slug,
      cameraId: visits.cameraId,
      customerId: visits.customerId,
      isNewVisitor: visits.isNewVisitor,
      similarity: visits.similarity,
      quality: visits.quality,
      gender: visits.gender,
      age: visits.age,
      emotion: visits.emotion,
    })
    .from(visits)
    .innerJoin(shops, eq(shops.id, visits.shopId))
    .where(eq(visits.customerId, customerId))
    .orderBy(desc(visits.occurredAt), desc(visits.seq));
}

/**
 * Marks a customer as staff or not (PATCH /api/visitors/{id}). Their visits carry the flag too (one update through
 * visits_customer_idx), so the feed and the reports, which read visits, leave them out at once, past ones included,
 * and ingest marks their new visits the same way. Call inside a transaction.
 */
export async function markStaff(ctx: Ctx, customer: CustomerRow, staff: boolean): Promise<CustomerRow> {
  const db = ctx.deps.store.db;
  if (customer.staff === staff) return customer;
  const row = (await returned(db.update(customers).set({ staff, staffChangedAt: new Date().toISOString() }).where(eq(customers.id, customer.id)).returning()))!;
  const visitsMarked = changes(await db.update(visits).set({ staff }).where(eq(visits.customerId, customer.id)));
  await audit(ctx, { action: staff ? 'customer.staff' : 'customer.not_staff', target: customer.id, detail: { ref: customerRef(customer.number), visits: visitsMarked } });
  return row;
}

export interface ProfileInput {
  full_name: string;
  phone: string;
  email: string;
  gender: string;
  date_of_birth: string;
  notes: string;
  consent: boolean;
}

/** Whole-object replace of the profile; records a consent change. Call inside a transaction. */
export async function replaceProfile(ctx: Ctx, customer: CustomerRow, p: ProfileInput): Promise<CustomerRow> {
  const db = ctx.deps.store.db;
  const now = new Date().toISOString();
  const consentChanged = p.consent !== customer.consent;
  const next = {
    fullName: p.full_name,
    phone: p.phone,
    email: p.email,
    gender: p.gender,
    dateOfBirth: p.date_of_birth,
    notes: p.notes,
    consent: p.consent,
    profileUpdatedAt: now,
    ...(consentChanged ? { consentChangedAt: now } : {}),
  };
  const changed = (Object.keys(next) as (keyof typeof next)[]).filter((k) => k !== 'profileUpdatedAt' && k !== 'consentChangedAt' && next[k] !== customer[k]);
  const row = (await returned(db.update(customers).set(next).where(eq(customers.id, customer.id)).returning()))!;
  if (consentChanged) await recordConsent(ctx, customer, p.consent, 'profile', now);
  await audit(ctx, { action: 'customer.profile', target: customer.id, detail: { ref: customerRef(customer.number), changed } });
  return row;
}

async function recordConsent(ctx: Ctx, customer: Pick<CustomerRow, 'id' | 'companyId'>, consent: boolean, reason: string, at: string): Promise<void> {
  const actor = ctx.state.actor;
  await ctx.deps.store.db
    .insert(customerConsents)
    .values({ companyId: customer.companyId, customerId: customer.id, consent, reason, at, actorId: actor?.userId ?? null, actorEmail: actor?.email ?? null });
}

export interface Erased {
  erased: string;
  ref: string;
  visits_unlinked: number;
  images_deleted: number;
  consent_revoked: boolean;
  /** Until when the same face is counted as footfall instead of being enrolled again (null: no template was kept). */
  enrolment_blocked_until: string | null;
}

/**
 * Erasure (spec: Customer present -> erased). In one transaction: every photo file is moved aside (a failure puts
 * them back and answers 502 storage_error with nothing erased), a do-not-enrol marker of the template is stored,
 * visits are unlinked, photo rows deleted, consent revoked and recorded, the row cleared and marked. After the commit
 * the moved files are deleted and the template leaves memory.
 */
export async function eraseCustomer(ctx: Ctx, customerId: string): Promise<Erased> {
  const { store, config, identities, log } = ctx.deps;
  const companyId = ctx.state.actor!.companyId!;
  if (!identities.canMark) {
    throw new HttpError(503, 'no_encryption_key', 'Customers cannot be erased right now: this server cannot read its encryption key, which keeps an erased face from being enrolled again. Nothing was erased; ask the operator to restore the key.');
  }
  let moved: string[] = [];
  let done: { result: Erased; model: string; marker: { sketch: Uint8Array; expiresAt: number } | undefined };
  try {
    done = await store.tx(async () => {
      // Read inside the body: on PostgreSQL store.db is the transaction's connection only there.
      const db = store.db;
      const c = await customerOr404(db, companyId, customerId);
      const nowMs = Date.now();
      const now = new Date(nowMs).toISOString();
      const faces = await facesOf(db, c.id);
      try {
        moved = moveAside(config.dataDir, faces);
      } catch (err) {
        if (err instanceof StorageError) {
          log.error({ err, customer_id: c.id }, 'erasure refused: a photo could not be deleted');
          throw new HttpError(502, 'storage_error', 'A photo of this customer could not be deleted, so nothing was erased. Check the data folder and try again.');
        }
        throw err;
      }
      // Photos kept in the database (PostgreSQL) go with their rows below, in this transaction.
      const imagesDeleted = moved.length + faces.filter((f) => faceFile(config.dataDir, f) === undefined).length;
      const marker = c.template ? identities.markerFor(companyId, templateFromBlob(c.template), nowMs) : undefined;
      if (marker) {
        await db.insert(doNotEnrol)
          .values({ companyId, recognitionModel: c.recognitionModel, sketch: Buffer.from(marker.sketch), expiresAt: new Date(marker.expiresAt).toISOString() });
      }
      const unlinked = changes(await db
        .update(visits)
        .set({ customerId: null, isNewVisitor: false, similarity: null, faceImageId: null, mergedFrom: null })
        .where(eq(visits.customerId, c.id)));
      await db.delete(faceImages).where(eq(faceImages.customerId, c.id));
      await recordConsent(ctx, c, false, 'erasure', now);
      await db.update(customers)
        .set({
          ...cleared,
          galleryTick: await tickGalleryClock(ctx.deps.store, companyId),
          consentChangedAt: now,
          profileUpdatedAt: null,
          firstSeenAt: null,
          lastSeenAt: null,
          erasedAt: now,
        })
        .where(eq(customers.id, c.id));
      const result: Erased = {
        erased: c.id,
        ref: customerRef(c.number),
        visits_unlinked: unlinked,
        images_deleted: imagesDeleted,
        consent_revoked: true,
        enrolment_blocked_until: marker ? new Date(marker.expiresAt).toISOString() : null,
      };
      await audit(ctx, { action: 'customer.erase', target: c.id, detail: { ref: result.ref, visits_unlinked: unlinked, images_deleted: imagesDeleted, marker: marker !== undefined } });
      return { result, model: c.recognitionModel, marker };
    });
  } catch (err) {
    putBack(moved);
    throw err;
  }
  destroyMoved(moved, log);
  identities.afterErase(companyId, done.model, customerId, done.marker);
  return done.result;
}

/**
 * Merges customer `drop` into `keep` (the same person enrolled twice): visits, photos and purchases move to `keep`
 * (each re-linked visit remembers `drop` in merged_from), the earliest enrolling visit stays the only new-visitor row,
 * stats add up, empty profile fields of `keep` are filled from `drop`, consent is kept if either gave it, and the
 * templates are merged (weighted running means). `drop` stays as a row pointing at `keep`; its references resolve
 * to `keep`. Call inside a transaction; returns what memory needs after the commit.
 */
export async function mergeCustomers(ctx: Ctx, keep: CustomerRow, drop: CustomerRow) {
  const db = ctx.deps.store.db;
  const now = new Date().toISOString();
  const sameModel = keep.recognitionModel === drop.recognitionModel;
  let merged: TemplateState | undefined;
  if (sameModel && keep.template && drop.template) {
    merged = mergedTemplate(
      { template: templateFromBlob(keep.template), count: Math.max(1, keep.templateCount) },
      { template: templateFromBlob(drop.template), count: Math.max(1, drop.templateCount) },
      DEFAULT_MATCHER_OPTIONS.templateWeightCap,
    );
  }
  // Both rows change what the company's galleries hold (server/visits/gallery-clock.ts).
  const tick = await tickGalleryClock(ctx.deps.store, keep.companyId);
  // One person: staff if either was marked (their visits follow).
  const staff = keep.staff || drop.staff;
  const moved = changes(await db
    .update(visits)
    .set({ customerId: keep.id, mergedFrom: sql`coalesce(${visits.mergedFrom}, ${drop.id})`, staff })
    .where(eq(visits.customerId, drop.id)));
  if (staff !== keep.staff) (await db.update(visits).set({ staff }).where(eq(visits.customerId, keep.id)));
  // One person: their visits in a shop within the gap of each other are one stay (docs/visits-and-customers.md).
  const joined = await rejoinStays(ctx.deps.store, keep.id, ctx.deps.config.FOOTFALL_VISIT_GAP_S * 1000);
  // Exactly one enrolling visit: the earliest.
  const firsts = await db
    .select({ seq: visits.seq })
    .from(visits)
    .where(and(eq(visits.customerId, keep.id), eq(visits.isNewVisitor, true)))
    .orderBy(asc(visits.occurredAt), asc(visits.seq));
  for (const f of firsts.slice(1)) (await db.update(visits).set({ isNewVisitor: false }).where(eq(visits.seq, f.seq)));
  await db.update(faceImages).set({ customerId: keep.id }).where(eq(faceImages.customerId, drop.id));
  await db.update(purchases).set({ customerId: keep.id }).where(eq(purchases.customerId, drop.id));

  const fill = (a: string, b: string) => (a.trim() !== '' ? a : b);
  const consent = keep.consent || drop.consent;
  const earliest = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a < b ? a : b);
  const latest = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : a > b ? a : b);
  const row = (await returned(db
    .update(customers)
    .set({
      fullName: fill(keep.fullName, drop.fullName),
      phone: fill(keep.phone, drop.phone),
      email: fill(keep.email, drop.email),
      gender: fill(keep.gender, drop.gender),
      dateOfBirth: fill(keep.dateOfBirth, drop.dateOfBirth),
      notes: keep.notes.trim() !== '' && drop.notes.trim() !== '' && keep.notes !== drop.notes ? `${keep.notes}\n${drop.notes}` : fill(keep.notes, drop.notes),
      consent,
      ...(consent !== keep.consent ? { consentChangedAt: now } : {}),
      ...(staff !== keep.staff ? { staff, staffChangedAt: now } : {}),
      visitCount: Math.max(0, keep.visitCount + drop.visitCount - joined),
      firstSeenAt: earliest(keep.firstSeenAt, drop.firstSeenAt),
      lastSeenAt: latest(keep.lastSeenAt, drop.lastSeenAt),
      ...(merged ? { template: templateToBlob(merged.template), templateCount: merged.count } : {}),
      galleryTick: tick,
    })
    .where(eq(customers.id, keep.id))
    .returning()))!;
  if (consent !== keep.consent) await recordConsent(ctx, keep, consent, 'merge', now);
  await db.update(customers)
    .set({
      mergedInto: keep.id,
      mergedAt: now,
      ...cleared,
      galleryTick: tick,
    })
    .where(eq(customers.id, drop.id));
  // Customers merged into `drop` earlier now point at `keep` directly.
  await db.update(customers).set({ mergedInto: keep.id }).where(eq(customers.mergedInto, drop.id));
  await audit(ctx, {
    action: 'customer.merge',
    target: keep.id,
    detail: { into: customerRef(keep.number), merged: customerRef(drop.number), merged_id: drop.id, visits_moved: moved, visits_joined: joined },
  });
  return { row, merged, sameModel, visitsMoved: moved, visitsJoined: joined };
}

/** Writes the audit row for photo links handed out by one response (or one stream push). */
export async function auditPhotoLinks(ctx: Ctx, route: string, links: readonly { faceImageId: string; customerId: string | undefined }[]): Promise<void> {
  if (links.length === 0) return;
  await audit(ctx, {
    action: 'photo.link',
    target: links.length === 1 ? links[0]!.faceImageId : null,
    detail: { route, faces: links.map((l) => ({ face_image_id: l.faceImageId, visitor_id: l.customerId ?? null })) },
  });
}
