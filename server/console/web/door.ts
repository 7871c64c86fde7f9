import { api } from './api.js';
import { h, plural } from './dom.js';
import type { Shop } from './types.js';

/**
 * Body counting on the overview (docs/console.md "Entries, exits and people in the shop"): each shop's `occupancy`
 * (people in the shop now: entries minus exits since the shop's local midnight) and today's entries and exits from
 * GET /api/sites, read again every few seconds while the page is visible (LIVE_MS) and not at all while it is hidden.
 */

/** How often the overview reads the shops' occupancy while the page is visible. */
export const LIVE_MS = 5000;

/**
 * The shop card's door block: people in the shop now and today's entries and exits; for a shop without a counting
 * line a hint to draw one (not a 0 that looks like an empty shop); nothing from a head office without body counting.
 */
export function doorFacts(s: Shop, manager: boolean): HTMLElement | null {
  if (s.occupancy === undefined) return null;
  if (s.occupancy === null) {
    return h(
      'div',
      { class: 'door none', 'data-door': s.slug },
      h('p', { class: 'small muted' }, ...(manager ? [h('a', { href: `#/shop/${encodeURIComponent(s.slug)}` }, 'Draw a counting line to count entries')] : ['A manager can draw a counting line to count entries']), ' (on a camera at the door: people in the shop now, entries and exits).'),
    );
  }
  const entries = s.entries_today ?? 0;
  const exits = s.exits_today ?? 0;
  // An offline shop PC reports no crossings: the count is what it was when the PC went away, not the shop now.
  if (s.last_heartbeat_at && !s.online) {
    return h(
      'div',
      { class: 'door offline', 'data-door': s.slug },
      h('p', { class: 'occupancy' }, h('span', { class: 'dot unknown' }, 'In the shop now: not known while the shop PC is offline')),
      h('p', { class: 'small muted door-today' }, `Counted today before it went offline: ${plural(entries, 'entry', 'entries')}, ${plural(exits, 'exit')}`),
    );
  }
  return h(
    'div',
    { class: 'door', 'data-door': s.slug, 'data-occupancy': s.occupancy },
    h('p', { class: 'occupancy' }, h('strong', { class: 'occupancy-number' }, s.occupancy.toLocaleString()), ' ', h('span', {}, 'in the shop now')),
    h('p', { class: 'small muted door-today' }, `Today: ${plural(entries, 'entry', 'entries')}, ${plural(exits, 'exit')}`),
    s.door_counting_problem
      ? h('p', { class: 'notice warn small door-problem', role: 'status' }, `Entries and exits are not being counted now. The shop PC says: ${s.door_counting_problem}.`)
      : null,
  );
}

/**
 * Reads GET /api/sites every LIVE_MS while the page is visible and some shop counts entries (`wanted`), and hands the
 * rows to `update`; stops while the page is hidden (reads once on coming back) and for good when `signal` aborts (the
 * page was left).
 */
export function liveShops(signal: AbortSignal, wanted: () => boolean, update: (shops: Shop[]) => void): void {
  let timer = 0;
  let running = false;
  const tick = async () => {
    clearTimeout(timer);
    if (signal.aborted || document.visibilityState !== 'visible' || running) return;
    running = true;
    try {
      if (!wanted()) return;
      const shops = await api<Shop[]>('GET', '/api/sites', { signal });
      if (!signal.aborted) update(shops);
    } catch {
      // The 30-s read of the page shows errors; this one just tries again.
    } finally {
      running = false;
    }
    if (!signal.aborted && document.visibilityState === 'visible') timer = window.setTimeout(() => void tick(), LIVE_MS);
  };
  document.addEventListener('visibilitychange', () => void tick(), { signal });
  signal.addEventListener('abort', () => clearTimeout(timer));
  timer = window.setTimeout(() => void tick(), LIVE_MS);
}
