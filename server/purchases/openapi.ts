import { z } from 'zod';
import { routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

/** The answer of ./presenter.ts presentPurchase. */
export const Purchase = z
  .object({
    id: Uuid,
    visitor_id: Uuid,
    visitor_ref: z.string(),
    site_id: Uuid.nullable(),
    site: z.string(),
    site_slug: z.string(),
    amount: z.number().meta({ description: "In the currency's major unit" }),
    currency: z.string().meta({ description: 'ISO 4217' }),
    items: z.array(z.string()),
    source: z.string(),
    notes: z.string(),
    created_at: Timestamp,
    created_by: z.string(),
  })
  .meta({ id: 'Purchase' });

export const purchasesDocs = routeDocs({
  'GET /api/visitors/{id}/purchases': {
    summary: "A customer's purchases",
    params: { id: 'Customer id (uuid), `V-<number>` or the number', limit: 'At most this many, 1 to 500 (default 100)' },
    responses: { 200: { description: 'Newest first', json: z.array(Purchase) } },
  },
  'POST /api/purchases': {
    summary: 'Record a sale',
    description: 'A retry with the same `purchase_id` and content answers 200 with the stored sale; different content is 409.',
    responses: {
      200: { description: 'Already recorded (a retry)', json: Purchase },
      201: { description: 'Recorded', json: Purchase },
      404: 'Unknown customer or shop',
      409: 'A different purchase has this purchase_id',
    },
  },
});
