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

const count = z.number().int().min(0);
const change = z.number().nullable();
const seconds = (what: string) => z.number().min(0).meta({ description: `Additive: ${what} of the visits (stays) in seconds, one decimal; 0 without visits (docs/reports.md, "Dwell time")` });

/** Visits per age band (the age estimate's years: under 18, 18-24, ..., 65 and over; unknown: no estimate). */
const AgeBands = z
  .object({ under_18: count, '18_24': count, '25_34': count, '35_44': count, '45_54': count, '55_64': count, '65_plus': count, unknown: count })
  .meta({ id: 'AgeBands', description: 'Additive: visits per age band (docs/reports.md, "Age and gender bands"); unknown: visits without an age estimate' });
/** Visits per gender; unknown: the shop PC sent none (it sends one only when measured right). */
const GenderBands = z
  .object({ female: count, male: count, unknown: count })
  .meta({ id: 'GenderBands', description: 'Additive: visits per gender (docs/reports.md, "Age and gender bands"); unknown: no gender sent, a real band' });

/** The visit mix of a point, a shop or the window (presenter.ts presentMix). */
const mix = {
  visits: count,
  average_dwell_s: seconds('the mean length'),
  median_dwell_s: seconds('the median length'),
  age: AgeBands,
  gender: GenderBands,
  with_age: z.number().min(0).max(1).meta({ description: 'Additive: share of the visits with an age estimate, four decimals; 0 without visits' }),
  with_gender: z.number().min(0).max(1).meta({ description: 'Additive: share of the visits with a gender, four decimals; 0 without visits' }),
};

const period = { from: z.string().meta({ description: 'First local day of the period before, YYYY-MM-DD' }), to: z.string().meta({ description: 'Its last local day' }) };
const compared = 'Additive (docs/reports.md, "Compared with the period before"): the same figures over the period of the same length just before the window (whole calendar months: as many whole months before)';
const changed = 'Additive: (now - before) / before for each figure, four decimals (0.12 is +12 %); null when the figure before is 0 or null';

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
        ...mix,
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
    median_dwell_s: mix.median_dwell_s,
    age: mix.age,
    gender: mix.gender,
    with_age: mix.with_age,
    with_gender: mix.with_gender,
    sites: z
      .array(z.object({ site_id: z.string(), slug: z.string(), name: z.string(), ...mix }))
      .meta({ description: 'Additive: visits, dwell and bands per shop of the report (slug order; shops without visits too)' }),
    previous: z
      .object({
        ...period,
        total: count,
        visits: count,
        fraction_below_gate: z.number(),
        average_dwell_s: z.number().min(0),
        median_dwell_s: z.number().min(0),
        entries: count,
        exits: count,
        capture_rate: captureRate,
        open_hours: z.number().min(0).nullable(),
        visitors_per_open_hour: z.number().min(0).nullable(),
      })
      .meta({ description: compared }),
    change: z
      .object({
        total: change,
        visits: change,
        fraction_below_gate: change,
        average_dwell_s: change,
        median_dwell_s: change,
        entries: change,
        exits: change,
        capture_rate: change,
        visitors_per_open_hour: change,
      })
      .meta({ description: changed }),
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
        average_dwell_s: seconds('the mean length'),
        median_dwell_s: seconds('the median length'),
        previous: z
          .object({ ...period, visitors: count, visits: count, entries: count, purchasers: count, conversion: z.number(), visitors_per_open_hour: z.number().nullable() })
          .meta({ description: compared }),
        change: z
          .object({ visitors: change, visits: change, entries: change, purchasers: change, conversion: change, visitors_per_open_hour: change })
          .meta({ description: changed }),
      }),
    ),
  })
  .meta({ id: 'RegionRanking' });

const conversionFigures = { visitors: z.number().int(), purchasers: z.number().int(), conversion: z.number(), revenue: z.number(), average_basket: z.number(), currency: z.string() };

export const ConversionReport = z
  .object({
    ...conversionFigures,
    previous: z.object({ ...period, ...conversionFigures }).meta({ description: compared }),
    change: z
      .object({ visitors: change, purchasers: change, conversion: change, revenue: change, average_basket: change })
      .meta({ description: `${changed}; revenue and average_basket also null when both periods had sales in different main currencies` }),
  })
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
