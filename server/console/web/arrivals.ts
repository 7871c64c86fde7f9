import { api, errorText, imageUrl } from './api.js';
import { ago, field, h, notice, replace, select, when } from './dom.js';
import type { Page } from './main.js';
import { noPcNotice, withoutPc } from './no-pc.js';
import { atLeast } from './session.js';
import { follow, type StreamState } from './sse.js';
import { attributesText, type Arrival, type Camera, type Feed, type Shop } from './types.js';

/**
 * A live feed of arrivals: the latest rows of GET /api/visits, then new ones from GET /api/visits/stream (fetch()
 * streaming, resumed from the last event id; docs/console.md). Newest on top, at most SHOWN rows; de-duplicated on
 * `visit_id` (delivery is at least once). Face photos are fetched with the token and shown through blob: URLs,
 * released when their row leaves the list or the page is left. Changing the shop filter, or leaving the page, aborts
 * the stream.
 */

const SHOWN = 50;
/** How many visit ids are remembered for de-duplication (more than are shown: a replay may reach further back). */
const REMEMBERED = 1000;

export function renderArrivals(p: Page): void {
  const status = h('p', { class: 'stream-state small', id: 'stream-state', role: 'status' }, 'Connecting…');
  const error = notice('error');
  const list = h('ol', { class: 'arrivals', id: 'arrivals', 'aria-label': 'Arrivals, newest first' });
  const shop = select('site', [['', 'All shops']], '');
  const filter = h('div', { class: 'inline filters' }, field('Shop', shop));
  /** Shops of the filter's scope without a shop PC: said above the list, so that an empty list is not "no visitors". */
  const pcNote = h('div', { id: 'arrivals-no-pc' });
  replace(p.main, h('div', { class: 'page-head' }, h('h1', {}, 'Arrivals'), status), filter, error.el, pcNote, list);
  let shops: Shop[] = [];
  const manager = atLeast(p.user, 'manager');

  const rows = new Map<string, Row>();
  /** Camera labels by `<site_id>/<camera_id>` (GET /api/cameras): rows name a camera as its card does. */
  const labels = new Map<string, string>();
  const cameraName = (a: Arrival) => labels.get(`${a.site_id}/${a.camera_id}`) || a.camera_id;
  /** Visit ids seen, oldest first (a Set keeps insertion order). */
  const seen = new Set<string>();
  let current: AbortController | null = null;

  const ticker = window.setInterval(() => {
    for (const r of rows.values()) r.tick();
  }, 30_000);
  p.signal.addEventListener('abort', () => {
    clearInterval(ticker);
    current?.abort();
    for (const r of rows.values()) r.release();
    rows.clear();
  });

  const remember = (id: string): boolean => {
    if (seen.has(id)) return false;
    seen.add(id);
    if (seen.size > REMEMBERED) seen.delete(seen.values().next().value!);
    return true;
  };

  const add = (a: Arrival, signal: AbortSignal) => {
    if (!remember(a.visit_id)) return;
    const r = arrivalRow(a, cameraName(a), signal);
    rows.set(a.visit_id, r);
    // Newest on top by when the visit happened, not when it arrived (a shop PC's queue delivers late ones later).
    let after: Element | null = list.firstElementChild;
    const at = new Date(a.occurred_at).toISOString();
    while (after && (after.getAttribute('data-occurred') ?? '') > at) after = after.nextElementSibling;
    list.insertBefore(r.el, after);
    while (rows.size > SHOWN) {
      const oldest = list.lastElementChild as HTMLElement | null;
      const id = oldest?.getAttribute('data-visit');
      if (!oldest || !id) break;
      rows.get(id)?.release();
      rows.delete(id);
      oldest.remove();
    }
  };

  const start = async () => {
    current?.abort();
    const ac = new AbortController();
    current = ac;
    for (const r of rows.values()) r.release();
    rows.clear();
    seen.clear();
    replace(list);
    error.show('');
    showState(status, { kind: 'connecting' });
    const scope = shop.value ? shops.filter((s) => s.slug === shop.value) : shops;
    replace(pcNote, noPcNotice(scope, manager, 'so no arrivals come from there'));
    const site = shop.value ? `&site=${encodeURIComponent(shop.value)}` : '';
    let feed: Feed;
    try {
      feed = await api<Feed>('GET', `/api/visits?limit=${SHOWN}${site}`, { signal: ac.signal });
    } catch (err) {
      if (ac.signal.aborted) return;
      error.show(errorText(err));
      showState(status, { kind: 'stopped', why: 'Not connected.' });
      return;
    }
    if (ac.signal.aborted) return;
    for (const a of feed.arrivals) add(a, ac.signal); // ascending: the newest ends on top
    if (feed.arrivals.length === 0) {
      const none = scope.length > 0 && scope.every(withoutPc);
      list.append(h('li', { class: 'muted empty-row' }, none ? 'No arrivals: no shop PC is installed yet (see above). They appear here once one is and its cameras see people.' : 'No arrivals yet. New ones appear here as the cameras see people.'));
    }
    follow({
      url: (lastId) => `/api/visits/stream?cursor=${encodeURIComponent(lastId)}${site}`,
      lastId: feed.cursor,
      signal: ac.signal,
      onState: (s) => showState(status, s),
      onEvent: (e) => {
        if (e.event !== 'arrival') return;
        let a: Arrival;
        try {
          a = JSON.parse(e.data) as Arrival;
        } catch {
          return;
        }
        list.querySelector('.empty-row')?.remove();
        add(a, ac.signal);
      },
    });
  };

  shop.addEventListener('change', () => void start());

  void (async () => {
    try {
      let cameras: Camera[];
      [shops, cameras] = await Promise.all([api<Shop[]>('GET', '/api/sites', { signal: p.signal }), api<Camera[]>('GET', '/api/cameras', { signal: p.signal }).catch(() => [] as Camera[])]);
      for (const s of shops) shop.append(h('option', { value: s.slug }, s.name));
      for (const c of cameras) if (c.label) labels.set(`${c.site_id}/${c.camera_id}`, c.label);
    } catch (err) {
      if (!p.signal.aborted) error.show(errorText(err));
    }
    if (!p.signal.aborted) await start();
  })();
}

