import { h, replace } from './dom.js';
import type { Page } from './main.js';

export function renderShop(p: Page, _slug: string): void {
  replace(p.main, h('p', { class: 'muted' }, 'This page is not built yet.'));
}
