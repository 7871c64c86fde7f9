import { ApiError, open } from './api.js';
import { field, h, notice, replace } from './dom.js';
import { save, type Session } from './session.js';

/** The sign-in form (POST /api/auth/login). `message` is shown above it (e.g. "You are signed out."). */
export function renderSignIn(root: HTMLElement, message: string, done: () => void): void {
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true, autofocus: true });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const remember = h('input', { type: 'checkbox', name: 'remember', id: 'remember' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const info = notice('info');
  const error = notice('error');
  if (message) info.show(message);

  const form = h(
    'form',
    { class: 'card signin', novalidate: false },
    h('h1', {}, 'Sign in to Footfall'),
    info.el,
    field('Email', email),
    field('Password', password),
    h('div', { class: 'check' }, remember, h('label', { for: 'remember' }, 'Keep me signed in on this computer')),
    error.el,
    h('div', { class: 'actions' }, button),
    h('p', { class: 'muted small' }, 'Have an invitation code? ', h('a', { href: '#/join' }, 'Join your team')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    error.show('');
    info.show('');
    button.disabled = true;
    button.textContent = 'Signing in…';
    open<Session>('POST', '/api/auth/login', { email: email.value.trim(), password: password.value })
      .then((s) => {
        save(s, remember.checked);
        done();
      })
      .catch((err: unknown) => {
        error.show(signInError(err));
        password.value = '';
        password.focus();
      })
      .finally(() => {
        button.disabled = false;
        button.textContent = 'Sign in';
      });
  });
  replace(root, h('main', { class: 'narrow', id: 'page' }, form));
}

/** The API's own message (written for people); a plain one when the server cannot be reached. */
export function signInError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.code === 'bad_credentials') return err.message || 'Wrong email or password.';
    return err.message;
  }
  return 'Head office could not be reached. Check the connection and try again.';
}
