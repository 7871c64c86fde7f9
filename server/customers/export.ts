import { asc, eq } from 'drizzle-orm';
import { audit } from '../audit/service.js';
import { listAudit } from '../audit/query.js';
import { presentAuditEntry } from '../audit/presenter.js';
import type { Ctx } from '../context.js';
import { presentPurchase } from '../purchases/presenter.js';
import { purchasesOf } from '../purchases/service.js';
import { presentAttributes, presentStay } from '../visits/presenter.js';
import { noSpend, spendOf } from './ranking.js';
import { customerRef, presentCustomer, presentProfile, type CustomerRow } from './presenter.js';
import { historyOf } from './service.js';
import { shops, customerConsents, customers, faceImages } from '../db/tables.js';

/**
 * Subject access (GDPR Art. 15; issue 29): everything head office holds about one customer, as one JSON document
 * (docs/privacy.md, "Subject access"). Reads only this customer's rows; the audit rows are those about them. Writes
 * a `customer.export` audit row (after reading, so the export does not list itself).
 */
export async function exportCustomer(ctx: Ctx, c: CustomerRow) {
  const db = ctx.deps.store.db;
  const consents = await db.select().from(customerConsents).where(eq(customerConsents.customerId, c.id)).orderBy(asc(customerConsents.at), asc(customerConsents.id));
  const photos = await db
    .select({ id: faceImages.id, createdAt: faceImages.createdAt, visitId: faceImages.visitId, shop: shops.name })
    .from(faceImages)
    .leftJoin(shops, eq(shops.id, faceImages.shopId))
    .where(eq(faceImages.customerId, c.id))
    .orderBy(asc(faceImages.createdAt));
  const merged = await db.select({ id: customers.id, number: customers.number, mergedAt: customers.mergedAt }).from(customers).where(eq(customers.mergedInto, c.id));
  const visits = await historyOf(db, c.id);
  const purchases = await purchasesOf(db, c.id, 100_000);
  const trail = (await listAudit(db, { companyId: c.companyId, customerId: c.id, limit: 100_000 })).rows;
  const document = {
    exported_at: new Date().toISOString(),
    exported_by: ctx.state.actor!.email,
    company: ctx.state.actor!.companyName,
    customer: { ...presentCustomer(c), ...((await spendOf(db, [c.id])).get(c.id) ?? noSpend), profile: presentProfile(c), created_at: c.createdAt, first_seen_at: c.firstSeenAt, last_seen_at: c.lastSeenAt, staff_changed_at: c.staffChangedAt, consent_changed_at: c.consentChangedAt },
    consent_history: consents.map((k) => ({ consent: k.consent, reason: k.reason, at: k.at, by: k.actorEmail })),
    face_template: {
      held: c.template !== null,
      since: c.template !== null ? c.createdAt : null,
      recognition_model: c.template !== null ? c.recognitionModel : null,
      images_averaged: c.templateCount,
      note: 'A face template is 512 numbers computed from face photos; it is used only to recognise this person on a later visit and is not included here.',
    },
    photos: photos.map((p) => ({ id: p.id, taken_at: p.createdAt, shop: p.shop, visit_id: p.visitId })),
    merged_from: merged.map((m) => ({ id: m.id, ref: customerRef(m.number), merged_at: m.mergedAt })),
    visits: visits.map((v) => ({ id: v.visitId, occurred_at: v.occurredAt, ...presentStay(v), shop: v.shopName, shop_id: v.shopId, camera_id: v.cameraId, attributes: presentAttributes(v) })),
    purchases: purchases.map((p) => presentPurchase(p.purchase, c, p.shop ?? undefined)),
    audit: trail.map(presentAuditEntry),
  };
  await audit(ctx, { action: 'customer.export', target: c.id, detail: { ref: customerRef(c.number), visits: visits.length, purchases: purchases.length, photos: photos.length } });
  return document;
}
