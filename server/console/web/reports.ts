import { api, errorText, raw } from './api.js';
import { barChart, barText, unidentified as unidentifiedOf } from './chart.js';
import { cardForm, facts, field, h, notice, replace, select, stacked } from './dom.js';
import { heatmap } from './figures.js';
import type { Page } from './main.js';
import { overTime, sideBySide } from './report-extras.js';
import { doorCard, doorScope, doorTotals } from './door-report.js';
import { duration, mixCard, previousLabel, versus, withChange } from './report-mix.js';
import { noPcNotice, withoutPc } from './no-pc.js';
import { atLeast } from './session.js';
import type { Conversion, Footfall, Shop } from './types.js';
import { companyZone as shopsZone, modernZone } from './zones.js';

/**
 * The report's settings live in the address (`#/reports?from=...&to=...&tz=...&bucket=...&site=...&preset=...`):
 * a bookmark or a shared link opens the same report; each "Show" replaces the address without a new history entry.
 *
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
    const form = reportForm(shops, results, p.signal, new URLSearchParams(location.hash.split('?')[1] ?? ''), atLeast(p.user, 'manager'));
    replace(p.main, h('h1', {}, 'Reports'), shops.length === 0 ? h('p', { class: 'notice info' }, 'Your company has no shops yet: every count is zero until one reports.') : null, form, results);
    form.requestSubmit();
  })();
}

function reportForm(shops: Shop[], results: HTMLElement, signal: AbortSignal, asked: URLSearchParams, manager: boolean): HTMLFormElement {
  const wanted = (key: string, allowed: string[], fallback: string) => {
    const v = asked.get(key);
    return v !== null && allowed.includes(v) ? v : fallback;
  };
  const siteAsked = wanted('site', shops.map((s) => s.slug), '');
  const dates = asked.get('from') && asked.get('to') && /^\d{4}-\d{2}-\d{2}$/.test(asked.get('from')!) && /^\d{4}-\d{2}-\d{2}$/.test(asked.get('to')!);
  const preset = select('preset', [['today', 'Today'], ['7', 'Last 7 days'], ['30', 'Last 30 days'], ['month', 'This month'], ['custom', 'Custom dates']], wanted('preset', ['today', '7', '30', 'month', 'custom'], dates ? 'custom' : '7'));
  const from = h('input', { name: 'from', type: 'date', required: true });
  const to = h('input', { name: 'to', type: 'date', required: true });
  const shop = select('site', [['', 'All shops'], ...shops.map((s): [string, string] => [s.slug, s.name])], siteAsked);
  const regionNames = [...new Set(shops.map((s) => s.region).filter((r): r is string => !!r))].sort((a, b) => a.localeCompare(b));
  const region = select('region', [['', 'All regions'], ...regionNames.map((r): [string, string] => [r, r])], wanted('region', regionNames, ''));
  const bucket = select('bucket', [['hour', 'Hour'], ['day', 'Day'], ['week', 'Week'], ['month', 'Month']], wanted('bucket', ['hour', 'day', 'week', 'month'], 'day'));
  // IANA names only (the browser's own zone can come as Asia/Calcutta beside a shop's Asia/Kolkata).
  const zones = [...new Set([companyZone(shops), ...shops.map((s) => s.timezone), browserZone(), 'UTC', ...(asked.get('tz') ? [asked.get('tz')!] : [])].map(modernZone))];
  const shopZone = modernZone(shops.find((s) => s.slug === siteAsked)?.timezone ?? companyZone(shops));
  const tz = select('tz', zones.map((z): [string, string] => [z, z]), wanted('tz', zones, shopZone));
  if (dates && preset.value === 'custom') {
    from.value = asked.get('from')!;
    to.value = asked.get('to')!;
  }
  const askedBucket = asked.get('bucket');

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
    tz.value = modernZone(s ? s.timezone : companyZone(shops));
    sync(false);
  });
  sync(!askedBucket);

  return cardForm({
    id: 'report-form',
    title: 'Footfall and conversion',
    fields: [
      h('div', { class: 'inline' }, field('Period', preset), field('From', from), field('To', to)),
      h('div', { class: 'inline' }, field('Shop', shop), regionNames.length ? field('Region', region) : null, field('Group by', bucket, 'Hours only for up to 31 days.'), field('Time zone', tz, 'Days and hours are counted in this zone.')),
    ],
    submitLabel: 'Show',
    submit: async ({ msg }) => {
      const q = new URLSearchParams({ from: from.value, to: to.value, tz: tz.value, bucket: bucket.value });
      if (shop.value) q.set('site', shop.value);
      if (region.value) q.set('region', region.value);
      const query = q.toString();
      // The address says what is shown: bookmarkable, shareable (the preset keeps "last 7 days" rolling).
      const address = new URLSearchParams(preset.value === 'custom' ? q : { preset: preset.value, tz: tz.value, bucket: bucket.value, ...(shop.value ? { site: shop.value } : {}), ...(region.value ? { region: region.value } : {}) });
      history.replaceState(null, '', `#/reports?${address.toString()}`);
      // Shops without a shop PC count nothing: said instead of zeros when none of the report's shops has one, above the
      // figures when some have none.
      const scope = shop.value ? shops.filter((s) => s.slug === shop.value) : region.value ? shops.filter((s) => s.region === region.value) : shops;
      const noPc = noPcNotice(scope, manager, scope.length === 1 ? 'so nothing is counted there: this report has no figures' : 'so nothing is counted there');
      if (noPc && scope.every(withoutPc)) {
        results.removeAttribute('data-query');
        return replace(results, h('section', { class: 'card', id: 'report-no-pc' }, h('h2', {}, 'No figures: no shop PC installed yet'), noPc));
      }
      replace(results, h('p', { class: 'loading' }, 'Loading…'));
      try {
        const [footfall, conversion] = await Promise.all([
          api<Footfall>('GET', `/api/reports/footfall?${query}`, { signal }),
          api<Conversion>('GET', `/api/reports/conversion?${query}`, { signal }),
        ]);
        if (signal.aborted) return;
        const name = shops.find((s) => s.slug === shop.value)?.name ?? 'All shops';
        results.setAttribute('data-query', query);
        const busiest = h('div', { id: 'busiest-area' });
        const time = h('div', { id: 'over-time-area' });
        const side = h('div', { id: 'side-area' });
        // Entries and exits (body counting): absent from a head office without it; a hint where nothing counts them.
        const door = doorScope(footfall, shops, shop.value);
        const doorPart = door === 'absent' ? null : doorCard(footfall, door, shop.value !== '', (b) => bucketLabel(b, footfall.bucket), tickFor(footfall));
        replace(results, noPc, totals(footfall, name, shop.value !== '', query, door === 'counting'), chartCard(footfall), mixCard(footfall), doorPart, busiest, conversionCard(conversion, query), time, side);
        void busiestHours(footfall, q, signal).then((el) => el && replace(busiest, el));
        void overTime(footfall, q, signal).then((el) => el && replace(time, el));
        if (!shop.value && shops.length > 1) void sideBySide(region.value ? shops.filter((s) => s.region === region.value) : shops, q, signal).then((el) => el && replace(side, el));
        if (!shop.value && !region.value && regionNames.length > 0) void regionRanking(q, signal).then((el) => el && results.append(el));
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
  return shops.length === 0 ? browserZone() : shopsZone(shops);
}

/**
 * Busiest hours (weekday x hour) for the report's shop and zone: the window's hours when it is 31 days or less,
 * else its last 28 days. One more footfall call, by hour.
 */
