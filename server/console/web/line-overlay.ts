import { svg } from './chart.js';
import type { CountingLine, Point } from './types.js';

/**
 * The counting line drawn over a camera's picture (docs/body-counting.md, docs/console.md "Counting line"): an SVG
 * laid over the picture whose viewBox has the picture's shape and `preserveAspectRatio="xMidYMid meet"`, so it is
 * scaled and letterboxed exactly as the `<img>` under it (`object-fit: contain`, centred). The viewBox is 1000 units
 * wide (VIEW_W) and as high as the picture's shape makes it; line points are 0..1 of the picture. Built with
 * createElementNS and presentation attributes only; colours come from console.css (the CSP allows no style attribute).
 */

export const VIEW_W = 1000;

/** The overlay for a picture of this shape (width / height); `setShape` changes it when the picture loads. */
export function overlay(cls: string, aspect = 16 / 9): SVGSVGElement {
  const root = svg('svg', { class: `line-overlay ${cls}`, preserveAspectRatio: 'xMidYMid meet', 'aria-hidden': 'true' });
  setShape(root, aspect);
  return root;
}

export function setShape(root: SVGSVGElement, aspect: number): void {
  const a = Number.isFinite(aspect) && aspect > 0 ? aspect : 16 / 9;
  root.setAttribute('viewBox', `0 0 ${VIEW_W} ${round(VIEW_W / a)}`);
}

/** The overlay's height in viewBox units. */
export function viewHeight(root: SVGSVGElement): number {
  return root.viewBox.baseVal.height || VIEW_W / (16 / 9);
}

/** The shortest line head office takes (5 % of the picture, measured in 0..1 coordinates as the API does). */
export const SHORTEST = 0.05;

export function lineLength(a: Point, b: Point): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1]);
}

/**
 * The unit normal (in picture pixels, y downwards) pointing to the inside side: walking from `a` to `b`, the left
 * side is (dy, -dx) and the right side (-dy, dx). A point p is on the left when cross(b - a, p - a) < 0 (y down).
 */
export function insideNormal(l: CountingLine, aspect: number): [number, number] {
  const dx = (l.b[0] - l.a[0]) * aspect;
  const dy = l.b[1] - l.a[1];
  const n = Math.hypot(dx, dy) || 1;
  return l.inside === 'left' ? [dy / n, -dx / n] : [-dy / n, dx / n];
}

/** Where the inside is, in words: "below the line", "to the right of the line"... (the normal's main direction). */
export function insideWords(l: CountingLine, aspect = 16 / 9): string {
  const [nx, ny] = insideNormal(l, aspect);
  if (Math.abs(ny) >= Math.abs(nx)) return ny > 0 ? 'below the line (towards the bottom of the picture)' : 'above the line (towards the top of the picture)';
  return nx > 0 ? 'to the right of the line' : 'to the left of the line';
}

/** "12.5%, 40%": a point as people read it. */
export function pointWords(p: Point): string {
  return `${pct(p[0])}, ${pct(p[1])}`;
}

export function pct(v: number): string {
  return `${(Math.round(v * 1000) / 10).toLocaleString('en')}%`;
}

/**
 * Draws the line into the overlay (replacing what was drawn): the line, its two ends (A and B: handles the editor
 * lets you drag), and from its middle an arrow to the inside labelled "inside" with "outside" opposite. A line with
 * only its first point (`b` null) is a dot. Nothing when `line` is null.
 */
export function drawLine(root: SVGSVGElement, line: { a: Point; b: Point | null; inside: 'left' | 'right' } | null, opts: { handles?: boolean } = {}): void {
  while (root.firstChild) root.removeChild(root.firstChild);
  if (!line) return;
  const H = viewHeight(root);
  const aspect = VIEW_W / H;
  const P = (p: Point): [number, number] => [round(p[0] * VIEW_W), round(p[1] * H)];
  const [ax, ay] = P(line.a);
  const r = opts.handles ? 16 : 9;
  if (!line.b) {
    root.append(svg('circle', { class: 'end handle', cx: ax, cy: ay, r, 'data-handle': 'a' }));
    return;
  }
  const [bx, by] = P(line.b);
  const g = svg('g', { class: 'counting-line', 'data-inside': line.inside });
  g.append(svg('line', { class: 'halo', x1: ax, y1: ay, x2: bx, y2: by }), svg('line', { class: 'stroke', x1: ax, y1: ay, x2: bx, y2: by }));
  if (lineLength(line.a, line.b) > 0) {
    const [nx, ny] = insideNormal({ a: line.a, b: line.b, inside: line.inside }, aspect);
    const mx = (ax + bx) / 2;
    const my = (ay + by) / 2;
    const len = Math.min(110, H * 0.22);
    const tip: [number, number] = [mx + nx * len, my + ny * len];
    // The arrowhead: a triangle at the tip, its base across the arrow.
    const back: [number, number] = [tip[0] - nx * 26, tip[1] - ny * 26];
    const side: [number, number] = [-ny * 16, nx * 16];
    const head = [tip, [back[0] + side[0], back[1] + side[1]], [back[0] - side[0], back[1] - side[1]]].map(([x, y]) => `${round(x!)},${round(y!)}`).join(' ');
    g.append(
      svg('line', { class: 'arrow halo', x1: round(mx), y1: round(my), x2: round(back[0]), y2: round(back[1]) }),
      svg('line', { class: 'arrow', x1: round(mx), y1: round(my), x2: round(back[0]), y2: round(back[1]) }),
      svg('polygon', { class: 'arrow-head', points: head }),
      label('inside', mx + nx * (len + 34), my + ny * (len + 34), H),
      label('outside', mx - nx * 60, my - ny * 60, H),
    );
  }
  root.append(g);
  root.append(svg('circle', { class: 'end handle', cx: ax, cy: ay, r, 'data-handle': 'a' }), svg('circle', { class: 'end handle', cx: bx, cy: by, r, 'data-handle': 'b' }));
  root.append(svg('text', { class: 'end-name', x: ax, y: ay - r - 6, 'text-anchor': 'middle' }, 'A'), svg('text', { class: 'end-name', x: bx, y: by - r - 6, 'text-anchor': 'middle' }, 'B'));
}

/** A label kept inside the picture. */
function label(text: string, x: number, y: number, H: number): SVGTextElement {
  const cx = Math.min(VIEW_W - 70, Math.max(70, x));
  const cy = Math.min(H - 10, Math.max(34, y + 12));
  return svg('text', { class: `side-name ${text}`, x: round(cx), y: round(cy), 'text-anchor': 'middle' }, text);
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
