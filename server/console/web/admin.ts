import { api, ApiError, errorText } from './api.js';
import { cardForm, busy, confirmStep, field, h, notice, replace, select, stacked, timeAgo, when } from './dom.js';
import type { Page } from './main.js';
import type { Company } from './types.js';

/**
 * Platform administration (the platform admin only; the API answers 404 to anyone else): the companies, creating a
 * company with its owner (the owner's password is shown once), suspending and reactivating, resetting an owner's
 * password (shown once) and deleting a company (its slug typed as confirmation).
 */
export function renderAdmin(p: Page): void {
  const msg = notice();
  const list = h('div', { class: 'table-wrap', id: 'companies' });
  // The owner-password reset and the deletion open here, outside the table (which is re-rendered).
  const action = h('div', { id: 'company-action', 'aria-live': 'polite' });
  replace(p.main, h('h1', {}, 'Companies'), msg.el, action, list, createForm(() => void load()));

  async function load(): Promise<void> {
    try {
      const companies = await api<Company[]>('GET', '/api/admin/clients', { signal: p.signal });
      if (companies.length === 0) return replace(list, h('p', { class: 'muted' }, 'No companies yet. Create the first one below.'));
      replace(
        list,
        stacked(h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Company'), h('th', {}, 'Short name'), h('th', {}, 'Shops'), h('th', {}, 'Shop PCs online'), h('th', {}, 'Last activity'), h('th', {}, 'People'), h('th', { class: 'optional' }, 'Created'), h('th', {}, 'Status'), h('th', {}, h('span', { class: 'visually-hidden' }, 'Actions')))),
          h('tbody', {}, ...companies.map(row)),
        )),
      );
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  }

  function row(c: Company): HTMLElement {
    const active = c.active !== false;
    const toggle = h('button', { type: 'button', class: active ? 'danger' : '' }, active ? 'Suspend' : 'Reactivate');
    toggle.setAttribute('aria-label', `${active ? 'Suspend' : 'Reactivate'} ${c.name}`);
    const change = async () => {
      const r = await api<{ client: Company; sessions_revoked: number }>('PATCH', `/api/admin/clients/${encodeURIComponent(c.id)}`, { body: { active: !active } });
      replace(action);
      msg.show(active ? `${c.name} is suspended; ${r.sessions_revoked} session(s) signed out.` : `${c.name} is active again. Its people sign in again.`, 'ok');
      await load();
    };
    toggle.addEventListener('click', () => {
      msg.show('');
      // Suspending is confirmed in the page (one confirmation style: dom.ts confirmStep); reactivating is not.
      if (active) {
        confirmStep(action, {
          id: 'suspend-confirm',
          label: `Confirm suspending ${c.name}`,
          question: `Suspend ${c.name}? Everyone in it is signed out at once, nobody can sign in, and visits from its shops are dropped until it is reactivated.`,
          yes: `Suspend ${c.name}`,
          act: change,
        });
        return;
      }
      void busy(toggle, () => change().catch((err: unknown) => msg.show(errorText(err))));
    });
    return h(
      'tr',
      { 'data-company': c.slug, class: active ? '' : 'inactive' },
      h('td', {}, c.name),
      h('td', {}, c.slug),
      h('td', {}, c.sites),
      h('td', { 'data-health': 'online' }, h('span', { class: `dot ${c.sites === 0 ? 'unknown' : c.shops_online === c.sites ? 'good' : c.shops_online === 0 ? 'bad' : 'warn'}` }, `${c.shops_online} of ${c.sites}`)),
      h('td', { 'data-health': 'activity' }, lastActivity(c)),
      h('td', {}, c.users),
      h('td', { class: 'optional' }, when(c.created_at)),
      h('td', {}, h('span', { class: `badge ${active ? 'good' : 'bad'}` }, active ? 'active' : 'suspended')),
      h('td', {}, h('div', { class: 'actions' }, toggle, resetButton(c), active ? null : deleteButton(c))),
    );
  }

  function resetButton(c: Company): HTMLButtonElement {
    const b = h('button', { type: 'button', 'aria-label': `Reset the owner’s password of ${c.name}` }, 'Reset owner password…');
    b.addEventListener('click', () => resetOwner(c));
    return b;
  }

  function deleteButton(c: Company): HTMLButtonElement {
    const b = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${c.name}` }, 'Delete…');
    b.addEventListener('click', () => deleteCompany(c));
    return b;
  }

  /**
   * POST /api/admin/clients/{id}/owner-password, after a confirmation step. A company with several active owners
   * answers 400 with `owners`: the admin picks one and the call is made again with `email`.
   */
  function resetOwner(c: Company): void {
    msg.show('');
    const line = notice();
    const go = h('button', { type: 'button', class: 'danger' }, 'Reset owner password');
    const cancel = h('button', { type: 'button' }, 'Cancel');
    const choice = h('div');
    let chosen: HTMLSelectElement | null = null;
    cancel.addEventListener('click', () => replace(action));
    replace(
      action,
      h(
        'div',
        { class: 'confirm', id: 'owner-reset', role: 'group', 'aria-label': `Reset the owner’s password of ${c.name}` },
        h('p', {}, `Reset the password of ${c.name}’s owner? A new password is made and shown here once; the old one stops working and the owner is signed out everywhere.`),
        choice,
        line.el,
        h('div', { class: 'actions' }, go, cancel),
      ),
    );
    go.focus();
    go.addEventListener('click', () => {
      void busy(go, async () => {
        line.show('');
        try {
          const body = chosen ? { email: chosen.value } : {};
          const r = await api<{ email: string; password: string }>('POST', `/api/admin/clients/${encodeURIComponent(c.id)}/owner-password`, { body });
          replace(
            action,
            h(
              'div',
              { class: 'card', id: 'owner-reset-result' },
              h('p', { class: 'notice ok' }, `New password for ${r.email} (${c.name}). Give it to the owner; it is shown only now and cannot be recovered. They are signed out everywhere.`),
              h('code', { class: 'secret', id: 'owner-reset-password' }, r.password),
            ),
          );
        } catch (err) {
          const owners = err instanceof ApiError && err.status === 400 && Array.isArray(err.body.owners) ? err.body.owners.filter((o): o is string => typeof o === 'string') : [];
          if (owners.length > 1 && !chosen) {
            chosen = select('email', owners.map((o) => [o, o]));
            replace(choice, h('p', {}, `${c.name} has ${owners.length} owners. Choose whose password to reset:`), field('Owner', chosen));
            go.textContent = 'Reset this owner’s password';
            chosen.focus();
            return;
          }
          line.show(errorText(err));
        }
      });
    });
  }

  /**
   * DELETE /api/admin/clients/{id} with `confirm`: the slug as the admin typed it (the API compares). Offered for
   * suspended companies only: the API refuses an active one (409 `still_active`).
   */
  function deleteCompany(c: Company): void {
    msg.show('');
    const typed = h('input', { name: 'confirm', autocomplete: 'off', spellcheck: 'false' });
    replace(
      action,
      cardForm({
        id: 'delete-company',
        title: `Delete ${c.name}`,
        intro: `This cannot be undone: its shops, cameras, people, customers, visits, reports and stored photos are deleted, and its shop PCs are disconnected. To confirm, type its short name: ${c.slug}`,
        fields: [field('Short name, to confirm', typed)],
        submitLabel: 'Delete company for good',
        submit: async () => {
          const r = await api<{ deleted: string; images_deleted: number }>('DELETE', `/api/admin/clients/${encodeURIComponent(c.id)}`, { body: { confirm: typed.value } });
          replace(action);
          msg.show(`Deleted ${c.name} (${r.deleted}); ${r.images_deleted} stored photo${r.images_deleted === 1 ? '' : 's'} deleted.`, 'ok');
          await load();
        },
      }),
    );
    const cancel = h('button', { type: 'button' }, 'Cancel');
    cancel.addEventListener('click', () => replace(action));
    action.querySelector('.actions')?.append(cancel);
    action.querySelector('button.primary')?.classList.replace('primary', 'danger');
    typed.focus();
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

/** The latest of a company's shop-PC heartbeat, visit and sign-in, said with what it was. */
function lastActivity(c: Company): HTMLElement | string {
  const seen: [string, string | null][] = [['visit', c.last_visit_at], ['shop PC', c.last_heartbeat_at], ['sign-in', c.last_login_at]];
  const latest = seen.filter((x): x is [string, string] => !!x[1]).sort((a, b) => (a[1] < b[1] ? 1 : -1))[0];
  if (!latest) return 'none yet';
  return h('span', {}, timeAgo(latest[1]), h('span', { class: 'muted small' }, ` (${latest[0]})`));
}