async function busiestHours(r: Footfall, q: URLSearchParams, signal: AbortSignal): Promise<HTMLElement | null> {
  const days = daysBetween(r.from, r.to) + 1;
  const from = days > 31 ? addDays(r.to, -27) : r.from;
  const hq = new URLSearchParams(q);
  hq.set('from', from);
  hq.set('bucket', 'hour');
  try {
    const hourly = r.bucket === 'hour' ? r : await api<Footfall>('GET', `/api/reports/footfall?${hq.toString()}`, { signal });
    const span = from === r.to ? from : `${from} to ${r.to}`;
    return h(
      'section',
      { class: 'card', id: 'busiest' },
      h('h2', {}, 'Busiest hours'),
      h('p', { class: 'muted small' }, `Visitors by weekday and hour, ${span}, in ${r.timezone}.${days > 31 ? ' (The last 28 days of the period.)' : ''}`),
      heatmap(hourly.points, `Visitors by weekday and hour, ${span}`),
    );
  } catch (err) {
    return signal.aborted ? null : h('p', { class: 'notice error' }, errorText(err));
  }
}

/** A bucket label as people read it: "Thu 26 Nov, 11:00", "Thu 26 Nov", "Week of 23 Nov", "Nov 2026". */
export function bucketLabel(label: string, bucket: string): string {
  const day = (d: string, withDay = true) =>
    new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', ...(withDay ? { weekday: 'short' } : {}), day: 'numeric', month: 'short' }).format(new Date(`${d}T00:00:00Z`));
  if (bucket === 'hour') return `${day(label.slice(0, 10))}, ${label.slice(11, 16)}`;
  if (bucket === 'day') return day(label);
  if (bucket === 'week') return `Week of ${day(label, false)}`;
  if (bucket === 'month') return new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', month: 'short', year: 'numeric' }).format(new Date(`${label}-01T00:00:00Z`));
  return label;
}

