import { api, endSession, errorText } from './api.js';
import { cardForm, facts, field, busy, h, stacked, notice, replace, timeAgo, when } from './dom.js';
import type { Page } from './main.js';
import { isPlatformAdmin, type User } from './session.js';
import { reportEmailsForm } from './report-emails.js';

/** A device session (spec: Device session). */
interface DeviceSession {
  id: string;
  device: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
  current: boolean;
}

/**
 * My account (every signed-in user, the platform admin too): who I am (GET /api/auth/me) and the devices signed in
 * (GET /api/auth/sessions). Sign out one device (DELETE /api/auth/sessions/{id}) or every other one
 * (POST /api/auth/sessions/revoke-others). Signing out this device from here is a sign-out.
 */
export function renderAccount(p: Page): void {
  const msg = notice();
  const me = h('section', { class: 'card', id: 'me' }, h('p', { class: 'muted' }, 'Loading…'));
  const list = h('div', { class: 'table-wrap', id: 'sessions' });
  const others = h('button', { type: 'button', class: 'danger', id: 'revoke-others' }, 'Sign out every other device');
  replace(
    p.main,
    h('h1', {}, 'My account'),
    me,
    h('h2', {}, 'Signed-in devices'),
    h('p', { class: 'small muted' }, 'Each browser or app you signed in with. Signing a device out ends its session at once; it has to sign in again.'),
    msg.el,
    list,
    h('div', { class: 'actions' }, others),
    passwordForm(() => void loadSessions()),
    isPlatformAdmin(p.user) ? null : reportEmailsForm(),
  );

  others.addEventListener('click', () => {
    void busy(others, async () => {
      msg.show('');
      try {
        const r = await api<{ revoked: number }>('POST', '/api/auth/sessions/revoke-others');
        msg.show(r.revoked === 0 ? 'No other device was signed in.' : `Signed out ${r.revoked} other device${r.revoked === 1 ? '' : 's'}.`, 'ok');
      } catch (err) {
        msg.show(errorText(err));
      }
      await loadSessions();
    });
  });

  async function loadMe(): Promise<void> {
    try {
      const u = await api<User>('GET', '/api/auth/me', { signal: p.signal });
      const rows: [string, string][] = [
        ['Name', u.full_name || '—'],
        ['Email', u.email],
        ['Role', u.role === 'admin' ? 'platform admin' : u.role],
      ];
      if (u.client_id) rows.push(['Company', u.client_name]);
      replace(me, facts(rows));
    } catch (err) {
      if (!p.signal.aborted) replace(me, h('p', { class: 'notice error', role: 'alert' }, errorText(err)));
    }
  }

  async function loadSessions(): Promise<void> {
    try {
      const sessions = await api<DeviceSession[]>('GET', '/api/auth/sessions', { signal: p.signal });
      // This device first, then the most recently used.
      sessions.sort((a, b) => Number(b.current) - Number(a.current) || Date.parse(b.last_used_at) - Date.parse(a.last_used_at));
      others.hidden = !sessions.some((s) => !s.current);
      replace(
        list,
        stacked(h(
          'table',
          {},
          h('thead', {}, h('tr', {}, h('th', {}, 'Device'), h('th', {}, 'Signed in'), h('th', {}, 'Last used'), h('th', { class: 'optional' }, 'Expires'), h('th', {}, h('span', { class: 'visually-hidden' }, 'Actions')))),
          h('tbody', {}, ...sessions.map(row)),
        )),
      );
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  }

  function row(s: DeviceSession): HTMLElement {
    const label = s.device || 'Unknown device';
    const out = h('button', { type: 'button', class: s.current ? '' : 'danger', 'aria-label': s.current ? 'Sign out this device' : `Sign out ${label}, signed in ${when(s.created_at)}` }, 'Sign out');
    out.addEventListener('click', () => {
      void busy(out, async () => {
        msg.show('');
        try {
          await api('DELETE', `/api/auth/sessions/${encodeURIComponent(s.id)}`);
        } catch (err) {
          if (!s.current) {
            msg.show(errorText(err));
            return loadSessions();
          }
          // This device: forgotten here whatever the answer, as the header's "Sign out" does.
        }
        if (s.current) return endSession('You are signed out.');
        msg.show(`Signed out ${label}.`, 'ok');
        await loadSessions();
      });
    });
    return h(
      'tr',
      { 'data-session': s.id, class: s.current ? 'current' : '' },
      h('td', {}, label, s.current ? h('span', { class: 'badge good this-device' }, 'this device') : null),
      h('td', {}, h('time', { datetime: s.created_at, title: when(s.created_at) }, when(s.created_at))),
      h('td', {}, timeAgo(s.last_used_at)),
      h('td', { class: 'optional' }, when(s.expires_at)),
      h('td', {}, out),
    );
  }

  void loadMe();
  void loadSessions();
}

/**
 * Change my own password (POST /api/auth/password, docs/api-conventions.md): the current password is required;
 * every other device is signed out, this one stays signed in.
 */
function passwordForm(done: () => void): HTMLFormElement {
  const current = h('input', { name: 'current_password', type: 'password', required: true, autocomplete: 'current-password' });
  const next = h('input', { name: 'new_password', type: 'password', required: true, minlength: 8, autocomplete: 'new-password' });
  const again = h('input', { name: 'new_password_again', type: 'password', required: true, autocomplete: 'new-password' });
  return cardForm({
    id: 'change-password',
    title: 'Change my password',
    intro: 'Every other device signed in as you is signed out; this one stays signed in.',
    fields: [field('Current password', current), field('New password', next, 'At least 8 characters.'), field('New password again', again)],
    submitLabel: 'Change password',
    submit: async ({ form, msg }) => {
      if (next.value !== again.value) return msg.show('The two new passwords differ: type the same one twice.');
      const r = await api<{ revoked: number }>('POST', '/api/auth/password', { body: { current_password: current.value, new_password: next.value } });
      form.reset();
      msg.show(`Your password is changed. ${r.revoked === 0 ? 'No other device was signed in.' : `${r.revoked} other session${r.revoked === 1 ? ' was' : 's were'} signed out.`}`, 'ok');
      done();
    },
  });
}
