import { h } from './dom.js';

/**
 * Small figures drawn by hand as SVG or HTML (docs/console.md, Charts: why these are not uPlot): sparklines (a few
 * dozen points, no axes), the change against the period before, and the busiest-hours heatmap (a table: readable by
 * screen readers and by tests, shaded by classes, no style attributes under the CSP).
 */

const NS = 'http://www.w3.org/2000/svg';

/** A 100x24 trend line of `values` (oldest first); the last point is marked. */
export function sparkline(values: number[], label: string): SVGSVGElement {
  const W = 100;
  const H = 24;
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('class', 'spark');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('preserveAspectRatio', 'none');
  const title = document.createElementNS(NS, 'title');
  title.textContent = label;
  svg.append(title);
  if (values.length < 2) return svg;
  const top = Math.max(1, ...values);
  const x = (i: number) => Math.round((i / (values.length - 1)) * (W - 4) * 100) / 100 + 2;
  const y = (v: number) => Math.round((H - 3 - (v / top) * (H - 6)) * 100) / 100;
  const path = document.createElementNS(NS, 'polyline');
  path.setAttribute('points', values.map((v, i) => `${x(i)},${y(v)}`).join(' '));
  path.setAttribute('class', 'spark-line');
  path.setAttribute('fill', 'none');
  const dot = document.createElementNS(NS, 'circle');
  dot.setAttribute('cx', String(x(values.length - 1)));
  dot.setAttribute('cy', String(y(values[values.length - 1]!)));
  dot.setAttribute('r', '2');
  dot.setAttribute('class', 'spark-dot');
  svg.append(path, dot);
  return svg;
}

/** +12% / −5% / "no change" / "new" (nothing before) / "—" (nothing either time), classed up, down or flat. */
export function change(now: number, before: number): HTMLElement {
  if (before === 0 && now === 0) return h('span', { class: 'change flat', 'data-change': '' }, '—');
  if (before === 0) return h('span', { class: 'change up', 'data-change': 'new' }, 'new');
  const pct = Math.round(((now - before) / before) * 100);
  const text = pct === 0 ? 'no change' : `${pct > 0 ? '+' : '−'}${Math.abs(pct)}%`;
  return h('span', { class: `change ${pct > 0 ? 'up' : pct < 0 ? 'down' : 'flat'}`, 'data-change': String(pct), title: `before: ${before.toLocaleString()}` }, text);
}

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/**
 * Busiest hours: rows Monday to Sunday, columns 0 to 23 (the report's zone, from its local-time labels
 * `YYYY-MM-DDTHH:00`), each cell the visitors summed over the window's days of that weekday and hour, shaded in six
 * steps of the busiest cell. Hours with no visitors on any day are dropped from the left and right ends.
 */
export function heatmap(points: { bucket: string; visitors: number; open?: boolean | null }[], caption: string): HTMLElement {
  const grid = WEEKDAYS.map(() => new Array<number>(24).fill(0));
  // Opening hours (docs/reports.md): a weekday-hour is open when it was open on any day of the window; unknown (all
  // null) leaves every cell as before.
  const known = points.some((p) => p.open === true || p.open === false);
  const open = WEEKDAYS.map(() => new Array<boolean>(24).fill(false));
  for (const p of points) {
    const date = p.bucket.slice(0, 10);
    const hour = Number(p.bucket.slice(11, 13));
    const day = (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7;
    if (!Number.isNaN(hour)) {
      grid[day]![hour]! += p.visitors;
      if (p.open) open[day]![hour] = true;
    }
  }
  const busiest = Math.max(0, ...grid.flat());
  const used = [...Array(24).keys()].filter((hr) => grid.some((row) => row[hr]! > 0) || (known && open.some((row) => row[hr])));
  const first = used.length ? Math.min(...used) : 8;
  const last = used.length ? Math.max(...used) : 20;
  const hours = [...Array(last - first + 1).keys()].map((i) => first + i);
  const shade = (v: number) => (v === 0 || busiest === 0 ? 0 : Math.max(1, Math.ceil((v / busiest) * 5)));
  return h(
    'div',
    { class: 'heat-wrap' },
    h(
      'table',
      { class: 'heatmap', id: 'heatmap' },
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, h('td'), ...hours.map((hr) => h('th', { scope: 'col' }, String(hr).padStart(2, '0'))))),
      h(
        'tbody',
        {},
        ...WEEKDAYS.map((d, i) =>
          h('tr', {}, h('th', { scope: 'row' }, d), ...hours.map((hr) => {
            const v = grid[i]![hr]!;
            const closed = known && !open[i]![hr];
            const title = `${d} ${String(hr).padStart(2, '0')}:00 – ${plural(v)}${closed ? ' (closed)' : ''}`;
            return h('td', { class: `heat h${shade(v)}${closed ? ' closed' : ''}`, 'data-day': d, 'data-hour': hr, 'data-visitors': v, 'data-open': known ? String(!closed) : undefined, title }, h('span', { class: 'visually-hidden' }, closed ? `${v}, closed` : String(v)));
          })),
        ),
      ),
    ),
    h('p', { class: 'muted small heat-key' }, busiest > 0 ? `Darker is busier; the busiest hour had ${plural(busiest)}. Hover a square for its number.${known ? ' Hatched squares are hours the shop was closed.' : ''}` : 'No visitors in this period.'),
  );
}

const plural = (n: number) => `${n.toLocaleString()} visitor${n === 1 ? '' : 's'}`;
