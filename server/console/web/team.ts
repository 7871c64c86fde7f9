import { api, errorText } from './api.js';
import { cardForm, confirmStep, busy, field, h, notice, replace, select, stacked, timeAgo, when } from './dom.js';
import type { Page } from './main.js';
import { atLeast } from './session.js';
import type { Invitation, Member } from './types.js';

/**
 * The team (GET /api/team, any member). Managers and owners also see pending invitations, invite by email, add a
 * member directly (generated password shown once), reset a member's password (after a confirmation step in the
 * page; shown once), change roles and deactivate or reactivate people; the API's refusals (last owner, only an
 * owner may act on an owner) are shown as it words them.
 */
export function renderTeam(p: Page): void {
  const manager = atLeast(p.user, 'manager');
  const owner = atLeast(p.user, 'owner');
  const msg = notice();
  const members = h('div', { class: 'table-wrap' });
  const invitations = h('div', { id: 'invitations' });
  // The password reset's confirmation and its one-time answer live outside the table, which is re-rendered.
  const reset = h('div', { id: 'reset', 'aria-live': 'polite' });
  replace(p.main, h('h1', {}, 'Team'), owner ? h('p', { class: 'small' }, h('a', { href: '#/privacy', id: 'privacy-link' }, 'Privacy settings and audit trail →')) : null, msg.el, reset, members);
  if (manager) p.main.append(h('h2', {}, 'Pending invitations'), invitations, inviteForm(owner, () => void loadInvitations()), addMemberForm(owner, () => void load()));

  async function load(): Promise<void> {
    try {
      const list = await api<Member[]>('GET', '/api/team', { signal: p.signal });
      replace(members, membersTable(list));
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  }

  async function loadInvitations(): Promise<void> {
    try {
      const list = await api<Invitation[]>('GET', '/api/team/invitations', { signal: p.signal });
      if (list.length === 0) return replace(invitations, h('p', { class: 'muted' }, 'None.'));
      replace(
        invitations,
        h(
          'div',
          { class: 'table-wrap' },
          stacked(
            h(
              'table',
              {},
              h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Email'), h('th', {}, 'Role'), h('th', { class: 'optional' }, 'Invited by'), h('th', { class: 'optional' }, 'Expires'), h('th', {}, h('span', { class: 'visually-hidden' }, 'Actions')))),
              h('tbody', {}, ...list.map((i) => invitationRow(i))),
            ),
          ),
        ),
      );
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  }

  function invitationRow(i: Invitation): HTMLElement {
    const withdraw = h('button', { type: 'button', class: 'danger' }, 'Withdraw');
    withdraw.setAttribute('aria-label', `Withdraw the invitation of ${i.email}`);
    withdraw.addEventListener('click', () => {
      msg.show('');
      confirmStep(reset, {
        id: 'withdraw-confirm',
        label: `Confirm withdrawing the invitation of ${i.email}`,
        question: `Withdraw the invitation of ${i.email}? Its code stops working.`,
        yes: `Withdraw the invitation of ${i.email}`,
        act: async () => {
          await api('DELETE', `/api/team/invitations/${encodeURIComponent(i.id)}`);
          replace(reset);
          msg.show(`Withdrew the invitation of ${i.email}.`, 'ok');
          await loadInvitations();
        },
      });
    });
    return h('tr', { 'data-invitation': i.email }, h('td', {}, i.full_name), h('td', {}, i.email), h('td', {}, i.role), h('td', { class: 'optional' }, i.invited_by), h('td', { class: 'optional' }, when(i.expires_at)), h('td', {}, withdraw));
  }

  function membersTable(list: Member[]): HTMLElement {
    return stacked(
      h(
        'table',
        { id: 'members' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Email'), h('th', {}, 'Role'), h('th', {}, 'Status'), h('th', { class: 'optional' }, 'Last sign-in'), manager ? h('th', {}, h('span', { class: 'visually-hidden' }, 'Actions')) : null)),
        h('tbody', {}, ...list.map((m) => memberRow(m))),
      ),
    );
  }

  function memberRow(m: Member): HTMLElement {
    const me = m.id === p.user.id;
    const name = h('td', {}, m.full_name, me ? h('span', { class: 'muted small' }, ' (you)') : null);
    const status = h('td', {}, h('span', { class: `badge ${m.active ? 'good' : 'unknown'}` }, m.active ? 'active' : 'inactive'));
    const last = h('td', { class: 'optional' }, m.last_login_at ? timeAgo(m.last_login_at) : 'never');
    // Only an owner may act on an owner or grant the owner role (docs/team.md); others get plain text.
    const editable = manager && (owner || m.role !== 'owner');
    if (!editable) return h('tr', { 'data-member': m.email, class: m.active ? '' : 'inactive' }, name, h('td', {}, m.email), h('td', {}, m.role), status, last, manager ? h('td') : null);

    const roles: [string, string][] = owner ? [['staff', 'staff'], ['manager', 'manager'], ['owner', 'owner']] : [['staff', 'staff'], ['manager', 'manager']];
    const role = select('role', roles, m.role);
    role.setAttribute('aria-label', `Role of ${m.email}`);
    role.addEventListener('change', () => {
      role.disabled = true;
      patch(m, { role: role.value }, `${m.full_name} is now ${role.value}.`).finally(() => (role.disabled = false));
    });
    const toggle = h('button', { type: 'button', class: m.active ? 'danger' : '' }, m.active ? 'Deactivate' : 'Reactivate');
    toggle.setAttribute('aria-label', `${m.active ? 'Deactivate' : 'Reactivate'} ${m.email}`);
    toggle.addEventListener('click', () => {
      if (!m.active) return void busy(toggle, () => patch(m, { active: true }, `${m.full_name} can sign in again.`));
      msg.show('');
      confirmStep(reset, {
        id: 'deactivate-confirm',
        label: `Confirm deactivating ${m.email}`,
        question: `Deactivate ${m.full_name}? They are signed out everywhere at once and cannot sign in until reactivated.`,
        yes: `Deactivate ${m.full_name}`,
        act: async () => {
          await patch(m, { active: false }, `${m.full_name} is deactivated and signed out everywhere.`);
          replace(reset);
        },
      });
    });
    const resetButton = me ? null : h('button', { type: 'button', 'aria-label': `Reset the password of ${m.email}` }, 'Reset password…');
    resetButton?.addEventListener('click', () => confirmReset(m));
    return h('tr', { 'data-member': m.email, class: m.active ? '' : 'inactive' }, name, h('td', {}, m.email), h('td', {}, role), status, last, h('td', {}, h('div', { class: 'actions' }, toggle, resetButton)));
  }

  /** POST /api/team/{id}/password after a confirmation step in the page; the new password is shown once. */
  function confirmReset(m: Member): void {
    msg.show('');
    confirmStep(reset, {
      id: 'reset-confirm',
      label: `Confirm resetting the password of ${m.email}`,
      question: `Reset the password of ${m.full_name} (${m.email})? A new password is made and shown here once; their old password stops working and they are signed out everywhere.`,
      yes: `Reset the password of ${m.email}`,
      act: async () => {
        const r = await api<{ password: string }>('POST', `/api/team/${encodeURIComponent(m.id)}/password`, { body: {} });
        replace(
          reset,
          h(
            'div',
            { class: 'card', id: 'reset-result' },
            h('p', { class: 'notice ok' }, `New password for ${m.email}. Give it to ${m.full_name}; it is shown only now and cannot be recovered. They are signed out everywhere.`),
            h('code', { class: 'secret', id: 'member-password-reset' }, r.password),
          ),
        );
      },
    });
  }

  async function patch(m: Member, body: Record<string, unknown>, done: string): Promise<void> {
    msg.show('');
    try {
      await api('PATCH', `/api/team/${encodeURIComponent(m.id)}`, { body });
      if (m.id === p.user.id && body.active === false) return; // the API ended this session; sign-in follows
      msg.show(done, 'ok');
    } catch (err) {
      msg.show(errorText(err));
    }
    await load();
  }

  void load();
  if (manager) void loadInvitations();
}

/** POST /api/team/invitations; shows the code once, and a link to the console's join page carrying it. */
function inviteForm(owner: boolean, done: () => void): HTMLElement {
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'off' });
  const name = h('input', { name: 'full_name', required: true, maxlength: 200, autocomplete: 'off' });
  const role = select('role', owner ? [['staff', 'staff'], ['manager', 'manager'], ['owner', 'owner']] : [['staff', 'staff'], ['manager', 'manager']], 'staff');
  const days = h('input', { type: 'number', name: 'expires_in_days', min: 1, max: 30, value: 7 });
  return cardForm({
    id: 'invite',
    title: 'Invite someone',
    intro: 'Footfall sends no email: give the person the code or the link below. They choose their own password when they join.',
    fields: [h('div', { class: 'inline' }, field('Email', email), field('Full name', name)), h('div', { class: 'inline' }, field('Role', role), field('Valid for (days)', days))],
    submitLabel: 'Invite',
    submit: async ({ form, out }) => {
      const inv = await api<Invitation>('POST', '/api/team/invitations', { body: { email: email.value.trim(), full_name: name.value.trim(), role: role.value, expires_in_days: Number(days.value) || 7 } });
      const link = `${location.origin}/#/join/${encodeURIComponent(inv.code ?? '')}`;
      replace(
        out,
        h('p', { class: 'notice ok' }, `Invitation for ${inv.email} created. It is shown only now and works until ${when(inv.expires_at)}.`),
        h('p', {}, 'Code:'),
        h('code', { class: 'secret', id: 'invitation-code' }, inv.code ?? ''),
        h('p', {}, 'Or send this link:'),
        h('code', { class: 'secret small', id: 'invitation-link' }, link),
      );
      form.querySelectorAll('input').forEach((i) => {
        if (i !== days) i.value = '';
      });
      done();
    },
  });
}

/** POST /api/team/members: an account made at once (no invitation); the generated password is shown once. */
function addMemberForm(owner: boolean, done: () => void): HTMLElement {
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'off' });
  const name = h('input', { name: 'full_name', required: true, maxlength: 200, autocomplete: 'off' });
  const role = select('role', owner ? [['staff', 'staff'], ['manager', 'manager'], ['owner', 'owner']] : [['staff', 'staff'], ['manager', 'manager']], 'staff');
  return cardForm({
    id: 'add-member',
    title: 'Add a member directly',
    intro: 'The account exists at once with a generated password, shown here once: give it to the person yourself. A pending invitation for the same address is withdrawn.',
    fields: [h('div', { class: 'inline' }, field('Email', email), field('Full name', name)), field('Role', role)],
    submitLabel: 'Add member',
    submit: async ({ form, out }) => {
      const m = await api<Member & { password: string }>('POST', '/api/team/members', { body: { email: email.value.trim(), full_name: name.value.trim(), role: role.value } });
      replace(
        out,
        h('p', { class: 'notice ok' }, `${m.full_name} (${m.email}) can sign in now as ${m.role}. Give them this password; it is shown only now and cannot be recovered.`),
        h('code', { class: 'secret', id: 'member-password' }, m.password),
      );
      form.querySelectorAll('input').forEach((i) => (i.value = ''));
      role.value = 'staff';
      done();
    },
  });
}
