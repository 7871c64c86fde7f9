import { api, errorText } from './api.js';
import { h, stacked } from './dom.js';
import { withoutPc } from './no-pc.js';
import { addDays, bucketLabel } from './reports.js';
import type { Conversion, Footfall, Shop } from './types.js';
import type uPlotType from 'uplot';

/**
 * The reports page's comparisons (docs/console.md, Reports):
 * - overTime: conversion and revenue per visitor for each bucket of the report (one conversion call per bucket's
 *   dates, at most 31), drawn with uPlot (a line chart with two axes) over a table of the same numbers.
 * - sideBySide: every shop over the same dates, each counted in its own time zone: visitors, visits, conversion,
 *   revenue and revenue per visitor.
 */

const MAX_POINTS = 31;
const pct = (x: number) => `${(Math.round(x * 1000) / 10).toLocaleString()}%`;
const money = (n: number, currency: string) => (currency ? new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: 2 }).format(n) : n.toLocaleString());

/** The dates a bucket covers, cut to the report's window. */
function datesOf(label: string, bucket: string, from: string, to: string): { from: string; to: string } | null {
  let lo: string;
  let hi: string;
  if (bucket === 'day') lo = hi = label;
  else if (bucket === 'week') [lo, hi] = [label, addDays(label, 6)];
  else if (bucket === 'month') {
    const [y, m] = label.split('-').map(Number) as [number, number];
    [lo, hi] = [`${label}-01`, `${label}-${String(new Date(Date.UTC(y, m, 0)).getUTCDate()).padStart(2, '0')}`];
  } else return null;
  return { from: lo < from ? from : lo, to: hi > to ? to : hi };
}

const whole = (n: number, currency: string) => new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: 0 }).format(n);

let uplot: Promise<typeof uPlotType> | null = null;
/** uPlot's ES module, served by head office from dist/console/vendor (copy-static.ts); loaded on first use. */
function loadUplot(): Promise<typeof uPlotType> {
  const url = '/console/vendor/uplot.js';
  uplot ??= (import(url) as Promise<{ default: typeof uPlotType }>).then((m) => m.default);
  return uplot;
}

export async function overTime(r: Footfall, q: URLSearchParams, signal: AbortSignal): Promise<HTMLElement | null> {
  const card = (...children: (Node | string | null)[]) => h('section', { class: 'card', id: 'over-time' }, h('h2', {}, `Conversion and revenue per visitor, by ${r.bucket}`), ...children);
  if (r.bucket === 'hour') return card(h('p', { class: 'muted' }, 'Group by day, week or month to see conversion over time.'));
  if (r.points.length > MAX_POINTS) return card(h('p', { class: 'muted' }, `Over ${MAX_POINTS} ${r.bucket}s: group by a longer period to see conversion over time.`));
  try {
    const spans = r.points.map((p) => datesOf(p.bucket, r.bucket, r.from, r.to)!);
    const rows = await Promise.all(
      spans.map((d) => {
        const cq = new URLSearchParams(q);
        cq.set('from', d.from);
        cq.set('to', d.to);
        cq.set('bucket', 'day');
        return api<Conversion>('GET', `/api/reports/conversion?${cq.toString()}`, { signal });
      }),
    );
    const currency = rows.find((c) => c.currency)?.currency ?? '';
    const perVisitor = rows.map((c) => (c.visitors > 0 && (!c.currency || c.currency === currency) ? c.revenue / c.visitors : 0));
    const table = stacked(
      h(
        'table',
        { id: 'over-time-table' },
        h('thead', {}, h('tr', {}, ...[r.bucket[0]!.toUpperCase() + r.bucket.slice(1), 'Visitors', 'Purchasers', 'Conversion', 'Revenue per visitor'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, ...rows.map((c, i) => h('tr', { 'data-bucket': r.points[i]!.bucket }, h('th', { scope: 'row' }, bucketLabel(r.points[i]!.bucket, r.bucket)), h('td', {}, c.visitors), h('td', {}, c.purchasers), h('td', {}, pct(c.conversion)), h('td', {}, money(perVisitor[i]!, currency))))),
      ),
    );
    const plot = h('div', { class: 'uplot-box', id: 'over-time-chart', role: 'img', 'aria-label': `Conversion and revenue per visitor by ${r.bucket}; the numbers are in the table below.` });
    const el = card(h('p', { class: 'muted small' }, `Per ${r.bucket}: purchasers ÷ visitors, and revenue${currency ? ` (${currency})` : ''} ÷ visitors.`), plot, h('details', { class: 'fold' }, h('summary', {}, 'Show the numbers'), h('div', { class: 'table-wrap' }, table)));
    void draw(plot, rows.map((c) => c.conversion * 100), perVisitor, currency, r);
    return el;
  } catch (err) {
    return signal.aborted ? null : card(h('p', { class: 'notice error' }, errorText(err)));
  }
}

async function draw(box: HTMLElement, conversion: number[], perVisitor: number[], currency: string, r: Footfall): Promise<void> {
  const uPlot = await loadUplot();
  const xs = r.points.map((_, i) => i);
  const width = () => Math.max(280, box.clientWidth || 600);
  const chart = new uPlot(
    {
      width: width(),
      height: window.matchMedia('(max-width: 640px)').matches ? 240 : 260,
      scales: { x: { time: false }, pct: { range: (_u, _lo, hi) => [0, Math.max(10, hi)] }, money: { range: (_u, _lo, hi) => [0, Math.max(1, hi)] } },
      axes: [
        { values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) && r.points[t] ? bucketLabel(r.points[t]!.bucket, r.bucket).replace(/^Week of /, '') : '')), space: 70 },
        { scale: 'pct', values: (_u, ticks) => ticks.map((t) => `${t}%`), size: 50 },
        { scale: 'money', side: 1, values: (_u, ticks) => ticks.map((t) => (currency ? whole(t, currency) : String(t))), size: 80, grid: { show: false } },
      ],
      series: [
        { label: r.bucket, value: (_u, v) => (v === null || !r.points[v] ? '' : bucketLabel(r.points[v]!.bucket, r.bucket)) },
        { label: 'Conversion', scale: 'pct', stroke: '#1f6f5c', width: 2, points: { show: true }, value: (_u, v) => (v === null ? '' : `${Math.round(v * 10) / 10}%`) },
        { label: 'Revenue per visitor', scale: 'money', stroke: '#c0831f', width: 2, dash: [6, 4], points: { show: true }, value: (_u, v) => (v === null ? '' : money(v, currency)) },
      ],
    },
    [xs, conversion, perVisitor],
    box,
  );
  const resize = new ResizeObserver(() => chart.setSize({ width: width(), height: chart.height }));
  resize.observe(box);
}

