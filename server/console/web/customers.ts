import { api, errorText, imageUrl } from './api.js';
import { facts, busy, cardForm, field, h, notice, plural, replace, timeAgo, when } from './dom.js';
import type { Page } from './main.js';
import { atLeast } from './session.js';
import { attributesText, type Customer, type Erasure, type HistoryRow, type ImageRef } from './types.js';

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
  const form = cardForm({
    id: 'customer-search',
    title: 'Find a customer',
    fields: [field('Search', q, 'Name, phone, email or customer number (V-12).')],
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
  replace(p.main, h('h1', {}, 'Customers'), form, results);

  async function load(text: string): Promise<void> {
    const list = await api<Customer[]>('GET', `/api/visitors?limit=50${text ? `&q=${encodeURIComponent(text)}` : ''}`, { signal: p.signal });
    if (p.signal.aborted) return;
    const title = text ? `Customers matching “${text}”` : 'Most recently seen';
    if (list.length === 0) return replace(results, h('h2', {}, title), h('p', { class: 'muted' }, text ? 'Nobody matches.' : 'No customers yet: they appear once the cameras recognise people.'));
    replace(
      results,
      h('h2', {}, title),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ...['Customer', 'Name', 'Visits', 'First seen', 'Last seen', 'Consent'].map((t) => h('th', { scope: 'col' }, t)))),
          h(
            'tbody',
            {},
            ...list.map((c) =>
              h(
                'tr',
                { 'data-customer': c.ref },
                h('td', {}, h('a', { href: `#/customers/${encodeURIComponent(c.ref)}` }, c.ref)),
                h('td', {}, c.full_name || c.label),
                h('td', {}, c.visit_count),
                h('td', {}, timeAgo(c.first_seen_at)),
                h('td', {}, timeAgo(c.last_seen_at)),
                h('td', {}, c.has_consent ? 'given' : '—'),
              ),
            ),
          ),
        ),
      ),
    );
  }
  load('').catch((err: unknown) => {
    if (!p.signal.aborted) replace(results, h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
  });
}

function renderCustomer(p: Page, ref: string): void {
  const back = h('p', { class: 'small' }, h('a', { href: '#/customers' }, '← All customers'));
  replace(p.main, back, h('h1', {}, ref), h('p', { class: 'loading' }, 'Loading…'));
  let photoUrl = '';
  p.signal.addEventListener('abort', () => {
    if (photoUrl) URL.revokeObjectURL(photoUrl);
  });

  void (async () => {
    let customer: Customer | undefined;
    let history: HistoryRow[];
    try {
      // The spec has no read of one customer: a search by number puts the exact match first.
      const found = await api<Customer[]>('GET', `/api/visitors?limit=5&q=${encodeURIComponent(ref)}`, { signal: p.signal });
      customer = found.find((c) => c.ref.toLowerCase() === ref.toLowerCase() || c.id === ref);
      if (!customer) {
        replace(p.main, back, h('div', { class: 'card empty' }, h('h1', {}, 'No such customer'), h('p', {}, `Your company has no customer “${ref}”. An erased customer is gone for good.`)));
        return;
      }
      history = await api<HistoryRow[]>('GET', `/api/visitors/${encodeURIComponent(customer.id)}/history`, { signal: p.signal });
    } catch (err) {
      if (!p.signal.aborted) replace(p.main, back, h('h1', {}, ref), h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
      return;
    }
    if (p.signal.aborted) return;
    const c = customer;
    const photo = h('div', { class: 'customer-photo' });
    const rows: [string, string | HTMLElement][] = [
      ['Customer', c.ref],
      ['Visits', String(c.visit_count)],
      ['First seen', timeAgo(c.first_seen_at)],
      ['Last seen', timeAgo(c.last_seen_at)],
      ['Phone', c.phone || '—'],
      ['Email', c.email || '—'],
      ['Consent to be recognised', c.has_consent ? 'given' : 'not recorded'],
    ];
    replace(
      p.main,
      back,
      h('div', { class: 'page-head' }, h('h1', {}, c.full_name ? `${c.full_name} (${c.ref})` : c.label)),
      h('section', { class: 'card customer', id: 'customer' }, photo, facts(rows)),
      h('h2', {}, `Visits (${plural(history.length, 'visit')})`),
      historyTable(history),
      atLeast(p.user, 'manager') ? erasure(c, p) : null,
    );
    void showPhoto(c, photo, p.signal).then((url) => (photoUrl = url));
  })();
}

/** The customer's newest photo (GET /api/visitors/{id}/image, then the bytes with the token); nothing when none. */
async function showPhoto(c: Customer, box: HTMLElement, signal: AbortSignal): Promise<string> {
  try {
    const ref = await api<ImageRef>('GET', `/api/visitors/${encodeURIComponent(c.id)}/image`, { signal });
    if (!ref.available || !ref.url?.startsWith('/')) return '';
    const url = await imageUrl(ref.url, signal);
    if (signal.aborted) {
      URL.revokeObjectURL(url);
      return '';
    }
    box.append(h('img', { class: 'face', src: url, alt: `Photo of ${c.ref}`, width: 96, height: 96 }));
    return url;
  } catch {
    return ''; // no_image, images_disabled: a missing photo is data, not an error
  }
}

function historyTable(rows: HistoryRow[]): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No visits.');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { id: 'history' },
      h('thead', {}, h('tr', {}, ...['When', 'Shop', 'Camera', '', 'Attributes'].map((t) => h('th', { scope: 'col' }, t || h('span', { class: 'visually-hidden' }, 'First visit'))))),
      h(
        'tbody',
        {},
        ...rows.map((r) =>
          h(
            'tr',
            { 'data-visit': r.id },
            h('td', {}, h('time', { datetime: r.occurred_at }, when(r.occurred_at))),
            h('td', {}, r.site),
            h('td', {}, r.camera_id),
            h('td', {}, r.is_new_visitor ? h('span', { class: 'badge warn' }, 'First visit') : ''),
            h('td', { class: 'muted' }, attributesText(r.attributes)),
          ),
        ),
      ),
    ),
  );
}

