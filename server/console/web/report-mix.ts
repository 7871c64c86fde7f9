import { h, stacked } from './dom.js';
import type { Footfall, Previous, VisitMix } from './types.js';

/**
 * The reports page's comparison with the period before and its visit mix (docs/console.md, Reports; the figures are
 * the API's, docs/reports.md "Compared with the period before", "Dwell time", "Age and gender bands"):
 * - versus: "+12 % vs previous 7 days" after a figure, from the report's `change` (a ratio) and `previous`;
 * - mixCard: mean and median visit length, age and gender bands (visits per band, unknown included, and the share
 *   of visits that had the attribute), and the same per shop.
 */

/** "previous 7 days", "previous day", "previous month", "previous 3 months": the period the API compared with. */
export function previousLabel(p: Pick<Previous, 'from' | 'to'>): string {
  const last = (d: string) => new Date(Date.UTC(Number(d.slice(0, 4)), Number(d.slice(5, 7)), 0)).toISOString().slice(0, 10);
  if (p.from.endsWith('-01') && p.to === last(p.to)) {
    const months = (Number(p.to.slice(0, 4)) - Number(p.from.slice(0, 4))) * 12 + Number(p.to.slice(5, 7)) - Number(p.from.slice(5, 7)) + 1;
    return months === 1 ? 'previous month' : `previous ${months} months`;
  }
  const days = Math.round((Date.parse(`${p.to}T00:00:00Z`) - Date.parse(`${p.from}T00:00:00Z`)) / 86_400_000) + 1;
  return days === 1 ? 'previous day' : `previous ${days} days`;
}

/**
 * The change of one figure against the period before: "+12 % vs previous 7 days", "−5 % ...", "no change ...";
 * "none in the previous 7 days" when there was nothing before (the API's change is null). Null when the report has
 * no comparison (an older head office) or nothing either time.
 */
export function versus(r: { previous?: Previous; change?: Record<string, number | null> }, key: string, now: number | null, previousKey = key): HTMLElement | null {
  if (!r.previous || !r.change || !(key in r.change)) return null;
  const label = previousLabel(r.previous);
  const before = r.previous[previousKey];
  const ratio = r.change[key] ?? null;
  const title = `${r.previous.from === r.previous.to ? r.previous.from : `${r.previous.from} to ${r.previous.to}`}: ${typeof before === 'number' ? before.toLocaleString() : '—'}`;
  if (ratio === null) {
    if (!now || before === null) return null;
    return h('span', { class: 'change flat', 'data-change': '', title }, `none in the ${label}`);
  }
  const pct = Math.round(ratio * 100);
  const text = pct === 0 ? `no change vs ${label}` : `${pct > 0 ? '+' : '−'}${Math.abs(pct)} % vs ${label}`;
  return h('span', { class: `change ${pct > 0 ? 'up' : pct < 0 ? 'down' : 'flat'}`, 'data-change': String(ratio), title }, text);
}

/** A figure and, after it, its change against the period before. */
export function withChange(value: string, change: HTMLElement | null): HTMLElement {
  return h('span', {}, h('span', { class: 'value' }, value), change ? ' ' : null, change);
}

/** Seconds as people read a stay: "45 s", "3 min 05 s", "1 h 20 min". */
export function duration(s: number): string {
  const t = Math.round(s);
  if (t < 60) return `${t} s`;
  if (t < 3600) return `${Math.floor(t / 60)} min ${String(t % 60).padStart(2, '0')} s`;
  return `${Math.floor(t / 3600)} h ${String(Math.floor((t % 3600) / 60)).padStart(2, '0')} min`;
}

export const AGE_LABELS: [string, string][] = [
  ['under_18', 'Under 18'],
  ['18_24', '18–24'],
  ['25_34', '25–34'],
  ['35_44', '35–44'],
  ['45_54', '45–54'],
  ['55_64', '55–64'],
  ['65_plus', '65 and over'],
  ['unknown', 'Unknown'],
];
export const GENDER_LABELS: [string, string][] = [
  ['female', 'Women'],
  ['male', 'Men'],
  ['unknown', 'Unknown'],
];

const share = (n: number, of: number) => (of === 0 ? '—' : `${(Math.round((n / of) * 1000) / 10).toLocaleString()} %`);

