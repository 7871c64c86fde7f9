import { h, replace } from './dom.js';

export function renderJoin(root: HTMLElement, _code: string, _signal: AbortSignal): void {
  replace(root, h('main', { id: 'page', class: 'narrow' }, h('p', {}, 'Joining by invitation is not built yet.'), h('a', { href: '#/signin' }, 'Sign in')));
}
