import { z } from 'zod';
import { routeDocs, Timestamp } from '../openapi/registry.js';

export const PrivacySettings = z
  .object({
    recognition: z.enum(['all', 'consented', 'off']).meta({ description: '`all`: everyone is recognised across visits; `consented`: only customers with consent, anyone else’s template is dropped when their stay ends; `off`: count only, shop PCs send no embedding or photo' }),
    template_retention_days: z.number().int().meta({ description: 'A customer without consent not seen for this many days is forgotten with their photos (default 90)' }),
    visit_retention_days: z
      .number()
      .int()
      .nullable()
      .meta({ description: '1 to 3650: visits and door crossings of a shop’s local days older than this are counted into per-shop quarter-hour counts and deleted (reports keep their figures, docs/privacy.md); null (default): kept' }),
    updated_at: Timestamp.nullable(),
    updated_by: z.string().nullable(),
    sweep_pending: z.boolean().meta({ description: 'A change the privacy sweep has not yet applied to existing data' }),
    swept_at: Timestamp.nullable(),
  })
  .meta({ id: 'PrivacySettings' });

export const privacyDocs = routeDocs({
  'GET /api/company/privacy': { summary: 'The company’s privacy settings (owners)', responses: { 200: { description: 'The settings (defaults until changed)', json: PrivacySettings } } },
  'PATCH /api/company/privacy': {
    summary: 'Change the privacy settings (owners)',
    description: 'Any of the three fields. The privacy sweep applies the change to existing data at once (restartable; audited as `privacy.sweep`); a recognition change is pushed to the company’s shop PCs through their camera list. docs/privacy.md.',
    responses: {
      200: { description: 'The settings as changed', json: PrivacySettings },
    },
  },
});
