import { z } from 'zod';
import { routeDocs } from '../openapi/registry.js';
import { FormatInput } from './csv.js';
import { ReportQueryInput } from './query.js';

const captureRate = z
  .number()
  .min(0)
  .max(1)
  .nullable()
  .meta({ description: 'Additive: identified visits / entries (docs/reports.md), four decimals; null without entries' });

/** The answers of ./presenter.ts. */
export const FootfallReport = z
  .object({
    from: z.string().meta({ description: 'YYYY-MM-DD' }),
    to: z.string().meta({ description: 'YYYY-MM-DD' }),
    bucket: z.enum(['hour', 'day', 'week', 'month']),
    timezone: z.string(),
    points: z.array(
      z.object({
        bucket: z.string(),
        visitors: z.number().int(),
        new: z.number().int(),
        returning: z.number().int(),
        entries: z.number().int().min(0).meta({ description: 'Additive: crossings of a counting line into the shop in the bucket (docs/body-counting.md)' }),
        exits: z.number().int().min(0).meta({ description: 'Additive: crossings out of the shop in the bucket' }),
        capture_rate: captureRate,
        open: z.boolean().nullable().meta({ description: "Additive: hour buckets: whether a shop of the report was open in that hour by its opening hours; null for other buckets, or when a shop of the report has no opening hours" }),
      }),
    ),
    total: z.number().int(),
    visits: z.number().int(),
    fraction_below_gate: z.number(),
    worst_site: z.string(),
    average_dwell_s: z.number().min(0).meta({ description: 'Additive: the average visit (a stay, first to last sighting) in seconds, one decimal; 0 without visits' }),
    entries: z.number().int().min(0).meta({ description: 'Additive: entries over the window (the sum of the points’)' }),
    exits: z.number().int().min(0).meta({ description: 'Additive: exits over the window (the sum of the points’)' }),
    capture_rate: captureRate,
    region: z.string().nullable().meta({ description: 'Additive: the region filtered on; null when none' }),
    open_hours: z.number().min(0).nullable().meta({ description: "Additive: hours the report's shops were open over the window (summed over shops); null unless every shop has opening hours" }),
    visitors_per_open_hour: z.number().min(0).nullable().meta({ description: 'Additive: total / open_hours, two decimals; null without open hours' }),
  })
  .meta({ id: 'FootfallReport' });

export const RegionRanking = z
  .object({
    from: z.string(),
    to: z.string(),
    timezone: z.string(),
    regions: z.array(
      z.object({
        region: z.string().nullable().meta({ description: 'null: the shops without a region' }),
        shops: z.number().int(),
        visitors: z.number().int().meta({ description: 'Unique people over the window' }),
        visits: z.number().int(),
        entries: z.number().int(),
        purchasers: z.number().int(),
        conversion: z.number(),
        visitors_per_open_hour: z.number().nullable(),
      }),
    ),
  })
  .meta({ id: 'RegionRanking' });

export const ConversionReport = z
  .object({ visitors: z.number().int(), purchasers: z.number().int(), conversion: z.number(), revenue: z.number(), average_basket: z.number(), currency: z.string() })
  .meta({ id: 'ConversionReport' });

const params = {
  from: 'First local day, YYYY-MM-DD',
  to: 'Last local day, YYYY-MM-DD (default today)',
  site: 'Only this shop (slug or id); omitted: the whole company',
  site_id: 'The same filter as `site`',
  region: 'Additive: only the shops of this region (docs/reports.md, "Regions"); a region no shop has: 400',
  tz: 'IANA time zone (default the shop’s, or the company’s first shop’s)',
  bucket: 'hour, day (default), week or month',
};
/** `format` is read by the handler (./csv.ts formatOf: case and blanks forgiven), so the document adds it to the validated query. */
const query = ReportQueryInput.extend({ format: FormatInput.meta({ description: 'json (default) or csv: the same report as a CSV download' }) });
const window = 'Local days `from` to `to` in `tz` (docs/reports.md for defaults and the longest window per bucket). Unknown `site`: 400.';

export const reportsDocs = routeDocs({
  'GET /api/reports/footfall': {
    summary: 'Footfall per bucket',
    description: window,
    params,
    request: { query },
    responses: { 200: { description: 'The report (CSV with format=csv)', json: FootfallReport, media: 'text/csv' } },
  },
  'GET /api/reports/regions': {
    summary: 'Regions ranked by visitors',
    description: 'Additive route (docs/reports.md, "Regions"). The same window as the footfall report (`site`, `region` and `bucket` are ignored); most visitors first, the shops without a region as `region: null`.',
    params,
    request: { query: ReportQueryInput },
    responses: { 200: { description: 'The ranking', json: RegionRanking } },
  },
  'GET /api/reports/conversion': {
    summary: 'Visitors, purchasers and revenue',
    description: window,
    params,
    request: { query },
    responses: { 200: { description: 'The report (CSV with format=csv)', json: ConversionReport, media: 'text/csv' } },
  },
});