function showState(el: HTMLElement, s: StreamState): void {
  el.className = `stream-state small ${s.kind}`;
  el.textContent =
    s.kind === 'open' ? 'Live: new arrivals appear at the top.' : s.kind === 'connecting' ? 'Connecting…' : s.kind === 'waiting' ? `${s.why} Reconnecting in ${Math.max(1, Math.round(s.ms / 1000))} s…` : s.why;
}

interface Row {
  el: HTMLElement;
  tick(): void;
  release(): void;
}

function arrivalRow(a: Arrival, camera: string, signal: AbortSignal): Row {
  const time = h('time', { datetime: a.occurred_at, title: when(a.occurred_at) }, ago(a.occurred_at));
  const who = a.visitor_ref
    ? h('span', {}, h('a', { href: `#/customers/${encodeURIComponent(a.visitor_ref)}` }, a.visitor_ref), a.label && a.label !== `Visitor ${a.visitor_ref.slice(2)}` ? ` ${a.label}` : '')
    : h('span', { class: 'muted' }, 'Not identified');
  // The reports' meaning (docs/visits-and-customers.md): returning when seen on a visit before this visit's day.
  const kind = a.visitor_ref
    ? a.returning
      ? h('span', { class: 'badge good', title: 'Seen on a visit before today' }, 'Returning')
      : h('span', { class: 'badge warn', title: a.is_new_visitor ? 'First visit ever' : 'First seen today' }, 'New customer')
    : null;
  const attrs = attributesText(a.attributes);
  const el = h(
    'li',
    { class: 'arrival', 'data-visit': a.visit_id, 'data-occurred': new Date(a.occurred_at).toISOString() },
    h(
      'div',
      { class: 'arrival-main' },
      h('div', {}, who, ' ', kind),
      h('div', { class: 'small' }, a.site, ' · ', h('span', { class: 'camera', title: `camera ${a.camera_id}` }, camera), ' · ', time),
      attrs ? h('div', { class: 'small muted attributes' }, attrs) : null,
    ),
  );

  let url = '';
  let released = false;
  const img = a.image.available && a.image.url?.startsWith('/') ? h('img', { class: 'face', alt: `Photo of ${a.visitor_ref ?? 'the visitor'}`, width: 64, height: 64 }) : null;
  if (img) {
    el.prepend(img);
    void (async () => {
      try {
        const got = await imageUrl(a.image.url!, signal);
        if (released) return URL.revokeObjectURL(got);
        url = got;
        img.src = url;
      } catch {
        img.replaceWith(h('span', { class: 'face none', title: 'The photo could not be loaded.' }));
      }
    })();
  }
  return {
    el,
    tick: () => (time.textContent = ago(a.occurred_at)),
    release: () => {
      released = true;
      if (url) URL.revokeObjectURL(url);
      url = '';
    },
  };
}
