import { api, errorText } from './api.js';
import { h, replace, timeAgo } from './dom.js';

interface Alert {
  id: string;
  kind: string;
  title: string;
  message: string;
  site: string;
  site_slug: string;
  raised_at: string;
  cleared_at: string | null;
  open: boolean;
}

/**
 * The header's bell (docs/operations.md, "Alerts"): the number of open alerts, read at once and every 30 s while the
 * header is on the page; a click opens the list of open alerts, each linking to its shop, and the last few cleared.
 */
export function alertBell(): HTMLElement {
  const count = h('span', { class: 'count', hidden: true });
  const bell = h('button', { type: 'button', class: 'bell', id: 'alert-bell', 'aria-label': 'Alerts', 'aria-expanded': 'false', title: 'Alerts' }, '🔔', count);
  const panel = h('div', { class: 'alerts-panel', id: 'alerts-panel', hidden: true });
  const wrap = h('div', { class: 'bell-wrap' }, bell, panel);
  let timer = 0;

  const refresh = async () => {
    clearTimeout(timer);
    if (!wrap.isConnected && timer !== 0) return;
    try {
      const r = await api<{ open_count: number }>('GET', '/api/alerts?state=open&limit=1');
      count.hidden = r.open_count === 0;
      count.textContent = String(r.open_count);
      bell.setAttribute('aria-label', r.open_count === 0 ? 'Alerts: none open' : `Alerts: ${r.open_count} open`);
    } catch {
      // the next poll tries again; the page's own errors say what is wrong
    }
    timer = window.setTimeout(() => void refresh(), 30_000);
  };

  const show = async () => {
    replace(panel, h('p', { class: 'muted' }, 'Loading alerts…'));
    try {
      const r = await api<{ alerts: Alert[] }>('GET', '/api/alerts?limit=20');
      const open = r.alerts.filter((a) => a.open);
      const cleared = r.alerts.filter((a) => !a.open).slice(0, 5);
      const item = (a: Alert) =>
        h('li', { 'data-alert': a.id, 'data-kind': a.kind }, h('strong', {}, a.title), ' · ', h('a', { href: `#/shop/${encodeURIComponent(a.site_slug)}` }, a.site), h('br'), h('span', { class: 'small' }, a.message), h('br'), h('span', { class: 'muted small' }, a.open ? 'raised ' : 'resolved ', timeAgo(a.open ? a.raised_at : a.cleared_at)));
      replace(
        panel,
        h('h2', {}, 'Alerts'),
        open.length ? h('ul', { class: 'plain', id: 'alerts-open' }, ...open.map(item)) : h('p', { class: 'muted', id: 'alerts-none' }, 'Nothing is wrong right now.'),
        cleared.length ? h('h3', {}, 'Recently resolved') : null,
        cleared.length ? h('ul', { class: 'plain' }, ...cleared.map(item)) : null,
      );
    } catch (err) {
      replace(panel, h('p', { class: 'notice error' }, errorText(err)));
    }
  };

  bell.addEventListener('click', () => {
    const opening = panel.hidden;
    panel.hidden = !opening;
    bell.setAttribute('aria-expanded', String(opening));
    if (opening) void show();
  });
  void refresh();
  return wrap;
}
