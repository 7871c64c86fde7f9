import { api, keepFresh, whenSessionEnds } from './api.js';
import { alertBell } from './alerts.js';
import { checkAssistant } from './assistant.js';
import { h, replace } from './dom.js';
import { clear, isPlatformAdmin, load, type User } from './session.js';
import { renderSignIn } from './signin.js';
import { renderOverview } from './overview.js';
import { renderShop } from './shop.js';
import { renderTeam } from './team.js';
import { renderAdmin } from './admin.js';
import { renderJoin } from './join.js';
import { renderReports } from './reports.js';
import { renderArrivals } from './arrivals.js';
import { renderCustomers } from './customers.js';
import { renderAccount } from './account.js';
import { assistantAvailable, forgetConversation, renderAssistant } from './assistant.js';
import { renderLiveGrid } from './live-grid.js';
import { renderPrivacy } from './privacy.js';

/**
 * The console's entry point: a hash router (`#/`, `#/shop/<slug>`, `#/reports`, `#/arrivals`, `#/customers[/<ref>]`, `#/team`, `#/privacy`, `#/assistant`, `#/account`, `#/admin`,
 * `#/join/<code>`, `#/signin`). Each page gets a signal that aborts when the page is left (polls, the live stream, timers).
 */

export interface Page {
  user: User;
  main: HTMLElement;
  signal: AbortSignal;
}

const root = document.getElementById('app')!;
let leave: AbortController | null = null;
let pendingMessage = '';
/** Company members' routes besides the overview. */
const PAGES = ['shop', 'live', 'reports', 'arrivals', 'customers', 'team', 'assistant', 'account', 'privacy'];

whenSessionEnds((message) => {
  pendingMessage = message;
  go('#/signin');
});

window.addEventListener('hashchange', render);
render();

function render(): void {
  leave?.abort();
  leave = new AbortController();
  const signal = leave.signal;
  // A page's settings may follow a `?` (the reports: `#/reports?from=...`); the page reads them itself.
  const [route = '', arg = ''] = location.hash.replace(/^#\/?/, '').split('?')[0]!.split('/');

  if (route === 'join') {
    renderJoin(root, decodeURIComponent(arg), signal);
    return;
  }
  const session = load();
  if (!session) {
    forgetConversation();
    const message = pendingMessage;
    pendingMessage = '';
    // After signing in, stay on the page that was asked for (a link to a shop), unless it was the sign-in page.
    renderSignIn(root, message, () => go(route === 'signin' ? '#/' : location.hash || '#/'));
    return;
  }
  pendingMessage = '';
  keepFresh();
  const user = session.user;
  const admin = isPlatformAdmin(user);
  const page = admin ? (route === 'account' ? 'account' : 'admin') : PAGES.includes(route) ? route : 'overview';
  const main = h('main', { id: 'page' });
  replace(root, header(user, page), main);
  const p: Page = { user, main, signal };

  if (page === 'account') renderAccount(p);
  else if (page === 'admin') renderAdmin(p);
  else if (page === 'shop') renderShop(p, decodeURIComponent(arg));
  else if (page === 'live') renderLiveGrid(p, decodeURIComponent(arg));
  else if (page === 'team') renderTeam(p);
  else if (page === 'privacy') renderPrivacy(p);
  else if (page === 'assistant') renderAssistant(p);
  else if (page === 'reports') renderReports(p);
  else if (page === 'arrivals') renderArrivals(p);
  else if (page === 'customers') renderCustomers(p, decodeURIComponent(arg));
  else renderOverview(p);
}

function header(user: User, page: string): HTMLElement {
  const admin = isPlatformAdmin(user);
  const link = (href: string, label: string, here: boolean) => h('a', { href, 'aria-current': here ? 'page' : undefined }, label);
  const nav = admin
    ? h('nav', { 'aria-label': 'Main' }, link('#/admin', 'Companies', page === 'admin'))
    : h(
        'nav',
        { 'aria-label': 'Main' },
        link('#/', 'Overview', page === 'overview' || page === 'shop' || page === 'live'),
        link('#/reports', 'Reports', page === 'reports'),
        link('#/arrivals', 'Arrivals', page === 'arrivals'),
        link('#/customers', 'Customers', page === 'customers'),
        link('#/team', 'Team', page === 'team' || page === 'privacy'),
        // Shown only once head office said the assistant is set up (GET /api/assistant, asked once per tab).
        page === 'assistant' || assistantAvailable() === true ? link('#/assistant', 'Assistant', page === 'assistant') : null,
      );
  if (!admin && assistantAvailable() === undefined) void learnAssistant(nav);
  const signOut = h('button', { type: 'button', class: 'link', id: 'sign-out' }, 'Sign out');
  signOut.addEventListener('click', () => {
    signOut.disabled = true;
    void signOutNow();
  });
  return h(
    'header',
    { class: 'top' },
    h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Footfall', h('span', { class: 'company' }, admin ? 'Platform administration' : user.client_name)),
    nav,
    h('div', { class: 'who' }, admin ? null : alertBell(), h('a', { class: 'user', href: '#/account', title: `My account (${user.email})`, 'aria-current': page === 'account' ? 'page' : undefined }, user.full_name || user.email), h('span', { class: 'role' }, user.role), h('a', { class: 'api-ref', href: '/console/api-reference.html', title: 'API reference' }, 'API'), signOut),
  );
}

/** Asks head office once whether the assistant is set up; adds the tab when it is. */
async function learnAssistant(nav: HTMLElement): Promise<void> {
  const available = await checkAssistant();
  if (available && nav.isConnected && !nav.querySelector('a[href="#/assistant"]')) nav.append(h('a', { href: '#/assistant' }, 'Assistant'));
}

/** Revokes this session on the server (POST /api/auth/logout), then forgets it whatever the answer. */
async function signOutNow(): Promise<void> {
  try {
    await api('POST', '/api/auth/logout');
  } catch {
    // Signed out here anyway: the token is forgotten below, and an unreachable server cannot be helped.
  }
  clear();
  pendingMessage = 'You are signed out.';
  go('#/signin');
}

/** Shows a route: through hashchange when the hash changes, at once when it is already there. */
export function go(hash: string): void {
  if (location.hash === hash || (hash === '#/' && location.hash === '')) render();
  else location.hash = hash;
}
