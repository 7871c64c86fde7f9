import { h, replace } from './dom.js';
import type { Page } from './main.js';

export function renderTeam(p: Page): void {
  replace(p.main, h('p', { class: 'muted' }, 'This page is not built yet.'));
}