/** Fetches the report as CSV (GET ...&format=csv, with the session) and hands it to the browser as a download. */
function csvButton(kind: 'footfall' | 'conversion', query: string): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'csv', 'data-csv': kind }, kind === 'footfall' ? 'Download CSV' : 'Download conversion CSV');
  b.addEventListener('click', () => {
    b.disabled = true;
    void raw(`/api/reports/${kind}?${query}&format=csv`)
      .then(async (res) => {
        const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `${kind}.csv`;
        const url = URL.createObjectURL(await res.blob());
        const a = h('a', { href: url, download: name, hidden: true });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
      })
      .catch(() => undefined)
      .finally(() => (b.disabled = false));
  });
  return b;
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

export function addDays(date: string, n: number): string {
  const t = Date.parse(`${date}T00:00:00Z`) + n * 86_400_000;
  return new Date(t).toISOString().slice(0, 10);
}

export function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);
}

function totals(r: Footfall, name: string, oneShop: boolean, query: string, counting: boolean): HTMLElement {
  // `total` is unique people over the window. New customers are new in exactly one bucket (their first visit
  // ever), so their sum is the window's; unidentified visits are one person each, in one bucket; the rest of
  // `total` are the returning customers (docs/console.md).
  const newSum = r.points.reduce((n, pt) => n + pt.new, 0);
  const unidentified = r.points.reduce((n, pt) => n + unidentifiedOf(pt), 0);
  const returning = Math.max(0, r.total - newSum - unidentified);
  // Against the period before (docs/reports.md): the API's change of each figure, "+12 % vs previous 7 days".
  const rows: [string, string | HTMLElement][] = [
    ['Visitors', withChange(r.total.toLocaleString(), versus(r, 'total', r.total))],
    ['New customers', newSum.toLocaleString()],
    ['Returning customers', returning.toLocaleString()],
    ['Not identified', unidentified.toLocaleString()],
    ['Visits', withChange(r.visits.toLocaleString(), versus(r, 'visits', r.visits))],
  ];
  if (r.visits > 0) rows.push(['Faces too poor to use', `${(Math.round(r.fraction_below_gate * 1000) / 10).toLocaleString()}%`]);
  if (counting) rows.push(...doorTotals(r));
  if (r.visitors_per_open_hour != null) rows.push(['Visitors per open hour', withChange(`${r.visitors_per_open_hour.toLocaleString()} (${(r.open_hours ?? 0).toLocaleString()} open hours)`, versus(r, 'visitors_per_open_hour', r.visitors_per_open_hour))]);
  const p = r.previous;
  return h(
    'div',
    { class: 'card', id: 'report-totals' },
    h('h2', {}, `${name}: ${r.from === r.to ? r.from : `${r.from} to ${r.to}`}`),
    h('p', { class: 'muted small' }, `By ${r.bucket}, in ${r.timezone}`, p ? `. Compared with the ${previousLabel(p)}, ${p.from === p.to ? p.from : `${p.from} to ${p.to}`}.` : ''),
    facts(rows, { class: 'totals', key: 'data-total' }),
    // A shop's name in the narrow columns of the figures broke mid-word at 1366 px: it gets a line of its own.
    !oneShop && r.worst_site ? facts([['Shop with most poor faces', r.worst_site]], { class: 'named', key: 'data-total' }) : null,
    h('div', { class: 'actions' }, csvButton('footfall', query)),
  );
}

