import { niceMax, svg } from './chart.js';
import { h, plural, stacked } from './dom.js';
import type { Footfall, Shop } from './types.js';

/**
 * Entries, exits and capture rate on the reports page (docs/console.md "Entries, exits and people in the shop"), from
 * the footfall report's additive fields (docs/body-counting.md): the totals' rows, and a card with entries and exits
 * per bucket as paired bars (up to 62 buckets) over a table with the capture rate. A scope where no camera has a
 * counting line (every shop's `occupancy` null) and nothing was counted gets a hint instead of zeros. Nothing at all
 * from a head office without body counting (no `entries` in the report).
 */

type Point = Footfall['points'][number];

/** "40%" (one decimal when needed), or "—" when there were no entries. */
export function rateText(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? '—' : `${(Math.round(rate * 1000) / 10).toLocaleString()}%`;
}

/** Whether the report speaks of entries at all, and whether the scope has a counting line (or counted anything). */
export function doorScope(r: Footfall, shops: Shop[], site: string): 'absent' | 'none' | 'counting' {
  if (r.entries === undefined) return 'absent';
  const scope = site ? shops.filter((s) => s.slug === site) : shops;
  const lined = scope.some((s) => typeof s.occupancy === 'number');
  return lined || r.entries > 0 || (r.exits ?? 0) > 0 ? 'counting' : 'none';
}

/** Rows for the totals card: entries, exits and capture rate (identified visits per entry). */
export function doorTotals(r: Footfall): [string, string][] {
  return [
    ['Entries', (r.entries ?? 0).toLocaleString()],
    ['Exits', (r.exits ?? 0).toLocaleString()],
    ['Capture rate', rateText(r.capture_rate)],
  ];
}

/** The card: a hint when nothing counts, else the bars (when they fit) and the table. */
export function doorCard(r: Footfall, state: 'none' | 'counting', oneShop: boolean, label: (bucket: string) => string, tick: (bucket: string) => string): HTMLElement {
  const intro = h(
    'p',
    { class: 'muted small' },
    'People counted by their bodies crossing a counting line at the door, whether or not their face was seen. Capture rate: identified visits per entry, the share of people coming in whom the cameras recognised.',
  );
  if (state === 'none') {
    return h(
      'section',
      { class: 'card', id: 'door-report' },
      h('h2', {}, 'Entries and exits'),
      h('p', { class: 'notice info' }, `No camera ${oneShop ? 'of this shop' : 'of your shops'} has a counting line, so nothing counts entries and exits. Draw a counting line to count entries: on the shop page, “Counting line…” on a camera that sees the door.`),
    );
  }
  const word = r.bucket;
  const tooMany = r.points.length > 62;
  const rows = r.points.map((pt) => h('tr', { 'data-bucket': pt.bucket }, h('th', { scope: 'row' }, label(pt.bucket)), h('td', {}, pt.entries ?? 0), h('td', {}, pt.exits ?? 0), h('td', {}, rateText(pt.capture_rate))));
  const table = h(
    'div',
    { class: 'table-wrap' },
    stacked(
      h(
        'table',
        { id: 'door-table' },
        h('caption', { class: 'visually-hidden' }, `Entries and exits per ${word}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, word[0]!.toUpperCase() + word.slice(1)), h('th', { scope: 'col' }, 'Entries'), h('th', { scope: 'col' }, 'Exits'), h('th', { scope: 'col' }, 'Capture rate'))),
        h('tbody', {}, ...rows),
      ),
    ),
  );
  return h(
    'figure',
    { class: 'card chart-card', id: 'door-report' },
    h('figcaption', {}, h('h2', {}, `Entries and exits per ${word}`), legend()),
    intro,
    tooMany ? h('p', { class: 'muted' }, `${r.points.length} ${word}s are too many to draw as bars: group by day to see them.`) : doorChart(r.points, `Entries and exits per ${word}`, tick),
    r.points.length > 14 ? h('details', { class: 'fold' }, h('summary', {}, `Show the numbers (${r.points.length} rows)`), table) : table,
  );
}

function legend(): HTMLElement {
  const key = (cls: string, text: string) => h('li', {}, h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text);
  return h('ul', { class: 'legend small' }, key('entries', 'Entries'), key('exits', 'Exits'));
}

/** Paired bars (entries, exits) per bucket, each pair a group with a <title> of its numbers. */
function doorChart(points: Point[], name: string, tick: (bucket: string) => string): SVGSVGElement {
  const phone = window.matchMedia('(max-width: 640px)').matches;
  const W = phone ? 400 : 800;
  const H = phone ? 260 : 220;
  const [left, right, top, bottom] = [44, 8, 12, 34];
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const most = niceMax(Math.max(0, ...points.map((p) => Math.max(p.entries ?? 0, p.exits ?? 0))));
  const y = (v: number) => top + plotH - (v / most) * plotH;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'group', 'aria-label': name, id: 'door-chart' });
  for (const v of most % 2 === 0 ? [0, most / 2, most] : [0, most]) {
    root.append(svg('line', { x1: left, x2: W - right, y1: y(v), y2: y(v), class: v === 0 ? 'axis' : 'grid' }), svg('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, v.toLocaleString()));
  }
  const slot = points.length > 0 ? plotW / points.length : plotW;
  const bar = Math.max(1, (slot * 0.8) / 2);
  const every = Math.max(1, Math.ceil(points.length / (phone ? 4 : 8)));
  points.forEach((p, i) => {
    const x = left + i * slot + slot * 0.1;
    const entries = p.entries ?? 0;
    const exits = p.exits ?? 0;
    const g = svg('g', { class: 'pair', role: 'img', 'data-bucket': p.bucket, 'data-entries': entries, 'data-exits': exits }, svg('title', {}, `${p.bucket}: ${plural(entries, 'entry', 'entries')}, ${plural(exits, 'exit')}, capture rate ${rateText(p.capture_rate)}`));
    if (entries > 0) g.append(svg('rect', { class: 'entries', x: r2(x), width: r2(bar), y: r2(y(entries)), height: r2(y(0) - y(entries)) }));
    if (exits > 0) g.append(svg('rect', { class: 'exits', x: r2(x + bar), width: r2(bar), y: r2(y(exits)), height: r2(y(0) - y(exits)) }));
    g.append(svg('rect', { class: 'hit', x: r2(left + i * slot), width: r2(slot), y: top, height: plotH, fill: 'transparent' }));
    root.append(g);
    if (i % every === 0) root.append(svg('text', { x: r2(left + i * slot + slot / 2), y: H - bottom + 18, 'text-anchor': 'middle', class: 'tick' }, tick(p.bucket)));
  });
  return root;
}

function r2(n: number): number {
  return Math.round(n * 100) / 100;
}
