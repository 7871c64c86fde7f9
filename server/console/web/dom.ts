/**
 * Building the page. Every piece of data goes in as text (textContent / attributes), never as markup: no string is
 * ever parsed as HTML anywhere in the console.
 */

import { errorText } from './api.js';

export type Child = Node | string | number | null | undefined | false;
type Handler = (ev: Event) => void;
export type Props = Record<string, string | number | boolean | Handler | null | undefined>;

/** An element: `h('a', { href: '#/team', class: 'nav' }, 'Team')`. Props named `on...` are event listeners. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === 'class') el.className = String(value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces everything inside `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

let ids = 0;

/**
 * A list of facts (`dl`): each row a term and its value. `key` names an attribute that each value carries with its
 * term (for tests and styling: `data-total="Visits"`).
 */
export function facts(rows: [string, Child][], opts: { class?: string; key?: string } = {}): HTMLElement {
  return h('dl', { class: opts.class ? `facts ${opts.class}` : 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', opts.key ? { [opts.key]: k } : {}, v)]));
}

/** A labelled form field: label, input (or select, or textarea), and an optional hint under it. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  const id = control.id || `f${++ids}`;
  control.id = id;
  const parts: Child[] = [h('label', { for: id }, label), control];
  if (hint) {
    const hintId = `${id}-hint`;
    control.setAttribute('aria-describedby', hintId);
    parts.push(h('small', { id: hintId, class: 'hint' }, hint));
  }
  return h('div', { class: 'field' }, ...parts);
}

export function select(name: string, options: [value: string, label: string][], selected?: string): HTMLSelectElement {
  const s = h('select', { name });
  for (const [value, label] of options) s.append(h('option', { value, selected: value === selected }, label));
  return s;
}

/** A message line for a form or page; `show('')` hides it. */
export function notice(kind: 'error' | 'ok' | 'info' = 'error'): { el: HTMLElement; show(text: string, k?: 'error' | 'ok' | 'info'): void } {
  const el = h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status', hidden: true });
  return {
    el,
    show(text, k = kind) {
      el.className = `notice ${k}`;
      el.setAttribute('role', k === 'error' ? 'alert' : 'status');
      el.textContent = text;
      el.hidden = text === '';
    },
  };
}

/** "3 min ago", "2 days ago"; "never" for an empty or null time. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return 'never';
  const s = Math.round((now - t) / 1000);
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const hrs = Math.round(m / 60);
  if (hrs < 36) return `${hrs} h ago`;
  const d = Math.round(hrs / 24);
  return `${d} day${d === 1 ? '' : 's'} ago`;
}

/** The browser's date and time for a tooltip or a table cell, naming its zone ("26 Nov 2026, 14:05 GMT+5:30"). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '';
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? '' : t.toLocaleString(undefined, WHEN);
}

const WHEN: Intl.DateTimeFormatOptions = { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' };

/** A time element showing "3 min ago" with the full time on hover. */
export function timeAgo(iso: string | null | undefined): HTMLElement {
  if (!iso) return h('span', {}, 'never');
  return h('time', { datetime: iso, title: when(iso) }, ago(iso));
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

export type Notice = ReturnType<typeof notice>;

export interface CardFormOptions {
  id: string;
  title: string;
  /** A line under the title. */
  intro?: string;
  /** Fields, rows of fields (`h('div', { class: 'inline' }, ...)`). */
  fields: Child[];
  submitLabel: string;
  /**
   * Runs on submit, with the button disabled, after the message line and the result area are cleared. What it
   * throws is shown in the message line (errorText: the API's message).
   */
  submit: (parts: { form: HTMLFormElement; msg: Notice; out: HTMLElement }) => Promise<void>;
}

/**
 * A form in a card: title, intro, fields, a message line, the submit button and a result area (for what is shown
 * once, such as a code or a password). Every form of the console is one.
 */
export function cardForm(o: CardFormOptions): HTMLFormElement {
  const button = h('button', { type: 'submit', class: 'primary' }, o.submitLabel);
  const msg = notice();
  const out = h('div', { id: `${o.id}-result`, 'aria-live': 'polite' });
  const form = h('form', { class: 'card form', id: o.id }, h('h2', {}, o.title), o.intro ? h('p', { class: 'small muted' }, o.intro) : null, ...o.fields, msg.el, h('div', { class: 'actions' }, button), out);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    msg.show('');
    replace(out);
    void busy(button, () => o.submit({ form, msg, out }).catch((err: unknown) => msg.show(errorText(err))));
  });
  return form;
}

export interface ConfirmOptions {
  /** The group's accessible name ("Confirm removing Front door"). */
  label: string;
  /** What will happen, as a question. */
  question: string;
  /** The button that does it ("Remove Front door"). */
  yes: string;
  id?: string;
  /** Does it; what it throws is shown under the question (errorText), and the step stays open. */
  act: () => Promise<void>;
}

/**
 * An in-page confirmation step (no window.confirm) shown in `area`: the question, a danger button that runs `act`
 * (disabled while it runs), and Cancel, which empties `area`.
 */
export function confirmStep(area: HTMLElement, o: ConfirmOptions): void {
  const yes = h('button', { type: 'button', class: 'danger' }, o.yes);
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const line = notice();
  replace(area, h('div', { class: 'confirm', id: o.id, role: 'group', 'aria-label': o.label }, h('p', {}, o.question), line.el, h('div', { class: 'actions' }, yes, cancel)));
  yes.focus();
  cancel.addEventListener('click', () => replace(area));
  yes.addEventListener('click', () => {
    line.show('');
    void busy(yes, () => o.act().catch((err: unknown) => line.show(errorText(err))));
  });
}

/** Disables a button while `work` runs. */
export async function busy<T>(button: HTMLButtonElement, work: () => Promise<T>): Promise<T> {
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
  }
}

/**
 * A data table that stacks on a phone: under the breakpoint in console.css each row becomes a block and each cell a
 * line led by its column's name, which CSS shows from the cell's `data-label` (taken here from the header cells, so
 * no style attribute is needed). Call it once the body's rows are in; `stackRow` labels a row added later.
 */
export function stacked<T extends HTMLTableElement>(table: T): T {
  table.classList.add('stack');
  for (const row of Array.from(table.tBodies).flatMap((b) => Array.from(b.rows))) stackRow(table, row);
  return table;
}

export function stackRow(table: HTMLTableElement, row: HTMLTableRowElement): void {
  // A column whose header is for screen readers only (actions, a badge) gets no label: its cells speak for themselves.
  const heads = Array.from(table.tHead?.rows[0]?.cells ?? []).map((c) => (c.querySelector('.visually-hidden') ? '' : (c.textContent ?? '').trim()));
  Array.from(row.cells).forEach((cell, i) => {
    const label = heads[i] ?? '';
    if (label) cell.setAttribute('data-label', label);
    else cell.removeAttribute('data-label');
  });
}