/**
 * Visitors per bucket: bars for up to 62 buckets; more (a week by hour: 168) are not readable as bars, so the chart
 * is left out (the busiest-hours heatmap shows them). The table is folded past 14 rows.
 */
function chartCard(r: Footfall): HTMLElement {
  const bars = r.points.map((pt) => ({ label: pt.bucket, visitors: pt.visitors, new: pt.new, returning: pt.returning, visits: pt.visits, median: pt.median_dwell_s }));
  const dwell = r.points.some((pt) => pt.median_dwell_s !== undefined);
  const tick = tickFor(r);
  const word = r.bucket;
  const phone = window.matchMedia('(max-width: 640px)').matches;
  const tooMany = bars.length > 62;
  const most = bars.reduce<(typeof bars)[number] | undefined>((m, b) => (!m || b.visitors > m.visitors ? b : m), undefined);
  const name = `Visitors per ${word}${most && most.visitors > 0 ? `; the most: ${barText(most)}` : '; none in this period'}`;
  return h(
    'figure',
    { class: 'card chart-card' },
    h('figcaption', {}, h('h2', {}, `Visitors per ${word}`), legend()),
    tooMany ? h('p', { class: 'muted', id: 'too-many-bars' }, `${bars.length} ${word}s are too many to draw as bars: see the busiest hours below, or group by day.`) : barChart(bars, name, tick, phone ? { width: 400, height: 300, labels: 4 } : {}),
    foldIf(
      bars.length > 14,
      `Show the numbers (${bars.length} rows)`,
      h(
      'div',
      { class: 'table-wrap' },
      stacked(h(
        'table',
        { id: 'report-table' },
        h('caption', { class: 'visually-hidden' }, `Visitors per ${word}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, word[0]!.toUpperCase() + word.slice(1)), h('th', { scope: 'col' }, 'Visitors'), h('th', { scope: 'col' }, 'New'), h('th', { scope: 'col' }, 'Returning'), h('th', { scope: 'col' }, 'Not identified'), dwell ? h('th', { scope: 'col' }, 'Visits') : null, dwell ? h('th', { scope: 'col' }, 'Median visit') : null)),
        h(
          'tbody',
          {},
          ...bars.map((b) => h('tr', { 'data-bucket': b.label }, h('th', { scope: 'row' }, bucketLabel(b.label, r.bucket)), h('td', {}, b.visitors), h('td', {}, b.new), h('td', {}, b.returning), h('td', {}, unidentifiedOf(b)), dwell ? h('td', {}, b.visits ?? 0) : null, dwell ? h('td', { 'data-seconds': String(b.median ?? 0) }, b.visits ? duration(b.median ?? 0) : '—') : null)),
        ),
      )),
      ),
    ),
  );
}

/** A bucket label shortened for a chart's axis: the hour alone when every bar is on one day, no "Week of". */
function tickFor(r: Footfall): (label: string) => string {
  const sameDay = r.points.every((p) => p.bucket.slice(0, 10) === r.points[0]?.bucket.slice(0, 10));
  return (l: string) => (r.bucket === 'hour' ? (sameDay ? l.slice(11) : bucketLabel(l, 'hour')) : bucketLabel(l, r.bucket).replace(/^Week of /, ''));
}

/** `content` inside a closed <details> when `fold`, else as it is. */
function foldIf(fold: boolean, summary: string, content: HTMLElement): HTMLElement {
  return fold ? h('details', { class: 'fold' }, h('summary', {}, summary), content) : content;
}

function legend(): HTMLElement {
  const key = (cls: string, text: string) => h('li', {}, h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text);
  return h('ul', { class: 'legend small' }, key('returning', 'Returning'), key('new', 'New'), key('other', 'Not identified'));
}

function conversionCard(c: Conversion, query: string): HTMLElement {
  const money = (n: number) => (c.currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency: c.currency }).format(n) : n.toLocaleString());
  const rows: [string, string | HTMLElement][] = [
    ['Visitors', withChange(c.visitors.toLocaleString(), versus(c, 'visitors', c.visitors))],
    ['Purchasers', withChange(c.purchasers.toLocaleString(), versus(c, 'purchasers', c.purchasers))],
    // 0 visitors: nobody to convert, not "0%".
    ['Conversion', c.visitors > 0 ? withChange(`${(Math.round(c.conversion * 1000) / 10).toLocaleString()}%`, versus(c, 'conversion', c.conversion)) : 'none: no visitors'],
  ];
  if (c.currency) rows.push(['Revenue', withChange(money(c.revenue), versus(c, 'revenue', c.revenue))], ['Average basket', withChange(money(c.average_basket), versus(c, 'average_basket', c.average_basket))], ['Currency', c.currency]);
  return h(
    'div',
    { class: 'card', id: 'report-conversion' },
    h('h2', {}, 'Conversion'),
    facts(rows, { key: 'data-conversion' }),
    c.currency ? null : h('p', { class: 'muted small' }, 'No purchases recorded in this period.'),
    c.conversion > 1 ? h('p', { class: 'muted small' }, 'More purchasers than visitors: some purchases were recorded for customers whose visits fall outside this period or shop.') : null,
    h('div', { class: 'actions' }, csvButton('conversion', query)),
  );
}

/** Regions ranked by visitors over the same window (GET /api/reports/regions; docs/reports.md, "Regions"). */
async function regionRanking(q: URLSearchParams, signal: AbortSignal): Promise<HTMLElement | null> {
  const rq = new URLSearchParams({ from: q.get('from') ?? '', to: q.get('to') ?? '', tz: q.get('tz') ?? '' });
  try {
    const r = await api<{ regions: { region: string | null; shops: number; visitors: number; visits: number; entries: number; conversion: number; visitors_per_open_hour: number | null }[] }>('GET', `/api/reports/regions?${rq.toString()}`, { signal });
    const pct = (x: number) => `${Math.round(x * 1000) / 10} %`;
    return h(
      'section',
      { class: 'card', id: 'regions' },
      h('h2', {}, 'Regions'),
      stacked(h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Region'), h('th', { scope: 'col' }, 'Shops'), h('th', { scope: 'col' }, 'Visitors'), h('th', { scope: 'col' }, 'Conversion'), h('th', { scope: 'col' }, 'Per open hour'))),
        h(
          'tbody',
          {},
          ...r.regions.map((x, i) =>
            h('tr', { 'data-region': x.region ?? '' }, h('td', { 'data-label': '#' }, String(i + 1)), h('td', { 'data-label': 'Region' }, x.region ?? 'No region'), h('td', { 'data-label': 'Shops' }, String(x.shops)), h('td', { 'data-label': 'Visitors' }, x.visitors.toLocaleString()), h('td', { 'data-label': 'Conversion' }, pct(x.conversion)), h('td', { 'data-label': 'Per open hour' }, x.visitors_per_open_hour == null ? '—' : x.visitors_per_open_hour.toLocaleString())),
          ),
        ),
      )),
    );
  } catch (err) {
    return signal.aborted ? null : h('p', { class: 'notice error' }, errorText(err));
  }
}