/** A table of visits per band with each band's share of the visits; the caption says how many visits had the attribute. */
function bandTable(id: string, caption: string, known: string, labels: [string, string][], bands: Record<string, number>, visits: number): HTMLElement {
  // Three narrow columns fit a phone: not stacked (which would make each band three lines).
  return h(
      'table',
      { id, class: 'bands' },
      h('caption', {}, caption, ' ', h('span', { class: 'muted small', 'data-known': id }, `(${known} of visits had one)`)),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Band'), h('th', { scope: 'col' }, 'Visits'), h('th', { scope: 'col' }, 'Share'))),
      h(
        'tbody',
        {},
        ...labels.map(([key, label]) =>
          h('tr', { 'data-band': key }, h('th', { scope: 'row' }, label), h('td', { 'data-visits': String(bands[key] ?? 0) }, (bands[key] ?? 0).toLocaleString()), h('td', {}, share(bands[key] ?? 0, visits))),
        ),
      ),
  );
}

/** Visit length and who came: absent from an older head office that has no bands. */
export function mixCard(r: Footfall): HTMLElement | null {
  if (!r.age || !r.gender || r.median_dwell_s === undefined) return null;
  const all: VisitMix = { visits: r.visits, average_dwell_s: r.average_dwell_s ?? 0, median_dwell_s: r.median_dwell_s, age: r.age, gender: r.gender, with_age: r.with_age ?? 0, with_gender: r.with_gender ?? 0 };
  const sites = r.sites ?? [];
  const pct = (x: number) => `${(Math.round(x * 1000) / 10).toLocaleString()} %`;
  const dwell = (v: number) => (r.visits === 0 ? '—' : duration(v));
  return h(
    'section',
    { class: 'card', id: 'report-mix' },
    h('h2', {}, 'Visit length, age and gender'),
    h('p', { class: 'muted small' }, 'A visit lasts from its first to its last sighting. Bands count visits; a gender is sent only when measured reliably, so "Unknown" is a real band. Staff left out.'),
    h(
      'dl',
      { class: 'facts totals' },
      h('dt', {}, 'Average visit'),
      h('dd', { 'data-mix': 'average_dwell_s', 'data-seconds': String(all.average_dwell_s) }, withChange(dwell(all.average_dwell_s), versus(r, 'average_dwell_s', all.average_dwell_s))),
      h('dt', {}, 'Median visit'),
      h('dd', { 'data-mix': 'median_dwell_s', 'data-seconds': String(all.median_dwell_s) }, withChange(dwell(all.median_dwell_s), versus(r, 'median_dwell_s', all.median_dwell_s))),
    ),
    // Open on a wide screen; folded on a phone, where eleven rows would double the page.
    h(
      'details',
      { class: 'fold', id: 'bands-fold', open: !window.matchMedia('(max-width: 640px)').matches },
      h('summary', {}, 'Visits by age and gender'),
      h('div', { class: 'band-tables' }, bandTable('age-bands', 'Age', pct(all.with_age), AGE_LABELS, all.age, all.visits), bandTable('gender-bands', 'Gender', pct(all.with_gender), GENDER_LABELS, all.gender, all.visits)),
    ),
    sites.length > 1
      ? h(
          'details',
          { class: 'fold', id: 'mix-by-shop-fold' },
          h('summary', {}, `By shop (${sites.length})`),
          stacked(
            h(
              'table',
              { id: 'mix-by-shop' },
              h('caption', {}, 'By shop'),
              h('thead', {}, h('tr', {}, ...['Shop', 'Visits', 'Average visit', 'Median visit', 'Women', 'Men', 'Gender unknown', 'With an age'].map((t) => h('th', { scope: 'col' }, t)))),
              h(
                'tbody',
                {},
                ...sites.map((s) =>
                  h(
                    'tr',
                    { 'data-shop': s.slug },
                    h('th', { scope: 'row', class: 'shop-name' }, s.name),
                    h('td', {}, s.visits.toLocaleString()),
                    h('td', { 'data-seconds': String(s.average_dwell_s) }, s.visits ? duration(s.average_dwell_s) : '—'),
                    h('td', { 'data-seconds': String(s.median_dwell_s) }, s.visits ? duration(s.median_dwell_s) : '—'),
                    h('td', {}, String(s.gender.female ?? 0)),
                    h('td', {}, String(s.gender.male ?? 0)),
                    h('td', {}, String(s.gender.unknown ?? 0)),
                    h('td', {}, pct(s.with_age)),
                  ),
                ),
              ),
            ),
          ),
        )
      : null,
  );
}
