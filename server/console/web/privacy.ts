import { api, errorText } from './api.js';
import { cardForm, field, h, notice, replace, select, stacked, when } from './dom.js';
import type { Page } from './main.js';

/**
 * Privacy (`#/privacy`, owners; linked from the Team page): the company's privacy settings (GET/PATCH
 * /api/company/privacy) and the audit trail (GET /api/audit), filtered by who, what, which customer and when, newest
 * first, with "Older" following the cursor. docs/privacy.md says what each setting does.
 */
interface Settings {
  recognition: 'all' | 'consented' | 'off';
  template_retention_days: number;
  visit_retention_days: number | null;
  updated_at: string | null;
  updated_by: string | null;
  sweep_pending: boolean;
  swept_at: string | null;
}

interface AuditEntry {
  id: number;
  at: string;
  action: string;
  actor_id: string | null;
  actor_email: string | null;
  target: string | null;
  detail: Record<string, unknown>;
}

const MODES: [Settings['recognition'], string][] = [
  ['all', 'Recognise every returning visitor'],
  ['consented', 'Recognise only customers who agreed (others are forgotten after their visit)'],
  ['off', 'Count only: shop PCs send no face data'],
];

export function renderPrivacy(p: Page): void {
  const msg = notice();
  const settingsBox = h('div', { id: 'privacy-settings' });
  const trail = h('div', { class: 'table-wrap', id: 'audit-trail' });
  const more = h('button', { type: 'button', id: 'audit-older', hidden: true }, 'Older');
  replace(p.main, h('h1', {}, 'Privacy'), msg.el, settingsBox, h('h2', {}, 'Audit trail'), filters(), trail, h('div', { class: 'actions' }, more));
  let cursor: string | null = null;
  let query = '';
  let rows: AuditEntry[] = [];

  void (async () => {
    try {
      showSettings(await api<Settings>('GET', '/api/company/privacy', { signal: p.signal }));
      await loadTrail(false);
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  })();

  function showSettings(s: Settings): void {
    const mode = select('recognition', MODES, s.recognition);
    const days = h('input', { type: 'number', name: 'template_retention_days', min: '1', max: '3650', step: '1', required: true, value: String(s.template_retention_days) });
    const visitDays = h('input', { type: 'number', name: 'visit_retention_days', min: '1', max: '3650', step: '1', placeholder: 'keep', value: s.visit_retention_days === null ? '' : String(s.visit_retention_days) });
    const status = s.sweep_pending ? 'Being applied to existing data now.' : s.swept_at ? `Applied to existing data ${when(s.swept_at)}.` : '';
    replace(
      settingsBox,
      cardForm({
        id: 'privacy-form',
        title: 'Face recognition and retention',
        intro: `${s.updated_by ? `Last changed by ${s.updated_by} ${when(s.updated_at)}. ` : ''}${status} Visits and door crossings are always counted.`,
        fields: [
          field('Recognition', mode, 'Consent is recorded on each customer’s profile.'),
          field('Forget customers without consent after (days unseen)', days, 'Their face template and photos are deleted; their visits stay in the counts.'),
          field('Keep visits and door crossings for (days)', visitDays, 'Empty: kept. Older days become counts per shop and quarter hour; reports keep their totals, but a customer’s visit list goes.'),
        ],
        submitLabel: 'Save privacy settings',
        submit: async () => {
          const saved = await api<Settings>('PATCH', '/api/company/privacy', {
            body: { recognition: mode.value, template_retention_days: Number(days.value), visit_retention_days: visitDays.value.trim() === '' ? null : Number(visitDays.value) },
          });
          showSettings(saved);
          settingsBox.querySelector('form')?.append(h('p', { class: 'notice ok', role: 'status', id: 'privacy-saved' }, 'Saved. Shop PCs pick up the change within seconds.'));
          await loadTrail(false);
        },
      }),
    );
  }

  function filters(): HTMLElement {
    const actor = h('input', { type: 'text', name: 'actor', placeholder: 'email or member id' });
    const action = h('input', { type: 'text', name: 'action', placeholder: 'e.g. customer. or auth.sign_in' });
    const customer = h('input', { type: 'text', name: 'customer', placeholder: 'V-12' });
    const from = h('input', { type: 'date', name: 'from' });
    const to = h('input', { type: 'date', name: 'to' });
    const form = h(
      'form',
      { class: 'card form', id: 'audit-filters' },
      h('div', { class: 'inline' }, field('Who', actor), field('What', action), field('Customer', customer), field('From', from), field('To', to)),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Show')),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      if (actor.value.trim()) q.set('actor', actor.value.trim());
      if (action.value.trim()) q.set('action', action.value.trim());
      if (customer.value.trim()) q.set('customer', customer.value.trim());
      if (from.value) q.set('from', from.value);
      if (to.value) q.set('to', `${to.value}T23:59:59.999Z`);
      query = q.toString();
      void loadTrail(false);
    });
    return form;
  }

  more.addEventListener('click', () => void loadTrail(true));

  async function loadTrail(older: boolean): Promise<void> {
    msg.show('');
    const q = new URLSearchParams(query);
    q.set('limit', '50');
    if (older && cursor) q.set('cursor', cursor);
    try {
      const page = await api<{ entries: AuditEntry[]; cursor: string | null }>('GET', `/api/audit?${q.toString()}`, { signal: p.signal });
      rows = older ? [...rows, ...page.entries] : page.entries;
      cursor = page.cursor;
      more.hidden = cursor === null;
      replace(trail, rows.length === 0 ? h('p', { class: 'muted' }, 'Nothing matches.') : table(rows));
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  }
}

function table(rows: AuditEntry[]): HTMLElement {
  return stacked(
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, h('th', {}, 'When'), h('th', {}, 'Who'), h('th', {}, 'What'), h('th', { class: 'optional' }, 'Details'))),
      h('tbody', {}, ...rows.map((r) => h('tr', { 'data-audit': r.action }, h('td', {}, when(r.at)), h('td', {}, r.actor_email ?? 'Footfall'), h('td', {}, r.action), h('td', { class: 'optional small' }, detailText(r))))),
    ),
  );
}

function detailText(r: AuditEntry): string {
  const d = r.detail;
  const parts = Object.entries(d)
    .filter(([, v]) => v !== null && typeof v !== 'object')
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${String(v)}`);
  return parts.join(', ');
}
