import { ApiError, api, errorText, imageUrl } from './api.js';
import { cardForm, field, h, replace, select, stacked, timeAgo } from './dom.js';
import type { Page } from './main.js';
import { money } from './customer-purchases.js';
import { renderCustomer } from './customer-page.js';
import type { Customer, ImageRef } from './types.js';

/**
 * Customers: search (GET /api/visitors?q=) or the most recently seen; one customer's visits
 * (GET /api/visitors/{id}/history) at `#/customers/<ref>`; managers erase a customer (DELETE /api/visitors/{id})
 * after a confirmation step in the page.
 */
export function renderCustomers(p: Page, ref: string): void {
  if (ref) renderCustomer(p, ref);
  else renderList(p);
}

function renderList(p: Page): void {
  const results = h('section', { id: 'customers', 'aria-live': 'polite' });
  const q = h('input', { name: 'q', type: 'search', autocomplete: 'off' });
  const show = select('show', LIST_VIEWS.map((v): [string, string] => [v.value, v.label]), 'recent');
  show.addEventListener('change', () => form.requestSubmit());
  const form = cardForm({
    id: 'customer-search',
    title: 'Find a customer',
    fields: [h('div', { class: 'inline' }, field('Search', q, 'Name, phone, email or customer number (V-12).'), field('Show', show, 'Without a search: the order or the filter of the list.'))],
    submitLabel: 'Search',
    submit: async ({ msg }) => {
      try {
        await load(q.value.trim());
      } catch (err) {
        replace(results);
        if (!p.signal.aborted) msg.show(errorText(err));
      }
    },
  });
  const staffList = h('section', { id: 'staff-list', 'aria-live': 'polite' });
  replace(p.main, h('h1', {}, 'Customers'), form, results, staffList);

  let thumbs: string[] = [];
  p.signal.addEventListener('abort', () => thumbs.forEach((u) => URL.revokeObjectURL(u)));
  async function load(text: string): Promise<void> {
    const view = LIST_VIEWS.find((v) => v.value === show.value) ?? LIST_VIEWS[0]!;
    // Without a search: customers only (staff are listed apart, below); a search finds staff too (badged).
    const list = await api<Customer[]>('GET', `/api/visitors?limit=50${text ? `&q=${encodeURIComponent(text)}` : `${view.query}&staff=false`}`, { signal: p.signal });
    if (p.signal.aborted) return;
    const title = text ? `Customers matching “${text}”` : view.title;
    thumbs.forEach((u) => URL.revokeObjectURL(u));
    thumbs = [];
    if (list.length === 0) return replace(results, h('h2', {}, title), h('p', { class: 'muted' }, text ? 'Nobody matches.' : 'No customers yet: they appear once the cameras recognise people.'));
    replace(
      results,
      h('h2', {}, title),
      h(
        'div',
        { class: 'table-wrap' },
        stacked(h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Photo')), ...['Customer', 'Name', 'Visits', 'Spend', 'First seen', 'Last seen', 'Consent'].map((t) => h('th', { scope: 'col' }, t)))),
          h(
            'tbody',
            {},
            ...list.map((c) =>
              h(
                'tr',
                { 'data-customer': c.ref },
                h('td', { class: 'thumb' }, thumbnail(c, p.signal, (u) => thumbs.push(u))),
                h('td', {}, h('a', { href: `#/customers/${encodeURIComponent(c.ref)}` }, c.ref)),
                h('td', {}, c.full_name || c.label, c.staff ? ' ' : null, c.staff ? h('span', { class: 'badge unknown' }, 'Staff') : null),
                h('td', {}, c.visit_count),
                h('td', {}, c.spend_currency ? money(c.spend, c.spend_currency) : '—'),
                h('td', {}, timeAgo(c.first_seen_at)),
                h('td', {}, timeAgo(c.last_seen_at)),
                h('td', {}, c.has_consent ? 'given' : '—'),
              ),
            ),
          ),
        )),
      ),
    );
  }
  load('').catch((err: unknown) => {
    if (!p.signal.aborted) replace(results, h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
  });
  api<Customer[]>('GET', '/api/visitors?limit=500&staff=true', { signal: p.signal })
    .then((list) => {
      if (p.signal.aborted || list.length === 0) return;
      replace(
        staffList,
        h('h2', {}, `Staff (${list.length})`),
        h('p', { class: 'muted small' }, 'People marked as staff make no arrivals and are left out of footfall and conversion.'),
        h('ul', {}, ...list.map((c) => h('li', { 'data-staff': c.ref }, h('a', { href: `#/customers/${encodeURIComponent(c.ref)}` }, c.ref), ' ', c.full_name || c.label, h('span', { class: 'muted small' }, ' · last seen ', timeAgo(c.last_seen_at))))),
      );
    })
    .catch((err: unknown) => {
      if (!p.signal.aborted) replace(staffList, h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
    });
}

const LIST_VIEWS = [
  { value: 'recent', label: 'Most recently seen', title: 'Most recently seen', query: '' },
  { value: 'visits', label: 'Most visits', title: 'Most visits', query: '&sort=visits' },
  { value: 'spend', label: 'Top spend', title: 'Top spend (lifetime)', query: '&sort=spend' },
  { value: 'lapsed', label: 'Lapsed: not seen for 30+ days', title: 'Not seen for 30 days or more', query: '&lapsed_days=30&sort=visits' },
];

/**
 * A list row's photo (48 px), when head office keeps photos and the person may see them: fetched after the row is
 * shown; nothing when there is none (images off, no photo, not allowed).
 */
function thumbnail(c: Customer, signal: AbortSignal, keep: (url: string) => void): HTMLElement {
  const box = h('span', { class: 'thumb-box' });
  void (async () => {
    if (photosOff) return;
    try {
      const ref = await api<ImageRef>('GET', `/api/visitors/${encodeURIComponent(c.id)}/image`, { signal });
      if (!ref.available || !ref.url?.startsWith('/')) return;
      const url = await imageUrl(ref.url, signal);
      keep(url);
      box.append(h('img', { class: 'face thumb', src: url, alt: `Photo of ${c.ref}`, width: 48, height: 48 }));
    } catch (err) {
      if (err instanceof ApiError && (err.code === 'images_disabled' || err.status === 403)) photosOff = true;
    }
  })();
  return box;
}
let photosOff = false;

