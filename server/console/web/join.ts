import { ApiError, open } from './api.js';
import { field, h, notice, replace } from './dom.js';
import { save, type Session } from './session.js';

/**
 * Joining a team with an invitation code (`#/join/<code>`, the link a manager hands out): GET /api/auth/invitation
 * shows who invites whom, then POST /api/auth/register creates the account with the person's own name and password
 * and signs them in. The email and role come from the invitation and are never sent.
 */
export function renderJoin(root: HTMLElement, code: string, signal: AbortSignal): void {
  const codeInput = h('input', { name: 'code', required: true, autocomplete: 'off', spellcheck: 'false', value: code, placeholder: 'XXXXXX-XXXXXX-XXXXXX-XXXXXX' });
  const lookup = h('button', { type: 'submit', class: 'primary' }, 'Continue');
  const msg = notice();
  const details = h('div');
  const codeForm = h('form', { class: 'card signin', id: 'join-code' }, h('h1', {}, 'Join your team'), field('Invitation code', codeInput), msg.el, h('div', { class: 'actions' }, lookup), h('p', { class: 'small muted' }, 'Already have an account? ', h('a', { href: '#/signin' }, 'Sign in')));
  replace(root, h('main', { class: 'narrow', id: 'page' }, codeForm, details));

  codeForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void check();
  });

  async function check(): Promise<void> {
    msg.show('');
    replace(details);
    const c = codeInput.value.trim();
    if (!c) return;
    lookup.disabled = true;
    try {
      const inv = await open<{ client_name: string; email: string; full_name: string; role: string }>('GET', `/api/auth/invitation?code=${encodeURIComponent(c)}`);
      if (signal.aborted) return;
      replace(details, registerForm(c, inv));
    } catch (err) {
      msg.show(err instanceof ApiError ? err.message : 'Head office could not be reached. Try again.');
    } finally {
      lookup.disabled = false;
    }
  }

  if (code) void check();
}

function registerForm(code: string, inv: { client_name: string; email: string; full_name: string; role: string }): HTMLElement {
  const name = h('input', { name: 'full_name', required: true, maxlength: 200, autocomplete: 'name', value: inv.full_name });
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', value: inv.email, readonly: true });
  const password = h('input', { type: 'password', name: 'password', required: true, minlength: 8, autocomplete: 'new-password' });
  const remember = h('input', { type: 'checkbox', id: 'join-remember' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Join and sign in');
  const msg = notice();
  const form = h(
    'form',
    { class: 'card signin', id: 'join-register' },
    h('p', {}, `${inv.client_name} invites you to join as ${inv.role}.`),
    field('Email', email),
    field('Your name', name),
    field('Choose a password', password, 'At least 8 characters.'),
    h('div', { class: 'check' }, remember, h('label', { for: 'join-remember' }, 'Keep me signed in on this computer')),
    msg.el,
    h('div', { class: 'actions' }, button),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    msg.show('');
    button.disabled = true;
    open<Session>('POST', '/api/auth/register', { code, full_name: name.value.trim(), password: password.value })
      .then((s) => {
        save(s, remember.checked);
        location.hash = '#/';
      })
      .catch((err: unknown) => msg.show(err instanceof ApiError ? err.message : 'Head office could not be reached. Try again.'))
      .finally(() => (button.disabled = false));
  });
  return form;
}