/** Managers: erase the customer, after a confirmation step in the page (no window.confirm). */
function erasure(c: Customer, p: Page): HTMLElement {
  const msg = notice();
  const ask = h('button', { type: 'button', class: 'danger' }, 'Erase customer…');
  const confirm = h('button', { type: 'button', class: 'danger' }, `Erase ${c.ref}`);
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const step = h(
    'div',
    { class: 'confirm', id: 'erase-confirm', hidden: true, role: 'group', 'aria-label': `Confirm erasing ${c.ref}` },
    h('p', {}, h('strong', {}, `Erase ${c.ref} for good?`), ` Their face template and photos are destroyed and their profile cleared. Their ${plural(c.visit_count, 'visit')} stay in the counts but no longer name anyone, and the same face is not enrolled again for 180 days. This cannot be undone.`),
    h('div', { class: 'actions' }, confirm, cancel),
  );
  ask.addEventListener('click', () => {
    msg.show('');
    step.hidden = false;
    ask.hidden = true;
    confirm.focus();
  });
  cancel.addEventListener('click', () => {
    step.hidden = true;
    ask.hidden = false;
    ask.focus();
  });
  confirm.addEventListener('click', () => {
    cancel.disabled = true;
    void busy(confirm, async () => {
      try {
        const r = await api<Erasure>('DELETE', `/api/visitors/${encodeURIComponent(c.id)}`, { signal: p.signal });
        replace(
          p.main,
          h('p', { class: 'small' }, h('a', { href: '#/customers' }, '← All customers')),
          h('h1', {}, `${r.ref} erased`),
          h('p', { class: 'notice ok', role: 'status', id: 'erased' }, `${r.ref} is erased: ${plural(r.visits_unlinked, 'visit')} no longer linked, ${plural(r.images_deleted, 'photo')} deleted.`),
        );
      } catch (err) {
        if (p.signal.aborted) return;
        msg.show(errorText(err));
      } finally {
        cancel.disabled = false;
      }
    });
  });
  return h('section', { class: 'card danger-zone', id: 'erase' }, h('h2', {}, 'Erase this customer'), h('p', { class: 'small muted' }, 'For a customer who asks to be forgotten.'), msg.el, h('div', { class: 'actions' }, ask), step);
}
