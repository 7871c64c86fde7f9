import { z } from 'zod';
import type { Ctx } from '../context.js';
import { badRequest } from '../http/errors.js';
import { AGE_BANDS, GENDER_BANDS } from './mix.js';
import type { presentConversion, presentFootfall } from './presenter.js';

/**
 * CSV answers of the reports (`?format=csv`, docs/reports.md): RFC 4180 text, a header row, CRLF line ends, UTF-8.
 * The rows are the JSON answer's numbers, unchanged, so a spreadsheet and the console show the same figures.
 */

export const FormatInput = z.enum(['json', 'csv'], { error: 'must be json or csv' }).optional();

/** The `format` query parameter (absent or empty: json); anything else is a 400 naming it. */
export function formatOf(ctx: Ctx): 'json' | 'csv' {
  const raw = ctx.query.format;
  const v = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  if (v === undefined || v.trim() === '') return 'json';
  const parsed = FormatInput.safeParse(v.trim().toLowerCase());
  if (!parsed.success) throw badRequest(`format: must be json or csv, not "${v}"`);
  return parsed.data ?? 'json';
}

/** One field: quoted when it holds a comma, a quote or a line break; a leading = + - @ is prefixed with ' (no formula). */
export function csvField(v: string | number): string {
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvOf(header: string[], rows: (string | number)[][]): string {
  return [header, ...rows].map((r) => r.map(csvField).join(',')).join('\r\n') + '\r\n';
}

const AGE_KEYS = [...AGE_BANDS, 'unknown'] as const;
const GENDER_KEYS = [...GENDER_BANDS, 'unknown'] as const;

/** Additive columns after the first eight (docs/reports.md, "CSV export"): visits, dwell and bands of each point. */
export function footfallCsv(r: ReturnType<typeof presentFootfall>): string {
  return csvOf(
    [
      ...['bucket', 'visitors', 'new', 'returning', 'not_identified', 'entries', 'exits', 'capture_rate'],
      ...['visits', 'average_dwell_s', 'median_dwell_s'],
      ...AGE_KEYS.map((k) => `age_${k}`),
      ...GENDER_KEYS.map((k) => `gender_${k}`),
    ],
    r.points.map((p) => [
      ...[p.bucket, p.visitors, p.new, p.returning, Math.max(0, p.visitors - p.new - p.returning), p.entries, p.exits, p.capture_rate ?? ''],
      ...[p.visits, p.average_dwell_s, p.median_dwell_s],
      ...AGE_KEYS.map((k) => p.age[k]),
      ...GENDER_KEYS.map((k) => p.gender[k]),
    ]),
  );
}

const CONVERSION_CHANGES = ['visitors', 'purchasers', 'conversion', 'revenue', 'average_basket'] as const;

/** Additive columns after the first ten: the period before and each figure's change (empty when null). */
export function conversionCsv(r: ReturnType<typeof presentConversion>, q: { from: string; to: string; tz: string }, site: string): string {
  const p = r.previous;
  return csvOf(
    [
      ...['from', 'to', 'timezone', 'site', 'visitors', 'purchasers', 'conversion', 'revenue', 'average_basket', 'currency'],
      ...['from', 'to', 'visitors', 'purchasers', 'conversion', 'revenue', 'average_basket', 'currency'].map((k) => `previous_${k}`),
      ...CONVERSION_CHANGES.map((k) => `change_${k}`),
    ],
    [
      [
        ...[q.from, q.to, q.tz, site, r.visitors, r.purchasers, r.conversion, r.revenue, r.average_basket, r.currency],
        ...[p.from, p.to, p.visitors, p.purchasers, p.conversion, p.revenue, p.average_basket, p.currency],
        ...CONVERSION_CHANGES.map((k) => r.change[k] ?? ''),
      ],
    ],
  );
}

/** Sends a CSV body as a download named after the report and its window. */
export function sendCsv(ctx: Ctx, name: string, q: { from: string; to: string }, body: string): void {
  ctx.type = 'text/csv; charset=utf-8';
  ctx.set('Content-Disposition', `attachment; filename="${name}-${q.from}-to-${q.to}.csv"`);
  ctx.body = body;
}
