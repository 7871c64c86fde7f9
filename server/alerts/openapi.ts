import { z } from 'zod';
import { routeDocs, Timestamp, Uuid } from '../openapi/registry.js';
import { ALERT_KINDS } from './rules.js';

/** Response shapes of ./presenter.ts. */
export const Alert = z
  .object({
    id: Uuid,
    kind: z.enum(ALERT_KINDS),
    title: z.string().meta({ description: 'The rule, for people' }),
    message: z.string().meta({ description: 'What was wrong when it was raised' }),
    site_id: Uuid,
    site: z.string(),
    site_slug: z.string(),
    camera: z.object({ id: Uuid, camera_id: z.string().nullable(), label: z.string().nullable() }).nullable().meta({ description: 'The camera, for camera rules; null for shop rules' }),
    open: z.boolean().meta({ description: 'Not cleared yet' }),
    raised_at: Timestamp,
    cleared_at: Timestamp.nullable(),
  })
  .meta({ id: 'Alert' });

const Rule = z.object({ enabled: z.boolean(), after_minutes: z.number().int(), threshold: z.number().optional() });

export const AlertSettings = z
  .object({
    rules: z.object(Object.fromEntries(ALERT_KINDS.map((k) => [k, Rule]))),
    email_to: z.array(z.string()).nullable().meta({ description: 'The list set; null: the company’s active owners and managers' }),
    email_recipients: z.array(z.string()).meta({ description: 'Who gets the e-mails now' }),
    webhook_url: z.string().nullable(),
    webhook_secret_set: z.boolean(),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'AlertSettings' });

export const alertsDocs = routeDocs({
  'GET /api/alerts': {
    summary: 'Alert history',
    description: 'Additive route (docs/operations.md, "Alerts"). Newest first; send `next_cursor` back as `cursor` for the older page. 400 `invalid_cursor`: a cursor that does not parse.',
    params: { cursor: 'Opaque, from the previous page', limit: '1 to 200, default 50', state: 'open (not cleared) or all (default)', site: 'Only this shop (slug or id)' },
    responses: {
      200: {
        description: 'A page',
        json: z.object({ alerts: z.array(Alert), next_cursor: z.string().nullable(), open_count: z.number().int().meta({ description: 'Open alerts of the company (the bell)' }) }),
      },
    },
  },
  'GET /api/alerts/settings': { summary: 'Alert rules and recipients', responses: { 200: { description: 'The settings (defaults until changed)', json: AlertSettings } } },
  'PATCH /api/alerts/settings': {
    summary: 'Change alert rules and recipients',
    description: 'Manager or owner. Rules named are merged over the current ones; an omitted field is left alone. `webhook_url` null removes the webhook and its secret; a new webhook needs `webhook_secret` (kept sealed, never shown).',
    responses: { 200: { description: 'The settings now', json: AlertSettings }, 503: '`no_encryption_key`: the server key is missing, so a webhook secret cannot be kept' },
  },
});
