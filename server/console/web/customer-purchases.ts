import { api, errorText } from './api.js';
import { cardForm, field, h, plural, replace, select, stacked } from './dom.js';
import type { Page } from './main.js';
import { formatIn } from './zones.js';
import { type Conversion, type Customer, type HistoryRow, type Purchase, type Shop } from './types.js';

/** A customer's purchases on the customer page: the form that records one, and the table of the latest. */

/** A currency guessed from a shop's time zone, for a few common zones (used only when nothing better is known). */
const ZONE_CURRENCY: Record<string, string> = {
  'Asia/Kolkata': 'INR', 'Asia/Calcutta': 'INR', 'Asia/Dubai': 'AED', 'Asia/Singapore': 'SGD', 'Asia/Tokyo': 'JPY', 'Asia/Kuwait': 'KWD',
  'Asia/Colombo': 'LKR', 'Asia/Dhaka': 'BDT', 'Asia/Kathmandu': 'NPR', 'Europe/London': 'GBP', 'Europe/Paris': 'EUR', 'Europe/Berlin': 'EUR',
  'Europe/Madrid': 'EUR', 'Europe/Rome': 'EUR', 'Europe/Amsterdam': 'EUR', 'America/New_York': 'USD', 'America/Chicago': 'USD',
  'America/Denver': 'USD', 'America/Los_Angeles': 'USD', 'Australia/Sydney': 'AUD', 'UTC': 'USD',
};
const CURRENCY_KEY = 'footfall.currency';
const SHOP_KEY = 'footfall.purchase-shop';

function remembered(key: string): string {
  try {
    return localStorage.getItem(key) ?? '';
  } catch {
    return '';
  }
}

function remember(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage full or refused: only a default is lost
  }
}

