import { api, errorText, raw } from './api.js';
import { busy, confirmStep, h, notice, plural, replace } from './dom.js';
import type { Page } from './main.js';
import type { Customer, CustomerDetail, Erasure } from './types.js';

/* A manager's actions on a customer's page (web/customer-page.ts): staff or not, download their data, erase. */

/** Managers: mark the customer as staff, or undo it (PATCH /api/visitors/{id}). */
export function staffToggle(c: CustomerDetail, p: Page, changed: (d: CustomerDetail) => void): HTMLElement {
  const msg = notice();
  const button = h('button', { type: 'button', id: 'staff-toggle' });
  const label = () => (button.textContent = c.staff ? 'Not staff' : 'Mark as staff…');
  label();
  const area = h('div', { 'aria-live': 'polite' });
  const act = async (next: boolean) => {
    try {
      const d = await api<CustomerDetail>('PATCH', `/api/visitors/${encodeURIComponent(c.id)}`, { body: { staff: next }, signal: p.signal });
      c = d;
      label();
      changed(d);
      replace(area);
      msg.show(next ? `${d.ref} is staff: no arrivals, and reports leave them out (past ones too).` : `${d.ref} counts as a customer again.`, 'ok');
    } catch (err) {
      if (!p.signal.aborted) msg.show(errorText(err));
    }
  };
  button.addEventListener('click', () => {
    msg.show('');
    // Marking hides the person from arrivals and every report, past ones included: asked first. Undoing is not.
    if (!c.staff) {
      const who = c.full_name ? `${c.full_name} (${c.ref})` : c.ref;
      return confirmStep(area, {
        id: 'confirm-staff',
        label: `Confirm marking ${who} as staff`,
        question: `Mark ${who} as staff? Their visits leave arrivals and every report, past ones too, until you undo it.`,
        yes: 'Mark as staff',
        act: () => act(true),
      });
    }
    void busy(button, () => act(false));
  });
  return h('span', {}, button, msg.el, area);
}

/**
 * Managers: everything held about the customer (GET /api/visitors/{id}/export, subject access) downloaded as a JSON
 * file, for a customer who asks for a copy of their data (docs/privacy.md).
 */
export function exportDownload(c: Customer): HTMLElement {
  const msg = notice();
  const button = h('button', { type: 'button', id: 'export-data' }, 'Download their data');
  button.setAttribute('aria-label', `Download everything held about ${c.ref} as a JSON file`);
  button.addEventListener('click', () => {
    msg.show('');
    void busy(button, async () => {
      try {
        const blob = await (await raw(`/api/visitors/${encodeURIComponent(c.id)}/export`)).blob();
        const url = URL.createObjectURL(blob);
        const a = h('a', { href: url, download: `customer-${c.ref}.json` });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
        msg.show(`Downloaded the data of ${c.ref}.`, 'ok');
      } catch (err) {
        msg.show(errorText(err));
      }
    });
  });
  return h('span', {}, button, msg.el);
}

/** Managers: erase the customer, after a confirmation step in the page (no window.confirm). */
export function erasure(c: Customer, p: Page): HTMLElement {
  const msg = notice();
  const ask = h('button', { type: 'button', class: 'danger' }, 'Erase customer…');
  const confirm = h('button', { type: 'button', class: 'danger' }, `Erase ${c.ref}`);
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const step = h(
    'div',
    { class: 'confirm', id: 'erase-confirm', hidden: true, role: 'group', 'aria-label': `Confirm erasing ${c.ref}` },
    h('p', {}, h('strong', {}, `Erase ${c.ref} for good?`), ` Their face template and photos are destroyed and their profile cleared. Their ${plural(c.visit_count, 'visit')} stay in the counts but no longer name anyone, and the same face is not enrolled again for 180 days. This cannot be undone.`),
    h('div', { class: 'actions' }, confirm, cancel),
  );
  ask.addEventListener('click', () => {
    msg.show('');
    step.hidden = false;
    ask.hidden = true;
    confirm.focus();
  });
  cancel.addEventListener('click', () => {
    step.hidden = true;
    ask.hidden = false;
    ask.focus();
  });
  confirm.addEventListener('click', () => {
    cancel.disabled = true;
    void busy(confirm, async () => {
      try {
        const r = await api<Erasure>('DELETE', `/api/visitors/${encodeURIComponent(c.id)}`, { signal: p.signal });
        replace(
          p.main,
          h('p', { class: 'small' }, h('a', { href: '#/customers' }, '← All customers')),
          h('h1', {}, `${r.ref} erased`),
          h('p', { class: 'notice ok', role: 'status', id: 'erased' }, `${r.ref} is erased: ${plural(r.visits_unlinked, 'visit')} no longer linked, ${plural(r.images_deleted, 'photo')} deleted.`),
        );
      } catch (err) {
        if (p.signal.aborted) return;
        msg.show(errorText(err));
      } finally {
        cancel.disabled = false;
      }
    });
  });
  return h('section', { class: 'card danger-zone', id: 'erase' }, h('h2', {}, 'Erase this customer'), h('p', { class: 'small muted' }, 'For a customer who asks to be forgotten.'), msg.el, h('div', { class: 'actions' }, ask), step);
}
