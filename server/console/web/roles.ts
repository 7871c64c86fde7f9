import { h, plural, timeAgo } from './dom.js';
import type { Camera, CameraRole, CountingHealth } from './types.js';

/**
 * Camera roles and counting health on a camera card (docs/console.md "Camera roles", docs/shops-and-cameras.md): what
 * each role counts, in the words the card, the edit form and the line editor use, and a door camera's counting health
 * (people counted in the last hour, the last crossing, whether the person detector keeps up), flagged like a camera
 * that does not connect when it has counted nobody for an hour while the shop's other cameras saw people.
 */

export const ROLE_NAMES: Record<CameraRole, string> = {
  faces: 'Faces',
  door: 'Door counting',
  both: 'Door counting and faces',
};

/** What a camera of this role adds to the reports. */
export const ROLE_COUNTS: Record<CameraRole, string> = {
  faces: 'recognises faces: each person it sees is a visitor (new or returning); counts no entries.',
  door: 'counts entries and exits at its line; no face recognition, so it adds no visitors.',
  both: 'counts entries and exits at its line, and recognises faces: its people are visitors too. Only for a camera that sees faces from the front, close up.',
};

export function roleOf(c: Camera): CameraRole {
  return c.tuning?.role ?? (c.tuning?.line ? 'door' : 'faces');
}

/** The card's role line: "Role: Door counting — counts entries and exits …". */
export function roleLine(c: Camera): HTMLElement {
  const role = roleOf(c);
  return h('p', { class: 'small role-info', 'data-role': role }, h('strong', {}, `Role: ${ROLE_NAMES[role]}`), ` — ${ROLE_COUNTS[role]}`);
}

/** Radio buttons for the role; `only` limits the choice (the line editor offers the two that count a door). */
export function roleChoice(name: string, current: CameraRole, only: CameraRole[] = ['faces', 'door', 'both']): { el: HTMLElement; value(): CameraRole } {
  const inputs = only.map((role) => {
    const input = h('input', { type: 'radio', name, value: role, id: `${name}-${role}` });
    input.checked = role === current;
    return { role, input };
  });
  if (!inputs.some((i) => i.input.checked)) inputs[0]!.input.checked = true;
  const el = h(
    'fieldset',
    { class: 'role-choice' },
    h('legend', {}, 'What this camera counts'),
    ...inputs.map(({ role, input }) => h('div', { class: 'check' }, input, h('label', { for: input.id }, h('strong', {}, ROLE_NAMES[role]), `: ${ROLE_COUNTS[role]}`))),
  );
  return { el, value: () => inputs.find((i) => i.input.checked)?.role ?? current };
}

const STATE_WORDS: Record<CountingHealth['state'], [string, string]> = {
  counting: ['counting', 'good'],
  not_counting: ['not counting', 'bad'],
  no_line: ['no counting line', 'warn'],
  off: ['switched off', 'unknown'],
  unknown: ['unknown: the shop PC is offline', 'unknown'],
};

/** A door camera's counting health; null for a faces camera (or from a head office without it). */
export function countingBlock(c: Camera): HTMLElement | null {
  const k = c.counting;
  if (!k) return null;
  const [word, cls] = STATE_WORDS[k.state] ?? ['unknown', 'unknown'];
  const detector =
    k.detector_keeps_up === null
      ? 'detector: no recent report from the shop PC'
      : k.detector_keeps_up
        ? `detector keeps up (${pct(k.frames_dropped_share ?? 0)} of frames dropped)`
        : `detector falls behind (${pct(k.frames_dropped_share ?? 0)} of frames dropped)`;
  return h(
    'div',
    { class: `counting-health ${k.state}`, 'data-counting': k.state },
    h(
      'p',
      { class: 'small' },
      h('span', { class: `dot ${cls}` }, `Door count: ${word}`),
      ' · ',
      h('span', { class: 'counted-hour' }, `${plural(k.counted_last_hour, 'person', 'people')} counted in the last hour (${plural(k.entries_last_hour, 'entry', 'entries')}, ${plural(k.exits_last_hour, 'exit')})`),
      ' · last crossing ',
      timeAgo(k.last_crossing_at),
      ' · ',
      h('span', { class: `detector ${k.detector_keeps_up === false ? 'behind' : ''}` }, detector),
    ),
    k.problem ? h('p', { class: `notice ${k.state === 'not_counting' ? 'error' : 'warn'} small counting-problem`, role: 'status' }, k.problem) : null,
  );
}

function pct(f: number): string {
  return `${Math.round(f * 100)}%`;
}
