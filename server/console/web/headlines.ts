import { api } from './api.js';
import { h, stackRow } from './dom.js';
import { change, sparkline } from './figures.js';
import { localDate } from './reports.js';
import type { Conversion, Footfall, Shop } from './types.js';
import { withoutPc } from './no-pc.js';

/**
 * The overview's headline figures and shop ranking (docs/console.md, Overview). Every figure is one of the API's
 * reports (so unique people, not a sum of days), in the company's zone:
 * - Today against all of yesterday; this week (Monday to today) against last week's Monday to the same weekday;
 *   this month (the 1st to today) against last month's 1st to the same day (or its last day).
 * - Visitors, conversion (purchasers / visitors) and revenue in the main currency, each with its change in percent.
 * - A sparkline of visitors per day: the last 14 days under today, 28 under the week, 60 under the month.
 * - Shops ranked over the last 7 days by visitors, conversion or revenue (the person picks which).
 */

const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
const weekday = (date: string) => (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7; // Monday 0
function monthBack(date: string): { from: string; to: string } {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const py = m === 1 ? y - 1 : y;
  const pm = m === 1 ? 12 : m - 1;
  const days = new Date(Date.UTC(py, pm, 0)).getUTCDate();
  const mm = String(pm).padStart(2, '0');
  return { from: `${py}-${mm}-01`, to: `${py}-${mm}-${String(Math.min(d, days)).padStart(2, '0')}` };
}

interface Period {
  key: string;
  title: string;
  versus: string;
  now: { from: string; to: string };
  before: { from: string; to: string };
  sparkDays: number;
}

export function periods(today: string): Period[] {
  const monday = addDays(today, -weekday(today));
  return [
    { key: 'today', title: 'Today', versus: 'vs all of yesterday', now: { from: today, to: today }, before: { from: addDays(today, -1), to: addDays(today, -1) }, sparkDays: 14 },
    { key: 'week', title: 'This week', versus: 'vs last week to the same day', now: { from: monday, to: today }, before: { from: addDays(monday, -7), to: addDays(today, -7) }, sparkDays: 28 },
    { key: 'month', title: 'This month', versus: 'vs last month to the same day', now: { from: `${today.slice(0, 8)}01`, to: today }, before: monthBack(today), sparkDays: 60 },
  ];
}

const q = (w: { from: string; to: string }, zone: string, extra = '') => `from=${w.from}&to=${w.to}&tz=${encodeURIComponent(zone)}&bucket=day${extra}`;
const pct = (x: number) => `${(Math.round(x * 1000) / 10).toLocaleString()}%`;
export const money = (n: number, currency: string) => (currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: 0 }).format(n) : '—');

/** `region` (docs/reports.md, "Regions"): the overview's region filter; every figure counts only its shops. */
export async function headlines(zone: string, signal: AbortSignal, region = ''): Promise<HTMLElement | null> {
  const today = localDate(zone);
  const ps = periods(today);
  const only = region ? `&region=${encodeURIComponent(region)}` : '';
  try {
    const get = <T>(path: string) => api<T>('GET', path, { signal });
    const [series, ...rest] = await Promise.all([
      get<Footfall>(`/api/reports/footfall?${q({ from: addDays(today, -59), to: today }, zone, only)}`),
      ...ps.flatMap((p) => [
        get<Footfall>(`/api/reports/footfall?${q(p.now, zone, only)}`),
        get<Footfall>(`/api/reports/footfall?${q(p.before, zone, only)}`),
        get<Conversion>(`/api/reports/conversion?${q(p.now, zone, only)}`),
        get<Conversion>(`/api/reports/conversion?${q(p.before, zone, only)}`),
      ]),
    ]);
    const daily = (series as Footfall).points.map((pt) => pt.visitors);
    const cards = ps.map((p, i) => {
      const [fNow, fBefore, cNow, cBefore] = rest.slice(i * 4, i * 4 + 4) as [Footfall, Footfall, Conversion, Conversion];
      const currency = cNow.currency || cBefore.currency;
      const sameCurrency = cNow.currency === cBefore.currency || !cBefore.currency || !cNow.currency;
      const row = (name: string, value: string, delta: HTMLElement | null) => h('div', { class: 'figure', 'data-figure': name }, h('dt', {}, name), h('dd', {}, h('span', { class: 'value' }, value), ' ', delta));
      return h(
        'article',
        { class: 'card headline', 'data-period': p.key },
        h('h2', {}, p.title),
        h('p', { class: 'muted small' }, `${p.now.from === p.now.to ? p.now.from : `${p.now.from} to ${p.now.to}`} · ${p.versus}`),
        h(
          'dl',
          { class: 'figures' },
          row('Visitors', fNow.total.toLocaleString(), change(fNow.total, fBefore.total)),
          row('Conversion', pct(cNow.conversion), change(Math.round(cNow.conversion * 1000), Math.round(cBefore.conversion * 1000))),
          row('Revenue', money(cNow.revenue, currency), sameCurrency ? change(cNow.revenue, cBefore.revenue) : null),
        ),
        sparkline(daily.slice(-p.sparkDays), `Visitors per day, the last ${p.sparkDays} days: ${daily.slice(-p.sparkDays).join(', ')}`),
      );
    });
    return h('div', { class: 'headlines', 'data-region': region }, ...cards, h('p', { class: 'muted small headlines-zone' }, `${region ? `Shops in ${region} only. ` : ''}Days in ${zone}. Visitors are unique people in each period.`));
  } catch {
    return signal.aborted ? null : h('p', { class: 'notice error', role: 'alert' }, 'The headline figures could not be read. They are tried again in five minutes.');
  }
}

