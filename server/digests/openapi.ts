import { z } from 'zod';
import { routeDocs } from '../openapi/registry.js';

const Subscription = z
  .object({
    frequency: z.enum(['daily', 'weekly', 'off']).meta({ description: 'Default: weekly for owners and managers, off for staff' }),
    hour: z.number().int().meta({ description: "The local hour (company's zone) the e-mails are sent at" }),
    email: z.string(),
  })
  .meta({ id: 'ReportSubscription' });

export const digestsDocs = routeDocs({
  'GET /api/reports/subscription': { summary: 'My scheduled report e-mails', description: 'Additive route (docs/reports.md, "Scheduled e-mails").', responses: { 200: { description: 'My choice', json: Subscription } } },
  'PUT /api/reports/subscription': { summary: 'Choose my scheduled report e-mails', description: 'Additive route. `frequency` daily, weekly or off (opt out).', responses: { 200: { description: 'My choice now', json: Subscription } } },
});
