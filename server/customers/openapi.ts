import { z } from 'zod';
import { ImageObject, routeDocs, Timestamp, Uuid } from '../openapi/registry.js';
import { Attributes } from '../visits/openapi.js';

/** The spec's Customer (./presenter.ts presentCustomer). */
export const Customer = z
  .object({
    id: Uuid,
    ref: z.string().meta({ description: '`V-<number>`' }),
    label: z.string(),
    full_name: z.string(),
    phone: z.string(),
    email: z.string(),
    visit_count: z.number().int(),
    first_seen_at: Timestamp.nullable(),
    last_seen_at: Timestamp.nullable(),
    has_profile: z.boolean(),
    has_consent: z.boolean(),
    staff: z.boolean().meta({ description: 'Additive: marked as staff (PATCH /api/visitors/{id}): their visits make no arrivals and reports leave them out' }),
  })
  .meta({ id: 'Customer' });

export const Profile = z
  .object({
    full_name: z.string(),
    phone: z.string(),
    email: z.string(),
    gender: z.string(),
    date_of_birth: z.string(),
    notes: z.string(),
    consent: z.boolean(),
    consent_changed_at: Timestamp.nullable(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Profile' });

const CustomerWithProfile = Customer.extend({ profile: Profile });

/** The list and the customer page add lifetime spend (./ranking.ts; additive fields). */
const spend = {
  purchases: z.number().int().meta({ description: 'Purchases recorded against the customer, in any currency' }),
  spend: z.number().meta({ description: 'Their total in `spend_currency` (0 without purchases)' }),
  spend_currency: z.string().meta({ description: 'The currency most of their purchases were in; empty without purchases' }),
};
const CustomerWithSpend = Customer.extend(spend).meta({ id: 'CustomerWithSpend' });
const etag = { ETag: 'The profile’s entity tag: send it as If-Match with PUT .../profile' };
const customer = { id: 'Customer id (uuid), `V-<number>` or the number' };

export const customersDocs = routeDocs({
  'GET /api/visitors': {
    summary: 'Search customers',
    description: '`q` matches name, phone, email or V-number; without it the most recent customers.',
    params: { q: 'Search text', limit: 'At most this many (1 to FOOTFALL_VISITOR_SEARCH_LIMIT_MAX)' },
    responses: { 200: { description: 'Matching customers, with their lifetime spend', json: z.array(CustomerWithSpend) } },
  },
  'GET /api/visitors/{id}': {
    summary: 'A customer with their profile',
    params: customer,
    responses: { 200: { description: 'The customer, with their lifetime spend', json: CustomerWithSpend.extend({ profile: Profile }), headers: etag } },
  },
  'GET /api/visitors/{id}/history': {
    summary: "A customer's visits",
    params: customer,
    responses: {
      200: {
        description: 'Visits, newest first',
        json: z.array(
          z.object({
            id: Uuid,
            occurred_at: Timestamp,
            last_seen_at: Timestamp.meta({ description: 'Additive: the last sighting of this stay' }),
            dwell_s: z.number().int().min(0).meta({ description: 'Additive: seconds from occurred_at to last_seen_at' }),
            site: z.string(),
            site_id: Uuid,
            site_slug: z.string(),
            camera_id: z.string(),
            is_new_visitor: z.boolean(),
            similarity: z.number(),
            quality: z.number(),
            attributes: Attributes,
          }),
        ),
      },
    },
  },
  'PATCH /api/visitors/{id}': {
    summary: 'Mark a customer as staff, or not',
    description: 'Their visits then make no arrivals, and footfall and conversion reports leave them out.',
    params: customer,
    responses: { 200: { description: 'The customer as changed, with their lifetime spend', json: CustomerWithSpend.extend({ profile: Profile }) } },
  },
  'PUT /api/visitors/{id}/profile': {
    summary: "Replace a customer's profile",
    description: 'Whole replace. With If-Match (the ETag of GET /api/visitors/{id}) only if nobody changed it meanwhile: else 412 and nothing changes.',
    params: customer,
    request: { headers: { 'If-Match': 'The ETag read with the profile' } },
    responses: { 200: { description: 'The customer as saved, with their lifetime spend (additive)', json: CustomerWithSpend.extend({ profile: Profile }), headers: etag }, 412: '`precondition_failed`: someone changed the profile since you read it' },
  },
  'GET /api/visitors/{id}/export': {
    summary: 'Everything held about a customer (subject access; managers and owners)',
    description:
      'One JSON document, sent as a download (`Content-Disposition: attachment`): profile, consent history, whether a face template and photos exist and since when, visits with shop and time, purchases, customers merged into this one, and the audit rows about them. Writes a `customer.export` audit row. docs/privacy.md.',
    params: customer,
    responses: {
      200: {
        description: 'The export',
        json: z.object({
          exported_at: Timestamp,
          exported_by: z.string(),
          company: z.string(),
          customer: CustomerWithProfile.passthrough(),
          consent_history: z.array(z.object({ consent: z.boolean(), reason: z.string(), at: Timestamp, by: z.string().nullable() })),
          face_template: z.object({ held: z.boolean(), since: z.string().nullable(), recognition_model: z.string().nullable(), images_averaged: z.number().int(), note: z.string() }),
          photos: z.array(z.object({ id: z.string(), taken_at: Timestamp, shop: z.string().nullable(), visit_id: z.string().nullable() })),
          merged_from: z.array(z.object({ id: Uuid, ref: z.string(), merged_at: z.string().nullable() })),
          visits: z.array(z.record(z.string(), z.unknown())),
          purchases: z.array(z.record(z.string(), z.unknown())),
          audit: z.array(z.record(z.string(), z.unknown())),
        }),
      },
    },
  },
  'DELETE /api/visitors/{id}': {
    summary: 'Erase a customer',
    description: 'Template and photos destroyed, visits kept but unlinked, consent revoked; the same face is not enrolled again for a while.',
    params: customer,
    responses: {
      200: {
        description: 'Erased',
        json: z.object({
          erased: Uuid,
          ref: z.string(),
          visits_unlinked: z.number().int(),
          images_deleted: z.number().int(),
          consent_revoked: z.boolean(),
          enrolment_blocked_until: Timestamp.nullable(),
        }),
      },
      502: '`storage_error`: a photo could not be deleted; nothing was erased',
      503: '`no_encryption_key`: nothing was erased',
    },
  },
  'POST /api/visitors/{id}/merge': {
    summary: 'Merge this customer into another',
    params: { id: 'The customer merged away (uuid, V-number or number)' },
    responses: {
      200: { description: 'The surviving customer', json: CustomerWithProfile.extend({ merged: z.object({ id: Uuid, ref: z.string(), visits_moved: z.number().int(), visits_joined: z.number().int().meta({ description: 'Additive: visits that became one stay with a visit of the survivor (same shop, within FOOTFALL_VISIT_GAP_S)' }) }) }) },
    },
  },
  'GET /api/visitors/{id}/image': {
    summary: "A customer's latest photo (link)",
    params: customer,
    responses: { 200: { description: 'The Image object', json: ImageObject }, 404: '`no_image`: nothing captured; `images_disabled`: the deployment stores none; `not_found`' },
  },
  'GET /api/faces/{id}': {
    summary: 'A face photo',
    params: { id: 'Face image id (from an Image object’s url)' },
    responses: { 200: { description: 'The photo', media: 'image/jpeg' }, 404: 'Not found, another company’s, or `images_disabled`' },
  },
});