type Metric = 'visitors' | 'conversion' | 'revenue';

export async function ranking(shops: Shop[], zone: string, signal: AbortSignal): Promise<HTMLElement | null> {
  const today = localDate(zone);
  const w = { from: addDays(today, -6), to: today };
  try {
    // A shop without a shop PC counts nothing: it is listed last, saying so, not ranked on zeros (issue 28).
    const noPc = shops.filter(withoutPc);
    const rows = await Promise.all(
      shops.filter((s) => !withoutPc(s)).map(async (s) => {
        const site = `&site=${encodeURIComponent(s.slug)}`;
        const [f, c] = await Promise.all([api<Footfall>('GET', `/api/reports/footfall?${q(w, s.timezone, site)}`, { signal }), api<Conversion>('GET', `/api/reports/conversion?${q(w, s.timezone, site)}`, { signal })]);
        return { shop: s, visitors: f.total, conversion: c.conversion, revenue: c.revenue, currency: c.currency };
      }),
    );
    const body = h('tbody');
    const by = (m: Metric) => {
      const sorted = [...rows].sort((a, b) => b[m] - a[m] || a.shop.name.localeCompare(b.shop.name));
      const top = Math.max(1e-9, ...rows.map((r) => r[m]));
      body.replaceChildren(
        ...sorted.map((r, i) =>
          h(
            'tr',
            { 'data-rank-shop': r.shop.slug },
            h('td', { class: 'rank' }, String(i + 1)),
            h('th', { scope: 'row', class: 'shop-name' }, h('a', { href: `#/shop/${encodeURIComponent(r.shop.slug)}` }, r.shop.name)),
            h('td', {}, r.visitors.toLocaleString()),
            h('td', {}, pct(r.conversion)),
            h('td', {}, money(r.revenue, r.currency)),
            h('td', { class: 'bar-cell', 'aria-hidden': 'true' }, h('meter', { min: 0, max: 1, value: Math.round((r[m] / top) * 100) / 100 })),
          ),
        ),
        ...[...noPc].sort((a, b) => a.name.localeCompare(b.name)).map((s) =>
          h(
            'tr',
            { 'data-rank-shop': s.slug, 'data-no-pc': s.slug },
            h('td', { class: 'rank' }, '–'),
            h('th', { scope: 'row', class: 'shop-name' }, h('a', { href: `#/shop/${encodeURIComponent(s.slug)}` }, s.name)),
            h('td', { colspan: '4', class: 'muted' }, 'No shop PC installed yet'),
          ),
        ),
      );
      const table = body.closest('table');
      if (table) for (const row of Array.from(body.rows)) if (!row.dataset.noPc) stackRow(table, row);
      for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.metric === m));
    };
    const buttons = (['visitors', 'conversion', 'revenue'] as Metric[]).map((m) => {
      const b = h('button', { type: 'button', 'data-metric': m, 'aria-pressed': 'false' }, m[0]!.toUpperCase() + m.slice(1));
      b.addEventListener('click', () => by(m));
      return b;
    });
    const table = h('table', { class: 'ranking stack' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Shop'), h('th', { scope: 'col' }, 'Visitors'), h('th', { scope: 'col' }, 'Conversion'), h('th', { scope: 'col' }, 'Revenue'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Share')))), body);
    // After the table exists: the first ranking's rows get their phone labels too (they were bare numbers until a click).
    by('visitors');
    return h(
      'section',
      { class: 'card', id: 'shop-ranking' },
      h('div', { class: 'ranking-head' }, h('h2', {}, 'Shops ranked, last 7 days'), h('div', { class: 'actions', role: 'group', 'aria-label': 'Rank by' }, h('span', { class: 'muted small' }, 'Rank by'), ...buttons)),
      h('div', { class: 'table-wrap' }, table),
      h('p', { class: 'muted small' }, 'Each shop in its own time zone.'),
    );
  } catch {
    return null;
  }
}