/** Decimals of a currency (INR 2, JPY 0, KWD 3), as Intl knows them. */
function decimalsOf(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

/** A v4 uuid from getRandomValues (crypto.randomUUID needs a secure context; head office may be plain HTTP on a LAN). */
function uuid(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const x = Array.from(b, (n) => n.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/**
 * Staff and above: record a purchase (POST /api/purchases). The shop defaults to where the customer was last seen,
 * else the one last used in this browser; the currency to the one last used in this browser, else the company's
 * main currency in the last twelve months (the conversion report's), else a guess from the shop's time zone. Each
 * filled-in purchase carries a `purchase_id` made here, so pressing Record again after a lost answer cannot record it
 * twice; a new one is made once it is recorded.
 */
/** The purchase form's line under its title: who the sale is to and whether conversion counts it (staff: no). */
export function purchaseIntro(c: Customer): string {
  const who = c.full_name ? `${c.full_name} (${c.ref})` : c.ref;
  return c.staff ? `A sale to ${who}. They are marked as staff: the conversion report leaves their purchases out.` : `A sale to ${who}; the conversion report counts it.`;
}

export function purchaseForm(c: Customer, history: HistoryRow[], p: Page, recorded: (r: Purchase) => void | Promise<void>): HTMLElement {
  const shop = h('select', { name: 'site_id', required: true }, h('option', { value: '' }, 'Loading shops…'));
  const amount = h('input', { name: 'amount', type: 'number', inputmode: 'decimal', min: '0', step: '0.01', required: true, autocomplete: 'off' });
  const codes = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('currency') : ['INR', 'USD', 'EUR', 'GBP'];
  const currency = select('currency', [['', 'Choose…'], ...codes.map((k): [string, string] => [k, k])]);
  currency.required = true;
  const items = h('textarea', { name: 'items', rows: 3 });
  const notes = h('textarea', { name: 'notes', rows: 2, maxlength: 2000 });
  const setStep = () => {
    const d = decimalsOf(currency.value || 'INR');
    amount.step = d === 0 ? '1' : (1 / 10 ** d).toFixed(d);
  };
  currency.addEventListener('change', setStep);
  let purchaseId = uuid();
  for (const el of [shop, amount, currency, items, notes]) el.addEventListener('input', () => (purchaseId = uuid()));

  const form = cardForm({
    id: 'purchase-form',
    title: 'Record a purchase',
    intro: purchaseIntro(c),
    fields: [
      h('div', { class: 'inline' }, field('Shop', shop), field('Amount', amount), field('Currency', currency)),
      field('Items', items, 'One per line; optional.'),
      field('Notes', notes, 'Optional.'),
    ],
    submitLabel: 'Record purchase',
    submit: async ({ out }) => {
      const list = items.value.split('\n').map((s) => s.trim()).filter((s) => s !== '');
      const body = { purchase_id: purchaseId, visitor_id: c.id, site_id: shop.value, amount: Number(amount.value), currency: currency.value, items: list, notes: notes.value.trim(), source: 'console' };
      const r = await api<Purchase>('POST', '/api/purchases', { body, signal: p.signal });
      remember(CURRENCY_KEY, r.currency);
      remember(SHOP_KEY, r.site_slug);
      if (r.id === purchaseId) await recorded(r); // a retry answered with the stored sale is in the list already
      purchaseId = uuid();
      amount.value = '';
      items.value = '';
      notes.value = '';
      replace(
        out,
        h(
          'p',
          { class: 'notice ok', role: 'status', id: 'purchase-recorded' },
          `Recorded ${money(r.amount, r.currency)} at ${r.site} for ${r.visitor_ref}${r.items.length ? ` (${plural(r.items.length, 'item')})` : ''}. `,
          h('a', { href: '#/reports' }, 'See conversion in Reports'),
        ),
      );
    },
  });

  void (async () => {
    try {
      const shops = await api<Shop[]>('GET', '/api/sites', { signal: p.signal });
      if (p.signal.aborted) return;
      replace(shop, ...(shops.length === 0 ? [h('option', { value: '' }, 'No shops yet')] : []), ...shops.map((s) => h('option', { value: s.slug }, s.name)));
      const lastSeenAt = history[0]?.site_slug;
      const pick = [lastSeenAt, remembered(SHOP_KEY)].find((slug) => slug && shops.some((s) => s.slug === slug));
      if (pick) shop.value = pick;
      let code = remembered(CURRENCY_KEY);
      if (!code) {
        const conv = await api<Conversion>('GET', '/api/reports/conversion?bucket=month', { signal: p.signal }).catch(() => null);
        code = conv?.currency || ZONE_CURRENCY[shops.find((s) => s.slug === shop.value)?.timezone ?? ''] || '';
      }
      if (p.signal.aborted) return;
      if (codes.includes(code)) currency.value = code;
      setStep();
    } catch (err) {
      if (!p.signal.aborted) replace(shop, h('option', { value: '' }, errorText(err)));
    }
  })();
  return form;
}

/** The latest purchases shown on a customer's page (GET /api/visitors/{id}/purchases, newest first). */
export const PURCHASES_SHOWN = 50;

export function purchasesTable(rows: Purchase[], zone: string): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted', id: 'no-purchases' }, 'No purchases recorded.');
  return h(
    'div',
    { class: 'table-wrap' },
    stacked(h(
      'table',
      { id: 'purchases' },
      h('thead', {}, h('tr', {}, ...['When', 'Shop', 'Amount', 'Items', 'Recorded by'].map((t) => h('th', { scope: 'col' }, t)))),
      h(
        'tbody',
        {},
        ...rows.map((r) =>
          h(
            'tr',
            { 'data-purchase': r.id },
            h('td', {}, h('time', { datetime: r.created_at }, formatIn(r.created_at, zone))),
            h('td', {}, r.site || '(removed shop)'),
            h('td', {}, money(r.amount, r.currency)),
            h('td', {}, r.items.join(', ') || '—', r.notes ? h('span', { class: 'muted small' }, ` · ${r.notes}`) : null),
            h('td', { class: 'muted' }, r.created_by || '—'),
          ),
        ),
      ),
    )),
  );
}