export async function sideBySide(shops: Shop[], q: URLSearchParams, signal: AbortSignal): Promise<HTMLElement | null> {
  try {
    // A shop without a shop PC counts nothing: its row says so (last), not zeros and "0%".
    const rows = await Promise.all(
      shops.filter((s) => !withoutPc(s)).map(async (s) => {
        const sq = new URLSearchParams({ from: q.get('from') ?? '', to: q.get('to') ?? '', tz: s.timezone, bucket: 'day', site: s.slug });
        if (sq.get('from') && sq.get('to')) {
          // a window longer than a year by day is refused: by month is the same totals
          sq.set('bucket', 'month');
        }
        const [f, c] = await Promise.all([api<Footfall>('GET', `/api/reports/footfall?${sq.toString()}`, { signal }), api<Conversion>('GET', `/api/reports/conversion?${sq.toString()}`, { signal })]);
        return { s, f, c };
      }),
    );
    rows.sort((a, b) => b.f.total - a.f.total || a.s.name.localeCompare(b.s.name));
    const missing = shops.filter(withoutPc).map((s) => h('tr', { 'data-shop': s.slug, class: 'no-pc' }, h('th', { scope: 'row', class: 'shop-name' }, s.name), h('td', { colspan: 5, class: 'muted' }, 'No shop PC installed yet: nothing counted')));
    const table = stacked(
      h(
        'table',
        { id: 'side-table' },
        h('thead', {}, h('tr', {}, ...['Shop', 'Visitors', 'Visits', 'Conversion', 'Revenue', 'Revenue per visitor'].map((t) => h('th', { scope: 'col' }, t)))),
        h(
          'tbody',
          {},
          ...rows.map(({ s, f, c }) =>
            h(
              'tr',
              { 'data-shop': s.slug },
              h('th', { scope: 'row', class: 'shop-name' }, s.name),
              h('td', {}, f.total),
              h('td', {}, f.visits),
              h('td', {}, c.visitors > 0 ? pct(c.conversion) : '—'),
              h('td', {}, c.currency ? money(c.revenue, c.currency) : '—'),
              h('td', {}, c.currency && c.visitors > 0 ? money(c.revenue / c.visitors, c.currency) : '—'),
            ),
          ),
          ...missing,
        ),
      ),
    );
    // The one cell of a shop without a PC speaks for itself on a phone (no "Visitors" label before it).
    for (const tr of missing) tr.cells[1]?.removeAttribute('data-label');
    return h(
      'section',
      { class: 'card', id: 'side-by-side' },
      h('h2', {}, 'Shops side by side'),
      h('p', { class: 'muted small' }, `${q.get('from')} to ${q.get('to')}, each shop in its own time zone.`),
      h('div', { class: 'table-wrap' }, table),
    );
  } catch (err) {
    return signal.aborted ? null : h('p', { class: 'notice error' }, errorText(err));
  }
}
