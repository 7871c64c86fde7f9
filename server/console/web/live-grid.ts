import { api, errorText, imageUrl } from './api.js';
import { h, replace } from './dom.js';
import type { Page } from './main.js';
import { watchShopLive, type LiveView } from './live.js';
import { pcUnreachable } from './camera-card.js';
import { noPcNotice } from './no-pc.js';
import { atLeast } from './session.js';
import type { Camera, Shop } from './types.js';

/**
 * A shop's cameras live, side by side (`#/live/<slug>`), as an NVR shows them: one tile per switched-on camera,
 * all in one live stream (live.ts: each tile gives up with a reason when no picture comes for it). A tile or the whole grid can
 * go full screen. With the shop PC offline the page says so and shows the latest pictures instead; with none installed yet, it
 * says how to install one.
 */
export function renderLiveGrid(p: Page, slug: string): void {
  const back = h('p', { class: 'small' }, h('a', { href: `#/shop/${encodeURIComponent(slug)}` }, '← Back to the shop'));
  const grid = h('div', { class: 'live-grid', id: 'live-grid' });
  const note = h('p', { class: 'notice info', role: 'status', hidden: true });
  const whole = h('button', { type: 'button', id: 'grid-full' }, 'Full screen');
  whole.addEventListener('click', () => void grid.requestFullscreen?.().catch(() => undefined));
  replace(p.main, back, h('h1', {}, 'Live'), h('p', { class: 'loading' }, 'Loading…'));
  const urls: string[] = [];
  p.signal.addEventListener('abort', () => urls.forEach((u) => URL.revokeObjectURL(u)));

  void (async () => {
    let shop: Shop | undefined;
    let cameras: Camera[];
    try {
      const [shops, all] = await Promise.all([api<Shop[]>('GET', '/api/sites', { signal: p.signal }), api<Camera[]>('GET', '/api/cameras', { signal: p.signal })]);
      shop = shops.find((s) => s.slug === slug);
      cameras = shop ? all.filter((c) => c.site_id === shop!.site_id && c.enabled) : [];
    } catch (err) {
      if (!p.signal.aborted) replace(p.main, back, h('h1', {}, 'Live'), h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
      return;
    }
    if (p.signal.aborted) return;
    if (!shop) return replace(p.main, back, h('div', { class: 'card empty' }, h('h1', {}, 'No such shop'), h('p', {}, `Your company has no shop "${slug}".`)));
    // Never installed: no live view and no picture to show; the way to install one (the form is on the shop's page).
    const noPc = noPcNotice([shop], atLeast(p.user, 'manager'), 'so there is no live view and no picture');
    replace(p.main, back, h('div', { class: 'page-head' }, h('h1', {}, `${shop.name}: live`), h('div', { class: 'actions' }, whole)), noPc, note, grid);
    if (cameras.length === 0) return replace(grid, h('p', { class: 'muted', id: 'no-cameras' }, 'This shop has no switched-on cameras.'));
    grid.classList.toggle('many', cameras.length > 4);
    const why = pcUnreachable(shop, atLeast(p.user, 'manager'), false);
    if (why && !noPc) {
      note.textContent = `Live view is not possible now. ${why} The latest pictures are shown.`;
      note.hidden = false;
    }
    const views = new Map<string, LiveView>();
    for (const c of cameras) grid.append(tile(c, why === '', p.signal, (u) => urls.push(u), views));
    // One stream for the whole grid: one connection per tile would stall past five (six per host over HTTP/1.1).
    if (views.size > 0) watchShopLive(shop.site_id, p.signal, views);
  })();
}

function tile(c: Camera, online: boolean, signal: AbortSignal, keep: (url: string) => void, views: Map<string, LiveView>): HTMLElement {
  const name = c.label || c.camera_id;
  const img = h('img', { class: 'snapshot', alt: `Live view of ${name}` });
  const frame = h('div', { class: 'picture' }, h('div', { class: 'snapshot-empty' }, online ? 'Connecting to the shop PC…' : 'No picture'));
  const caption = h('p', { class: 'small muted live-caption' }, online ? 'Connecting…' : '');
  const full = h('button', { type: 'button', 'aria-label': `Full screen: ${name}` }, 'Full screen');
  full.addEventListener('click', () => void el.requestFullscreen?.().catch(() => undefined));
  const el = h('figure', { class: 'card live-tile', 'data-camera': c.camera_id }, h('figcaption', {}, h('strong', {}, name), ' ', full), frame, caption);
  if (online) {
    views.set(c.id, {
      frame(url) {
        img.src = url;
        if (!img.isConnected) replace(frame, img);
        caption.textContent = 'Live';
      },
      status(text) {
        caption.textContent = text;
      },
      ended(text) {
        replace(frame, h('div', { class: 'snapshot-empty' }, 'No live picture'));
        caption.textContent = text;
      },
    });
  } else if (c.snapshot.available && c.snapshot.url) {
    void imageUrl(c.snapshot.url, signal)
      .then((url) => {
        keep(url);
        img.src = url;
        img.alt = `Latest picture from ${name}`;
        replace(frame, img);
      })
      .catch(() => undefined);
  }
  return el;
}
