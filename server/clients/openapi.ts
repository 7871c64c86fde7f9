import { z } from 'zod';
import { routeDocs, Timestamp, Uuid } from '../openapi/registry.js';

/** Response shape of ./presenter.ts. */
export const Company = z
  .object({ id: Uuid, slug: z.string(), name: z.string(), sites: z.number().int(), users: z.number().int(), created_at: Timestamp, active: z.boolean() })
  .meta({ id: 'Company' });

const company = { id: 'Company id (uuid)' };

export const clientsDocs = routeDocs({
  'GET /api/admin/clients': { summary: 'Every company', responses: { 200: { description: 'Companies with their counts', json: z.array(Company) } } },
  'POST /api/admin/clients': {
    summary: 'Create a company and its owner',
    responses: {
      201: { description: 'Created; the owner’s password is shown once', json: z.object({ client_id: Uuid, slug: z.string(), owner_email: z.string(), password: z.string() }) },
      409: 'The slug or the owner’s address is taken',
    },
  },
  'PATCH /api/admin/clients/{id}': {
    summary: 'Suspend or reactivate a company',
    params: company,
    responses: { 200: { description: 'The company; suspending revokes every session', json: z.object({ client: Company, sessions_revoked: z.number().int() }) } },
  },
  'POST /api/admin/clients/{id}/owner-password': {
    summary: "Reset an owner's password",
    params: company,
    responses: { 200: { description: 'The new password, shown once', json: z.object({ email: z.string(), password: z.string() }) }, 400: 'Several owners and no `email` (`owners` lists them), or not an owner' },
  },
  'DELETE /api/admin/clients/{id}': {
    summary: 'Delete a suspended company and everything it holds',
    params: company,
    responses: {
      200: { description: 'Deleted', json: z.object({ deleted: z.string().meta({ description: 'The slug' }), images_deleted: z.number().int() }) },
      409: '`still_active`: suspend it first',
      502: '`storage_error`: stored images could not be deleted; nothing else was touched',
    },
  },
});
