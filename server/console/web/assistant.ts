import { api, ApiError } from './api.js';
import { cardForm, field, h, replace } from './dom.js';
import type { Page } from './main.js';

/**
 * The assistant (company members): POST /api/assistant with the conversation held here (head office keeps no
 * transcript; the client resends it every time). The spec's limits are checked before sending: at most 24 turns and
 * 2,000 characters per question. 501 `assistant_off` says the assistant is not set up on this head office and hides
 * the navigation entry (remembered for this tab).
 */

export const MAX_TURNS = 24;
export const MAX_CHARS = 2000;
const OFF_KEY = 'footfall.assistant-off';

interface Turn {
  role: 'user' | 'assistant';
  text: string;
  used?: string[];
}

/** The conversation of this tab, in memory only; a different user signed in starts a new one. */
let conversation: { user: string; turns: Turn[] } = { user: '', turns: [] };

/** Forgets the conversation (signed out). */
export function forgetConversation(): void {
  conversation = { user: '', turns: [] };
}

/**
 * Whether head office has the assistant set up, as this tab learnt it (GET /api/assistant, or a 501 answer):
 * undefined until asked. The navigation shows the tab only when true.
 */
export function assistantAvailable(): boolean | undefined {
  try {
    const v = sessionStorage.getItem(OFF_KEY);
    return v === '1' ? false : v === '0' ? true : undefined;
  } catch {
    return undefined;
  }
}

let asking: Promise<boolean> | null = null;

/** GET /api/assistant once per tab; remembered in sessionStorage. A failed call says nothing (asked again later). */
export function checkAssistant(): Promise<boolean> {
  asking ??= api<{ available: boolean }>('GET', '/api/assistant')
    .then((r) => {
      try {
        sessionStorage.setItem(OFF_KEY, r.available ? '0' : '1');
      } catch {
        // storage unavailable: asked again on the next page
      }
      return r.available;
    })
    .catch(() => false)
    .finally(() => {
      asking = null;
    });
  return asking;
}

function markOff(): void {
  try {
    sessionStorage.setItem(OFF_KEY, '1');
  } catch {
    // storage unavailable: the entry is hidden for this page only
  }
  document.querySelector('header nav a[href="#/assistant"]')?.remove();
}

/** Characters as people count them (and as head office does): code points, so an emoji is one. */
const length = (text: string) => [...text].length;

export function renderAssistant(p: Page): void {
  if (conversation.user !== p.user.id) conversation = { user: p.user.id, turns: [] };
  const turns = conversation.turns;
  const chat = h('ol', { class: 'chat', id: 'chat', 'aria-live': 'polite' });
  const question = h('textarea', { name: 'question', rows: 3, required: true, placeholder: 'How many visitors did we have yesterday?' });
  const counter = `${MAX_CHARS.toLocaleString()} characters at most per question; ${MAX_TURNS} turns per conversation.`;
  const restart = h('button', { type: 'button', id: 'new-conversation' }, 'New conversation');
  const off = h('p', { class: 'notice info', role: 'status', id: 'assistant-off', hidden: true }, 'The assistant is not set up on this head office. Ask whoever runs it to connect a language model (docs/assistant.md).');

  const form = cardForm({
    id: 'ask',
    title: 'Ask a question',
    intro: 'The assistant answers from your company’s data, with your permissions. Each question sends the conversation so far; head office keeps no copy of it.',
    fields: [field('Your question', question, counter)],
    submitLabel: 'Ask',
    submit: async ({ msg }) => {
      const text = question.value.trim();
      if (text === '') return msg.show('Type a question first.');
      if (length(text) > MAX_CHARS) return msg.show(`That question has ${length(text).toLocaleString()} characters; the assistant takes at most ${MAX_CHARS.toLocaleString()}. Shorten it.`);
      if (turns.length + 1 > MAX_TURNS) return msg.show(`This conversation has reached ${MAX_TURNS} turns, the most the assistant takes. Start a new conversation.`);
      const history = [...turns.map(({ role, text: t }) => ({ role, text: t })), { role: 'user' as const, text }];
      msg.show('Thinking…', 'info');
      try {
        const r = await api<{ text: string; used: string[] }>('POST', '/api/assistant', { body: { history }, signal: p.signal });
        turns.push({ role: 'user', text }, { role: 'assistant', text: r.text, used: Array.isArray(r.used) ? r.used : [] });
        question.value = '';
        msg.show('');
        show();
        question.focus();
      } catch (err) {
        if (p.signal.aborted) return;
        if (err instanceof ApiError && err.status === 501) {
          msg.show('');
          setOff();
          return;
        }
        throw err; // the API's message in the form's line; the question stays for another try
      }
    },
  });

  function setOff(): void {
    markOff();
    off.hidden = false;
    form.hidden = true;
    restart.hidden = true;
  }

  restart.addEventListener('click', () => {
    turns.length = 0;
    show();
    question.focus();
  });

  function show(): void {
    replace(
      chat,
      ...turns.map((t) =>
        h(
          'li',
          { class: t.role },
          h('span', { class: 'visually-hidden' }, t.role === 'user' ? 'You: ' : 'Assistant: '),
          t.text,
          t.role === 'assistant' && t.used && t.used.length > 0 ? h('small', { class: 'used muted' }, `Consulted: ${t.used.join(', ')}`) : null,
        ),
      ),
    );
    restart.hidden = turns.length === 0;
  }

  replace(p.main, h('div', { class: 'page-head' }, h('h1', {}, 'Assistant'), restart), off, chat, form);
  show();
  if (assistantAvailable() === false) setOff();
}
