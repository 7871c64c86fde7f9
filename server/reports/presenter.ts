import { fromMinor } from '../purchases/service.js';
import type { ConversionReport, FootfallReport } from './service.js';
import type { ReportQuery } from './query.js';

/** Ratios are rounded to four decimals (0.6667), enough for a percentage with two. */
export function ratio(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** Milliseconds as seconds with one decimal. */
function dwellSeconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** The spec's footfall report. */
export function presentFootfall(r: FootfallReport) {
  return {
    from: r.query.from,
    to: r.query.to,
    bucket: r.query.bucket,
    timezone: r.query.tz,
    points: r.points.map((p) => ({
      bucket: p.label,
      visitors: p.visitors,
      new: p.newVisitors,
      returning: p.returning,
      entries: p.entries,
      exits: p.exits,
      capture_rate: p.captureRate === null ? null : ratio(p.captureRate),
      /** Additive (docs/reports.md, "Opening hours"): hour buckets only; null without opening hours. */
      open: p.open,
    })),
    total: r.total,
    visits: r.visits,
    fraction_below_gate: ratio(r.fractionBelowGate),
    worst_site: r.worstSite?.name ?? '',
    /** Additive (docs/reports.md): the average visit (a stay: first to last sighting) in seconds. */
    average_dwell_s: dwellSeconds(r.averageDwellMs),
    /** Additive (docs/body-counting.md): crossings of the counting lines over the window, and the capture rate. */
    entries: r.entries,
    exits: r.exits,
    capture_rate: r.captureRate === null ? null : ratio(r.captureRate),
    /** Additive (docs/reports.md, "Opening hours"): hours open over the window, and visitors per open hour. */
    region: r.query.region || null,
    open_hours: r.openHours === null ? null : Math.round(r.openHours * 100) / 100,
    visitors_per_open_hour: r.openHours === null || r.openHours === 0 ? null : Math.round((r.total / r.openHours) * 100) / 100,
  };
}

/** The spec's conversion report: revenue and average basket in the main currency's major unit. */
export function presentConversion(r: ConversionReport) {
  const main = r.main;
  return {
    visitors: r.visitors,
    purchasers: r.purchasers,
    conversion: ratio(r.conversion),
    revenue: main ? fromMinor(main.amountMinor, main.currency) : 0,
    average_basket: main ? fromMinor(Math.round(main.amountMinor / main.baskets), main.currency) : 0,
    currency: main?.currency ?? '',
  };
}

/** GET /api/reports/regions: most visitors first; ties by name, the shops without a region last. */
export function presentRegions(
  q: ReportQuery,
  rows: { region: string | null; shops: number; f: ReturnType<typeof presentFootfall>; c: ReturnType<typeof presentConversion> }[],
) {
  const regions = rows
    .map(({ region, shops, f, c }) => ({
      region,
      shops,
      visitors: f.total,
      visits: f.visits,
      entries: f.entries,
      purchasers: c.purchasers,
      conversion: c.conversion,
      visitors_per_open_hour: f.visitors_per_open_hour,
    }))
    .sort((a, b) => b.visitors - a.visitors || (a.region === null ? 1 : b.region === null ? -1 : a.region.localeCompare(b.region)));
  return { from: q.from, to: q.to, timezone: q.tz, regions };
}
