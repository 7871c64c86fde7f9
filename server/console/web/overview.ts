import { api, ApiError } from './api.js';
import { facts, cardForm, field, h, notice, plural, replace, select, timeAgo } from './dom.js';
import type { Page } from './main.js';
import { atLeast } from './session.js';
import { droppedNotice } from './shop.js';
import { placement, type Camera, type Footfall, type Shop } from './types.js';
import { headlines, ranking } from './headlines.js';
import { companyZone, zoneNames } from './zones.js';
import { doorFacts, liveShops } from './door.js';
import { camerasUp } from './camera-state.js';

/**
 * The company's shops at a glance: each shop's PC state, cameras, placement and today's visitors
 * (GET /api/sites, GET /api/cameras, GET /api/reports/footfall per shop). Refreshed every 30 s while open; people in
 * the shop now (body counting, web/door.ts) every 5 s while the page is visible.
 */
export function renderOverview(p: Page): void {
  const summary = h('p', { class: 'summary', id: 'company-today' }, 'Loading…');
  const list = h('div', { class: 'shops', id: 'shops', 'aria-live': 'polite' });
  const error = notice('error');
  const figures = h('section', { id: 'headlines', 'aria-label': 'Headline figures' });
  const ranked = h('section', { id: 'ranking' });
  const owner = atLeast(p.user, 'owner');
  const manager = atLeast(p.user, 'manager');
  // The form to open a shop is behind a button (it is needed rarely), open at once for a company with no shop.
  const openButton = h('button', { type: 'button', id: 'open-shop-button', 'aria-expanded': 'false' }, 'Open a shop…');
  const openArea = h('div', { id: 'open-shop-area' });
  let shopsNow: Shop[] = [];
  // Regions (docs/operations.md): a filter shown once a shop has one; the choice is kept in the address (#/?region=).
  const regionPick = h('select', { id: 'region-filter', 'aria-label': 'Region', hidden: true });
  let regionNow = new URLSearchParams(location.hash.split('?')[1] ?? '').get('region') ?? '';
  regionPick.addEventListener('change', () => {
    regionNow = regionPick.value;
    history.replaceState(null, '', regionNow ? `#/?region=${encodeURIComponent(regionNow)}` : '#/');
    lastHeadlines = 0;
    void load();
  });
  const showForm = () => {
    if (openArea.firstChild) return;
    replace(openArea, openShopForm(companyZone(shopsNow), () => void load()));
    openButton.setAttribute('aria-expanded', 'true');
    openButton.hidden = true;
  };
  openButton.addEventListener('click', () => {
    showForm();
    openArea.querySelector('input')?.focus();
  });
  replace(p.main, h('div', { class: 'page-head' }, h('h1', {}, 'Overview'), summary, regionPick, owner ? openButton : null), error.el, figures, h('h2', {}, 'Shops'), list, ranked);
  if (owner) p.main.append(openArea);
  let lastHeadlines = 0;

  let timer = 0;
  p.signal.addEventListener('abort', () => clearTimeout(timer));
  // A hidden page (another tab, a minimised window) reads nothing: the read that falls due meanwhile runs on return.
  let due = false;
  document.addEventListener('visibilitychange', () => due && document.visibilityState === 'visible' && void load(), { signal: p.signal });

  async function load(): Promise<void> {
    clearTimeout(timer);
    due = false;
    try {
      const [all, cameras] = await Promise.all([api<Shop[]>('GET', '/api/sites', { signal: p.signal }), api<Camera[]>('GET', '/api/cameras', { signal: p.signal })]);
      if (p.signal.aborted) return;
      error.show('');
      const regions = [...new Set(all.map((s) => s.region).filter((r): r is string => !!r))].sort((a, b) => a.localeCompare(b));
      if (!regions.includes(regionNow)) regionNow = '';
      regionPick.hidden = regions.length === 0;
      replace(regionPick, h('option', { value: '' }, 'All regions'), ...regions.map((r) => h('option', { value: r, selected: r === regionNow }, r)));
      regionPick.value = regionNow;
      const shops = regionNow ? all.filter((s) => s.region === regionNow) : all;
      shopsNow = shops;
      if (shops.length === 0) {
        summary.textContent = '';
        replace(figures);
        replace(list, emptyCompany(p));
        if (owner) showForm();
      } else {
        const counts = await Promise.all(shops.map((s) => today(`?site=${encodeURIComponent(s.slug)}`, p.signal)));
        const company = await today(regionNow ? `?region=${encodeURIComponent(regionNow)}` : '', p.signal);
        if (p.signal.aborted) return;
        summary.textContent = company ? `Today: ${plural(company.visitors, 'visitor')} across ${plural(shops.length, 'shop')}${regionNow ? ` in ${regionNow}` : ''}` : '';
        replace(list, ...shops.map((s, i) => shopCard(s, cameras.filter((c) => c.site_id === s.site_id), counts[i] ?? null, manager)));
        // The comparisons change slowly: read again every five minutes, not every 30 s.
        if (Date.now() - lastHeadlines > 300_000) {
          lastHeadlines = Date.now();
          const zone = companyZone(shops);
          // The headline figures follow the region filter like the cards (an answer for a region left meanwhile is dropped).
          const asked = regionNow;
          void headlines(zone, p.signal, asked).then((el) => el && !p.signal.aborted && asked === regionNow && replace(figures, el));
          if (shops.length > 1) void ranking(shops, zone, p.signal).then((el) => el && !p.signal.aborted && replace(ranked, el));
        }
      }
    } catch (err) {
      if (p.signal.aborted) return;
      error.show(err instanceof ApiError ? err.message : 'Head office could not be reached. Retrying…');
    }
    timer = window.setTimeout(() => (document.visibilityState === 'visible' ? void load() : (due = true)), 30_000);
  }
  void load();
  // People in the shop now, live: only the door block of each card changes.
  liveShops(
    p.signal,
    () => shopsNow.some((s) => typeof s.occupancy === 'number'),
    (shops) => {
      for (const s of shops) {
        const card = list.querySelector(`[data-shop="${CSS.escape(s.slug)}"]`);
        if (!card) continue;
        const was = card.querySelector('.door');
        const now = doorFacts(s, manager);
        if (was && now) was.replaceWith(now);
        else if (was) was.remove();
        else if (now) card.querySelector('.facts')?.after(now);
      }
    },
  );
}

