import { z } from 'zod';
import { routeDocs, Timestamp } from '../openapi/registry.js';

export const AuditEntry = z
  .object({
    id: z.number().int(),
    at: Timestamp,
    action: z.string().meta({ description: 'What was done, e.g. auth.sign_in, customer.view, customer.export, privacy.update (docs/privacy.md lists them)' }),
    actor_id: z.string().nullable().meta({ description: 'The member who acted; null for the system (the privacy sweep) or a shop PC' }),
    actor_email: z.string().nullable().meta({ description: 'Their email address when they acted' }),
    target: z.string().nullable().meta({ description: 'The id of what was acted on (a customer, member, camera, ...)' }),
    detail: z.record(z.string(), z.unknown()),
    request_id: z.string().nullable(),
  })
  .meta({ id: 'AuditEntry' });

export const auditDocs = routeDocs({
  'GET /api/audit': {
    summary: 'The audit trail (owners)',
    description:
      'Newest first. Filters: `actor` (member id or email), `action` (exact, or a family ending in a dot such as `customer.`), `customer` (id or V-number: rows about that customer), `from` and `to` (timestamps, inclusive). `cursor` is null on the last page; send it back with the same filters for the next, older page. Rows are kept FOOTFALL_AUDIT_RETENTION_DAYS days.',
    params: { limit: '1 to 500 (default 100)', cursor: 'The previous page’s cursor', actor: 'Member id or email', action: 'Action or family (`customer.`)', customer: 'Customer id or V-number', from: 'Earliest time', to: 'Latest time' },
    responses: {
      200: { description: 'A page of audit rows', json: z.object({ entries: z.array(AuditEntry), cursor: z.string().nullable() }) },
      400: '`invalid_request`: a bad filter; `invalid_cursor`: a cursor that does not open',
    },
  },
});
