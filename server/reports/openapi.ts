import { z } from 'zod';
import { routeDocs } from '../openapi/registry.js';

/** The answers of ./presenter.ts. */
export const FootfallReport = z
  .object({
    from: z.string().meta({ description: 'YYYY-MM-DD' }),
    to: z.string().meta({ description: 'YYYY-MM-DD' }),
    bucket: z.enum(['hour', 'day', 'week', 'month']),
    timezone: z.string(),
    points: z.array(z.object({ bucket: z.string(), visitors: z.number().int(), new: z.number().int(), returning: z.number().int() })),
    total: z.number().int(),
    visits: z.number().int(),
    fraction_below_gate: z.number(),
    worst_site: z.string(),
  })
  .meta({ id: 'FootfallReport' });

export const ConversionReport = z
  .object({ visitors: z.number().int(), purchasers: z.number().int(), conversion: z.number(), revenue: z.number(), average_basket: z.number(), currency: z.string() })
  .meta({ id: 'ConversionReport' });

const params = {
  from: 'First local day, YYYY-MM-DD',
  to: 'Last local day, YYYY-MM-DD (default today)',
  site: 'Only this shop (slug or id); omitted: the whole company',
  site_id: 'The same filter as `site`',
  tz: 'IANA time zone (default the shop’s, or the company’s first shop’s)',
  bucket: 'hour, day (default), week or month',
};
const window = 'Local days `from` to `to` in `tz` (docs/reports.md for defaults and the longest window per bucket). Unknown `site`: 400.';

export const reportsDocs = routeDocs({
  'GET /api/reports/footfall': { summary: 'Footfall per bucket', description: window, params, responses: { 200: { description: 'The report', json: FootfallReport } } },
  'GET /api/reports/conversion': { summary: 'Visitors, purchasers and revenue', description: window, params, responses: { 200: { description: 'The report', json: ConversionReport } } },
});