interface Today {
  visitors: number;
  new: number;
  returning: number;
  week: number;
}

/** Today's point of the default footfall report (last seven days by day, in the shop's own time zone). */
async function today(query: string, signal: AbortSignal): Promise<Today | null> {
  try {
    const r = await api<Footfall>('GET', `/api/reports/footfall${query}`, { signal });
    const last = r.points[r.points.length - 1];
    return { visitors: last?.visitors ?? 0, new: last?.new ?? 0, returning: last?.returning ?? 0, week: r.total };
  } catch {
    return null;
  }
}

function state(s: Shop): { word: string; cls: string } {
  if (s.online) return { word: 'Online', cls: 'good' };
  if (s.last_heartbeat_at) return { word: 'Offline', cls: 'bad' };
  if (s.enrolled_at) return { word: 'Installed, not reporting yet', cls: 'warn' };
  return { word: 'No shop PC yet', cls: 'unknown' };
}

function shopCard(s: Shop, cameras: Camera[], t: Today | null, manager: boolean): HTMLElement {
  const st = state(s);
  const worst = cameras.find((c) => c.camera_id === s.worst_camera_id);
  const pl = placement(s.fraction_below_gate, worst ? worst.label || worst.camera_id : s.worst_camera_id);
  // The same per-camera state the camera cards show (web/camera-state.ts): one truth for "cameras up".
  const up = camerasUp(s, cameras);
  const rows: [string, HTMLElement | string][] = [
    ['Shop PC', h('span', { class: `badge ${st.cls}` }, st.word)],
    ['Last seen', timeAgo(s.last_heartbeat_at)],
    ['Cameras', h('span', { class: `dot ${up.cls}`, 'data-cameras-up': '' }, up.text)],
    ['Placement', h('span', { class: `dot ${pl.cls}`, 'data-placement': '' }, pl.word)],
    ['Today', t ? `${plural(t.visitors, 'visitor')}${t.new + t.returning > 0 ? ` (${t.new} new, ${t.returning} returning)` : ''}` : 'not available'],
    ['Last 7 days', t ? plural(t.week, 'visitor') : 'not available'],
  ];
  return h(
    'article',
    { class: 'card shop', 'data-shop': s.slug },
    h('h2', {}, h('a', { href: `#/shop/${encodeURIComponent(s.slug)}` }, s.name)),
    h('p', { class: 'muted small' }, s.slug, ' · ', s.timezone),
    facts(rows),
    doorFacts(s, manager),
    droppedNotice(s),
  );
}

function emptyCompany(p: Page): HTMLElement {
  const owner = atLeast(p.user, 'owner');
  return h(
    'div',
    { class: 'card empty', id: 'no-shops' },
    h('h2', {}, 'No shops yet'),
    h('p', {}, `${p.user.client_name} has no shops in Footfall yet. A shop appears here once it is opened; then an installation code connects the shop's PC and its cameras.`),
    owner ? h('p', {}, 'Open your first shop with the form below.') : h('p', {}, 'Ask an owner of your company to open one.'),
  );
}

/** Owners only: POST /api/sites. */
function openShopForm(zone: string, done: () => void): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
  const slug = h('input', { name: 'slug', autocomplete: 'off', pattern: '[a-z0-9\\-]{3,32}', placeholder: 'derived from the name' });
  // A list of the zones the browser knows, starting on the company's (its shops' zone; docs/console.md).
  const tz = select('timezone', zoneNames(zone).map((z): [string, string] => [z, z]), zone);
  return cardForm({
    id: 'open-shop',
    title: 'Open a shop',
    fields: [
      field('Shop name', name),
      field('Short name (slug)', slug, 'Optional: 3 to 32 lower-case letters, digits and dashes. It cannot be changed later.'),
      field('Time zone', tz, 'The shop’s local time: reports count its days and hours in it. Starts on your other shops’ zone.'),
    ],
    submitLabel: 'Open shop',
    submit: async ({ msg }) => {
      const body: Record<string, string> = { name: name.value.trim() };
      if (slug.value.trim()) body.slug = slug.value.trim();
      body.timezone = tz.value;
      const r = await api<{ slug: string; name: string }>('POST', '/api/sites', { body });
      msg.show(`Opened ${r.name} (${r.slug}).`, 'ok');
      name.value = '';
      slug.value = '';
      done();
    },
  });
}
