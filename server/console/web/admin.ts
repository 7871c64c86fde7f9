import { api, errorText } from './api.js';
import { cardForm, busy, field, h, notice, replace, when } from './dom.js';
import type { Page } from './main.js';
import type { Company } from './types.js';

/**
 * Platform administration (the platform admin only; the API answers 404 to anyone else): the companies, creating a
 * company with its owner (the owner's password is shown once), suspending and reactivating.
 */
export function renderAdmin(p: Page): void {
  const msg = notice();
  const list = h('div', { class: 'table-wrap', id: 'companies' });
  replace(p.main, h('h1', {}, 'Companies'), msg.el, list, createForm(() => void load()));

  async function load(): Promise<void> {
    try {
      const companies = await api<Company[]>('GET', '/api/admin/clients', { signal: p.signal });
      if (companies.length === 0) return replace(list, h('p', { class: 'muted' }, 'No companies yet. Create the first one below.'));
      replace(
        list,
        h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Company'), h('th', {}, 'Short name'), h('th', {}, 'Shops'), h('th', {}, 'People'), h('th', { class: 'optional' }, 'Created'), h('th', {}, 'Status'), h('th', {}, h('span', { class: 'visually-hidden' }, 'Actions')))),
          h('tbody', {}, ...companies.map(row)),
        ),
      );
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  }

  function row(c: Company): HTMLElement {
    const active = c.active !== false;
    const toggle = h('button', { type: 'button', class: active ? 'danger' : '' }, active ? 'Suspend' : 'Reactivate');
    toggle.setAttribute('aria-label', `${active ? 'Suspend' : 'Reactivate'} ${c.name}`);
    toggle.addEventListener('click', () => {
      if (active && !window.confirm(`Suspend ${c.name}? Everyone in it is signed out at once, nobody can sign in, and visits from its shops are dropped until it is reactivated.`)) return;
      void busy(toggle, async () => {
        msg.show('');
        try {
          const r = await api<{ client: Company; sessions_revoked: number }>('PATCH', `/api/admin/clients/${encodeURIComponent(c.id)}`, { body: { active: !active } });
          msg.show(active ? `${c.name} is suspended; ${r.sessions_revoked} session(s) signed out.` : `${c.name} is active again. Its people sign in again.`, 'ok');
        } catch (err) {
          msg.show(errorText(err));
        }
        await load();
      });
    });
    return h(
      'tr',
      { 'data-company': c.slug, class: active ? '' : 'inactive' },
      h('td', {}, c.name),
      h('td', {}, c.slug),
      h('td', {}, c.sites),
      h('td', {}, c.users),
      h('td', { class: 'optional' }, when(c.created_at)),
      h('td', {}, h('span', { class: `badge ${active ? 'good' : 'bad'}` }, active ? 'active' : 'suspended')),
      h('td', {}, toggle),
    );
  }

  void load();
}

/** POST /api/admin/clients: the company and its owner in one go; the generated password is shown once. */
function createForm(done: () => void): HTMLElement {
  const name = h('input', { name: 'company_name', required: true, maxlength: 200, autocomplete: 'off' });
  const slug = h('input', { name: 'slug', autocomplete: 'off', placeholder: 'derived from the name' });
  const email = h('input', { type: 'email', name: 'owner_email', required: true, autocomplete: 'off' });
  const owner = h('input', { name: 'owner_name', required: true, maxlength: 200, autocomplete: 'off' });
  return cardForm({
    id: 'create-company',
    title: 'Create a company',
    fields: [
      h('div', { class: 'inline' }, field('Company name', name), field('Short name (slug)', slug, 'Optional; cannot be changed later.')),
      h('div', { class: 'inline' }, field('Owner’s email', email), field('Owner’s name', owner)),
    ],
    submitLabel: 'Create company',
    submit: async ({ form, out }) => {
      const body: Record<string, string> = { company_name: name.value.trim(), owner_email: email.value.trim(), owner_name: owner.value.trim() };
      if (slug.value.trim()) body.slug = slug.value.trim();
      const r = await api<{ client_id: string; slug: string; owner_email: string; password: string }>('POST', '/api/admin/clients', { body });
      replace(
        out,
        h('p', { class: 'notice ok' }, `Created ${body.company_name} (${r.slug}). Give the owner this password; it is shown only now and cannot be recovered.`),
        h('p', {}, 'Owner: ', h('strong', {}, r.owner_email)),
        h('code', { class: 'secret', id: 'owner-password' }, r.password),
      );
      form.querySelectorAll('input').forEach((i) => (i.value = ''));
      done();
    },
  });
}
