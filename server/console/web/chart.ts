/**
 * A stacked bar chart of visitors per bucket (returning, new, not identified), drawn as SVG with DOM APIs
 * (createElementNS) and presentation attributes only: the CSP has no 'unsafe-inline', so no style attributes.
 * Colours come from classes in console.css. Each bar is a group with a <title> (its numbers, shown on hover and read
 * as the bar's name); the page puts a table of the same numbers under the chart.
 */

const NS = 'http://www.w3.org/2000/svg';

export interface Bar {
  label: string;
  visitors: number;
  new: number;
  returning: number;
}

type Attrs = Record<string, string | number>;

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Node | string)[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return el;
}

/** The smallest 1, 2 or 5 times a power of ten at or above `n` (at least 1): the top of the axis. */
export function niceMax(n: number): number {
  if (n <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

/** Visitors of a bucket who were no known customer (unidentified visits, one person each). */
export function unidentified(b: Pick<Bar, 'visitors' | 'new' | 'returning'>): number {
  return Math.max(0, b.visitors - b.new - b.returning);
}

/** "12 visitors: 5 new, 6 returning, 1 not identified". */
export function barText(b: Bar): string {
  const other = unidentified(b);
  return `${b.label}: ${b.visitors.toLocaleString()} visitor${b.visitors === 1 ? '' : 's'} (${b.new.toLocaleString()} new, ${b.returning.toLocaleString()} returning, ${other.toLocaleString()} not identified)`;
}

const LEFT = 44;
const RIGHT = 8;
const TOP = 12;
const BOTTOM = 34;

/**
 * The chart; `tick` shortens a bucket label for the x axis. On a phone the page asks for a narrower, taller
 * drawing (400x300 instead of 800x260) with fewer labels, so that it is not shrunk to a strip with 4 px text.
 */
export function barChart(bars: Bar[], name: string, tick: (label: string) => string = (l) => l, size: { width?: number; height?: number; labels?: number } = {}): SVGSVGElement {
  const W = size.width ?? 800;
  const H = size.height ?? 260;
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const top = niceMax(Math.max(0, ...bars.map((b) => b.visitors)));
  const y = (v: number) => TOP + plotH - (v / top) * plotH;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'group', 'aria-label': name, id: 'report-chart' });

  // Axis: lines at 0, half (when it is a whole number) and the top, with their numbers.
  for (const v of top % 2 === 0 ? [0, top / 2, top] : [0, top]) {
    root.append(
      svg('line', { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v), class: v === 0 ? 'axis' : 'grid' }),
      svg('text', { x: LEFT - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, v.toLocaleString()),
    );
  }

  const slot = bars.length > 0 ? plotW / bars.length : plotW;
  const width = Math.max(1, slot * (bars.length > 60 ? 0.9 : 0.7));
  const every = Math.max(1, Math.ceil(bars.length / (size.labels ?? 8))); // at most about eight labels under the bars
  bars.forEach((b, i) => {
    const x = LEFT + i * slot + (slot - width) / 2;
    const other = unidentified(b);
    const g = svg('g', { class: 'bar', role: 'img', 'data-bucket': b.label, 'data-visitors': b.visitors, 'data-new': b.new, 'data-returning': b.returning }, svg('title', {}, barText(b)));
    let base = 0;
    for (const [cls, v] of [['returning', b.returning], ['new', b.new], ['other', other]] as const) {
      if (v <= 0) continue;
      g.append(svg('rect', { class: cls, x: round(x), width: round(width), y: round(y(base + v)), height: round(y(base) - y(base + v)) }));
      base += v;
    }
    // An empty bucket still gets a transparent target, so its title shows on hover.
    g.append(svg('rect', { class: 'hit', x: round(x), width: round(width), y: TOP, height: plotH, fill: 'transparent' }));
    root.append(g);
    if (i % every === 0) root.append(svg('text', { x: round(LEFT + i * slot + slot / 2), y: H - BOTTOM + 18, 'text-anchor': 'middle', class: 'tick' }, tick(b.label)));
  });
  return root;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
