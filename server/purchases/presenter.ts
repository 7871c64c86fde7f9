import { customerRef } from '../customers/presenter.js';
import { fromMinor, type PurchaseRow } from './service.js';

/** The answer of POST /api/purchases. */
export function presentPurchase(p: PurchaseRow, customer: { number: number }, shop: { id: string; name: string; slug: string } | undefined) {
  return {
    id: p.id,
    visitor_id: p.customerId,
    visitor_ref: customerRef(customer.number),
    site_id: shop?.id ?? null,
    site: shop?.name ?? '',
    site_slug: shop?.slug ?? '',
    amount: fromMinor(p.amountMinor, p.currency),
    currency: p.currency,
    items: p.items,
    source: p.source,
    notes: p.notes,
    created_at: p.createdAt,
    created_by: p.createdByEmail ?? '',
  };
}
