import { fromMinor } from '../purchases/service.js';
import type { ConversionReport, CurrencyTotal, FootfallReport } from './service.js';
import type { Mix } from './mix.js';
import type { ReportQuery } from './query.js';

/** Ratios are rounded to four decimals (0.6667), enough for a percentage with two. */
export function ratio(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** Milliseconds as seconds with one decimal. */
function dwellSeconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** Visits, mean and median dwell, and the age and gender bands of a point, a shop or the window (mix.ts). */
function presentMix(m: Mix) {
  return {
    visits: m.visits,
    average_dwell_s: dwellSeconds(m.visits === 0 ? 0 : m.dwellMs / m.visits),
    median_dwell_s: dwellSeconds(m.medianDwellMs),
    age: m.age,
    gender: m.gender,
    /** Shares of the visits that had an age estimate, and a gender. */
    with_age: ratio(m.visits === 0 ? 0 : (m.visits - m.age.unknown) / m.visits),
    with_gender: ratio(m.visits === 0 ? 0 : (m.visits - m.gender.unknown) / m.visits),
  };
}

/**
 * The change of each figure of `before` (docs/reports.md, "Compared with the period before"): (now - before) / before
 * from the presented numbers, four decimals; null when the figure before is 0 or null, or now is null. One rule for
 * every report, so anyone can recompute it from the JSON.
 */
export function changeOf<K extends string>(now: Record<K, number | null>, before: Record<K, number | null>, keys: readonly K[]): Record<K, number | null> {
  const out = {} as Record<K, number | null>;
  for (const k of keys) {
    const a = now[k];
    const b = before[k];
    out[k] = a === null || b === null || b === 0 ? null : ratio((a - b) / b);
  }
  return out;
}

const perOpenHour = (people: number, hours: number | null) => (hours === null || hours === 0 ? null : Math.round((people / hours) * 100) / 100);
const roundHours = (hours: number | null) => (hours === null ? null : Math.round(hours * 100) / 100);

const FOOTFALL_CHANGES = ['total', 'visits', 'fraction_below_gate', 'average_dwell_s', 'median_dwell_s', 'entries', 'exits', 'capture_rate', 'visitors_per_open_hour'] as const;

/** The spec's footfall report. */
export function presentFootfall(r: FootfallReport) {
  const body = {
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
      /** Additive (docs/reports.md, "Dwell time", "Age and gender bands"). */
      ...presentMix(p.mix),
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
    open_hours: roundHours(r.openHours),
    visitors_per_open_hour: perOpenHour(r.total, r.openHours),
  };
  const mix = presentMix(r.mix);
  /** Additive (docs/reports.md, "Dwell time", "Age and gender bands"): the window's, then per shop of the report. */
  const bands = { median_dwell_s: mix.median_dwell_s, age: mix.age, gender: mix.gender, with_age: mix.with_age, with_gender: mix.with_gender };
  const sites = r.shops.map((s) => ({ site_id: s.id, slug: s.slug, name: s.name, ...presentMix(s) }));
  const p = r.previous;
  const previous = {
    from: p.from,
    to: p.to,
    total: p.total,
    visits: p.visits,
    fraction_below_gate: ratio(p.visits === 0 ? 0 : p.belowGate / p.visits),
    average_dwell_s: dwellSeconds(p.averageDwellMs),
    median_dwell_s: dwellSeconds(p.medianDwellMs),
    entries: p.entries,
    exits: p.exits,
    capture_rate: p.captureRate === null ? null : ratio(p.captureRate),
    open_hours: roundHours(p.openHours),
    visitors_per_open_hour: perOpenHour(p.total, p.openHours),
  };
  /** Additive (docs/reports.md, "Compared with the period before"). */
  return { ...body, ...bands, sites, previous, change: changeOf({ ...body, ...bands }, previous, FOOTFALL_CHANGES) };
}

/** Revenue and average basket in the main currency's major unit; 0 and '' without purchases. */
function money(main: CurrencyTotal | null) {
  return {
    revenue: main ? fromMinor(main.amountMinor, main.currency) : 0,
    average_basket: main ? fromMinor(Math.round(main.amountMinor / main.baskets), main.currency) : 0,
    currency: main?.currency ?? '',
  };
}

/** The spec's conversion report: revenue and average basket in the main currency's major unit. */
export function presentConversion(r: ConversionReport) {
  const body = { visitors: r.visitors, purchasers: r.purchasers, conversion: ratio(r.conversion), ...money(r.main) };
  const p = r.previous;
  const previous = { from: p.from, to: p.to, visitors: p.visitors, purchasers: p.purchasers, conversion: ratio(p.conversion), ...money(p.main) };
  const change = changeOf(body, previous, ['visitors', 'purchasers', 'conversion', 'revenue', 'average_basket']);
  // Amounts in two currencies do not compare: no change of revenue or basket when both periods have sales in different ones.
  if (body.currency && previous.currency && body.currency !== previous.currency) change.revenue = change.average_basket = null;
  /** Additive (docs/reports.md, "Compared with the period before"). */
  return { ...body, previous, change };
}

const REGION_CHANGES = ['visitors', 'visits', 'entries', 'purchasers', 'conversion', 'visitors_per_open_hour'] as const;

/** GET /api/reports/regions: most visitors first; ties by name, the shops without a region last. */
export function presentRegions(
  q: ReportQuery,
  rows: { region: string | null; shops: number; f: ReturnType<typeof presentFootfall>; c: ReturnType<typeof presentConversion> }[],
) {
  const regions = rows
    .map(({ region, shops, f, c }) => {
      const now = { visitors: f.total, visits: f.visits, entries: f.entries, purchasers: c.purchasers, conversion: c.conversion, visitors_per_open_hour: f.visitors_per_open_hour };
      const previous = {
        from: f.previous.from,
        to: f.previous.to,
        visitors: f.previous.total,
        visits: f.previous.visits,
        entries: f.previous.entries,
        purchasers: c.previous.purchasers,
        conversion: c.previous.conversion,
        visitors_per_open_hour: f.previous.visitors_per_open_hour,
      };
      /** Additive (docs/reports.md, "Compared with the period before"). */
      return { region, shops, ...now, average_dwell_s: f.average_dwell_s, median_dwell_s: f.median_dwell_s, previous, change: changeOf(now, previous, REGION_CHANGES) };
    })
    .sort((a, b) => b.visitors - a.visitors || (a.region === null ? 1 : b.region === null ? -1 : a.region.localeCompare(b.region)));
  return { from: q.from, to: q.to, timezone: q.tz, regions };
}
