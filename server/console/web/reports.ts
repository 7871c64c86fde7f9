import { api, errorText } from './api.js';
import { barChart, barText, unidentified as unidentifiedOf } from './chart.js';
import { cardForm, facts, field, h, notice, replace, select, stacked } from './dom.js';
import type { Page } from './main.js';
import type { Conversion, Footfall, Shop } from './types.js';

/**
 * Footfall and conversion over a period (GET /api/reports/footfall and /api/reports/conversion with the same query):
 * a preset or a custom from/to, the whole company or one shop, a bucket and a time zone. Totals, a bar chart of
 * visitors per bucket (new, returning, not identified) and a table of the same numbers; the API's message on a bad
 * query. The query used is kept on the results (`data-query`) so that it can be compared with the API.
 */

type Preset = 'today' | '7' | '30' | 'month' | 'custom';
type Bucket = 'hour' | 'day' | 'week' | 'month';

/** The longest window (days, both ends counted) the API takes per bucket (docs/reports.md). */
const LONGEST: Record<Bucket, number> = { hour: 31, day: 366, week: 366, month: 731 };

export function renderReports(p: Page): void {
  const error = notice('error');
  const results = h('section', { id: 'report', 'aria-live': 'polite' });
  replace(p.main, h('h1', {}, 'Reports'), error.el, h('p', { class: 'loading' }, 'Loading…'));

  void (async () => {
    let shops: Shop[];
    try {
      shops = await api<Shop[]>('GET', '/api/sites', { signal: p.signal });
    } catch (err) {
      if (!p.signal.aborted) replace(p.main, h('h1', {}, 'Reports'), h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
      return;
    }
    if (p.signal.aborted) return;
    const form = reportForm(shops, results, p.signal);
    replace(p.main, h('h1', {}, 'Reports'), shops.length === 0 ? h('p', { class: 'notice info' }, 'Your company has no shops yet: every count is zero until one reports.') : null, form, results);
    form.requestSubmit();
  })();
}

function reportForm(shops: Shop[], results: HTMLElement, signal: AbortSignal): HTMLFormElement {
  const preset = select('preset', [['today', 'Today'], ['7', 'Last 7 days'], ['30', 'Last 30 days'], ['month', 'This month'], ['custom', 'Custom dates']], '7');
  const from = h('input', { name: 'from', type: 'date', required: true });
  const to = h('input', { name: 'to', type: 'date', required: true });
  const shop = select('site', [['', 'All shops'], ...shops.map((s): [string, string] => [s.slug, s.name])], '');
  const bucket = select('bucket', [['hour', 'Hour'], ['day', 'Day'], ['week', 'Week'], ['month', 'Month']], 'day');
  const zones = [...new Set([companyZone(shops), ...shops.map((s) => s.timezone), browserZone(), 'UTC'])];
  const tz = select('tz', zones.map((z): [string, string] => [z, z]), companyZone(shops));

  /** Fills from/to for a preset (in the chosen zone's today) and offers only the buckets the window allows. */
  const sync = (presetChanged: boolean) => {
    const v = preset.value as Preset;
    const custom = v === 'custom';
    from.readOnly = !custom;
    to.readOnly = !custom;
    if (!custom) {
      const today = localDate(tz.value);
      to.value = today;
      from.value = v === 'today' ? today : v === 'month' ? `${today.slice(0, 8)}01` : addDays(today, -(Number(v) - 1));
    }
    if (presetChanged && !custom) bucket.value = v === 'today' ? 'hour' : 'day';
    const days = from.value && to.value ? daysBetween(from.value, to.value) + 1 : 1;
    for (const o of bucket.options) o.disabled = days > LONGEST[o.value as Bucket];
    if (bucket.selectedOptions[0]?.disabled) bucket.value = (['hour', 'day', 'week', 'month'] as const).find((b) => days <= LONGEST[b]) ?? 'month';
  };
  preset.addEventListener('change', () => sync(true));
  from.addEventListener('change', () => sync(false));
  to.addEventListener('change', () => sync(false));
  tz.addEventListener('change', () => sync(false));
  shop.addEventListener('change', () => {
    const s = shops.find((x) => x.slug === shop.value);
    tz.value = s ? s.timezone : companyZone(shops);
    sync(false);
  });
  sync(true);

  return cardForm({
    id: 'report-form',
    title: 'Footfall and conversion',
    fields: [
      h('div', { class: 'inline' }, field('Period', preset), field('From', from), field('To', to)),
      h('div', { class: 'inline' }, field('Shop', shop), field('Group by', bucket, 'Hours only for up to 31 days.'), field('Time zone', tz, 'Days and hours are counted in this zone.')),
    ],
    submitLabel: 'Show',
    submit: async ({ msg }) => {
      const q = new URLSearchParams({ from: from.value, to: to.value, tz: tz.value, bucket: bucket.value });
      if (shop.value) q.set('site', shop.value);
      const query = q.toString();
      replace(results, h('p', { class: 'loading' }, 'Loading…'));
      try {
        const [footfall, conversion] = await Promise.all([
          api<Footfall>('GET', `/api/reports/footfall?${query}`, { signal }),
          api<Conversion>('GET', `/api/reports/conversion?${query}`, { signal }),
        ]);
        if (signal.aborted) return;
        const name = shops.find((s) => s.slug === shop.value)?.name ?? 'All shops';
        results.setAttribute('data-query', query);
        replace(results, totals(footfall, name, shop.value !== ''), chartCard(footfall), conversionCard(conversion));
      } catch (err) {
        replace(results);
        results.removeAttribute('data-query');
        if (!signal.aborted) msg.show(errorText(err));
      }
    },
  });
}

/** The zone of the shops' most common zone; ties go to the first shop's (the oldest: the API's own default). */
function companyZone(shops: Shop[]): string {
  if (shops.length === 0) return browserZone();
  const count = new Map<string, number>();
  for (const s of shops) count.set(s.timezone, (count.get(s.timezone) ?? 0) + 1);
  let best = shops[0]!.timezone;
  for (const [z, n] of count) if (n > (count.get(best) ?? 0)) best = z;
  return best;
}

function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** Today's date (YYYY-MM-DD) in a time zone. */
export function localDate(zone: string, at = new Date()): string {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  const get = (t: string) => parts.find((x) => x.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

function addDays(date: string, n: number): string {
  const t = Date.parse(`${date}T00:00:00Z`) + n * 86_400_000;
  return new Date(t).toISOString().slice(0, 10);
}

function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

function totals(r: Footfall, name: string, oneShop: boolean): HTMLElement {
  // `total` is unique people over the window. New customers are new in exactly one bucket (their first visit
  // ever), so their sum is the window's; unidentified visits are one person each, in one bucket; the rest of
  // `total` are the returning customers (docs/console.md).
  const newSum = r.points.reduce((n, pt) => n + pt.new, 0);
  const unidentified = r.points.reduce((n, pt) => n + unidentifiedOf(pt), 0);
  const returning = Math.max(0, r.total - newSum - unidentified);
  const rows: [string, string][] = [
    ['Visitors', r.total.toLocaleString()],
    ['New customers', newSum.toLocaleString()],
    ['Returning customers', returning.toLocaleString()],
    ['Not identified', unidentified.toLocaleString()],
    ['Visits', r.visits.toLocaleString()],
  ];
  if (r.visits > 0) rows.push(['Faces too poor to use', `${(Math.round(r.fraction_below_gate * 1000) / 10).toLocaleString()}%`]);
  if (!oneShop && r.worst_site) rows.push(['Shop with most poor faces', r.worst_site]);
  return h(
    'div',
    { class: 'card', id: 'report-totals' },
    h('h2', {}, `${name}: ${r.from === r.to ? r.from : `${r.from} to ${r.to}`}`),
    h('p', { class: 'muted small' }, `By ${r.bucket}, in ${r.timezone}`),
    facts(rows, { class: 'totals', key: 'data-total' }),
  );
}

function chartCard(r: Footfall): HTMLElement {
  const bars = r.points.map((pt) => ({ label: pt.bucket, visitors: pt.visitors, new: pt.new, returning: pt.returning }));
  const sameDay = bars.every((b) => b.label.slice(0, 10) === bars[0]?.label.slice(0, 10));
  const tick = (l: string) => (r.bucket === 'hour' ? (sameDay ? l.slice(11) : `${l.slice(5, 10)} ${l.slice(11)}`) : r.bucket === 'month' ? l : l.slice(5));
  const word = r.bucket;
  const most = bars.reduce<(typeof bars)[number] | undefined>((m, b) => (!m || b.visitors > m.visitors ? b : m), undefined);
  const name = `Visitors per ${word}${most && most.visitors > 0 ? `; the most: ${barText(most)}` : '; none in this period'}`;
  return h(
    'figure',
    { class: 'card chart-card' },
    h('figcaption', {}, h('h2', {}, `Visitors per ${word}`), legend()),
    barChart(bars, name, tick),
    h(
      'div',
      { class: 'table-wrap' },
      stacked(h(
        'table',
        { id: 'report-table' },
        h('caption', { class: 'visually-hidden' }, `Visitors per ${word}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, word[0]!.toUpperCase() + word.slice(1)), h('th', { scope: 'col' }, 'Visitors'), h('th', { scope: 'col' }, 'New'), h('th', { scope: 'col' }, 'Returning'), h('th', { scope: 'col' }, 'Not identified'))),
        h(
          'tbody',
          {},
          ...bars.map((b) => h('tr', { 'data-bucket': b.label }, h('th', { scope: 'row' }, b.label), h('td', {}, b.visitors), h('td', {}, b.new), h('td', {}, b.returning), h('td', {}, unidentifiedOf(b)))),
        ),
      )),
    ),
  );
}

function legend(): HTMLElement {
  const key = (cls: string, text: string) => h('li', {}, h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text);
  return h('ul', { class: 'legend small' }, key('returning', 'Returning'), key('new', 'New'), key('other', 'Not identified'));
}

function conversionCard(c: Conversion): HTMLElement {
  const money = (n: number) => (c.currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency: c.currency }).format(n) : n.toLocaleString());
  const rows: [string, string][] = [
    ['Visitors', c.visitors.toLocaleString()],
    ['Purchasers', c.purchasers.toLocaleString()],
    ['Conversion', `${(Math.round(c.conversion * 1000) / 10).toLocaleString()}%`],
  ];
  if (c.currency) rows.push(['Revenue', money(c.revenue)], ['Average basket', money(c.average_basket)], ['Currency', c.currency]);
  return h(
    'div',
    { class: 'card', id: 'report-conversion' },
    h('h2', {}, 'Conversion'),
    facts(rows, { key: 'data-conversion' }),
    c.currency ? null : h('p', { class: 'muted small' }, 'No purchases recorded in this period.'),
    c.conversion > 1 ? h('p', { class: 'muted small' }, 'More purchasers than visitors: some purchases were recorded for customers whose visits fall outside this period or shop.') : null,
  );
}
