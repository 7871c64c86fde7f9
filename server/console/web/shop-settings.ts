import { api } from './api.js';
import { cardForm, field, h } from './dom.js';
import { WEEKDAY_KEYS, type OpeningHours, type Shop } from './types.js';

const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

/** "09:00-13:00, 14:00-21:00" for a day's periods; empty when closed. */
export function periodsText(periods: { open: string; close: string }[]): string {
  return periods.map((p) => `${p.open}-${p.close}`).join(', ');
}

/** The reverse; throws a sentence naming the day when a period is not HH:MM-HH:MM. */
function parsePeriods(day: string, text: string): { open: string; close: string }[] {
  const parts = text.split(',').map((t) => t.trim()).filter(Boolean);
  return parts.map((part) => {
    const m = /^(\d{1,2}):(\d{2})\s*[-–]\s*(\d{1,2}):(\d{2})$/.exec(part);
    if (!m) throw new Error(`${day}: write the hours as 09:00-21:00 (several periods separated by commas), or leave it empty when closed.`);
    const pad = (x: string) => x.padStart(2, '0');
    return { open: `${pad(m[1]!)}:${m[2]}`, close: `${pad(m[3]!)}:${m[4]}` };
  });
}

/** Managers: PATCH /api/sites/{site} with opening hours, region and occupancy limit (docs/operations.md). */
export function shopSettingsForm(s: Shop, done: (updated: Shop) => void): HTMLElement {
  const region = h('input', { name: 'region', maxlength: 100, autocomplete: 'off', placeholder: 'e.g. Mumbai', value: s.region ?? '' });
  const limit = h('input', { name: 'occupancy_limit', type: 'number', min: 1, max: 100000, placeholder: 'none', value: s.occupancy_limit == null ? '' : String(s.occupancy_limit) });
  const days = WEEKDAY_KEYS.map((k) =>
    h('input', { name: `hours-${k}`, autocomplete: 'off', placeholder: 'closed', value: s.opening_hours ? periodsText(s.opening_hours[k]) : '' }),
  );
  return cardForm({
    id: 'shop-settings',
    title: 'Shop settings',
    intro: `Opening hours are local time in ${s.timezone}; leave a day empty when the shop is closed, and every day empty when you do not want to set hours. They shade the busiest-hours heatmap, give reports their visitors per open hour, and let the door alert know when the shop is open.`,
    fields: [
      h('div', { class: 'inline' }, field('Region', region, 'Groups shops in the overview and reports.'), field('Occupancy limit', limit, 'People allowed in at once; an alert fires above it.')),
      h('div', { class: 'hours-grid' }, ...days.map((input, i) => field(DAY_NAMES[i]!, input))),
    ],
    submitLabel: 'Save settings',
    submit: async ({ msg }) => {
      let hours: OpeningHours | null = null;
      try {
        const parsed = WEEKDAY_KEYS.map((k, i) => [k, parsePeriods(DAY_NAMES[i]!, days[i]!.value)] as const);
        if (parsed.some(([, p]) => p.length > 0)) hours = Object.fromEntries(parsed) as OpeningHours;
      } catch (err) {
        msg.show((err as Error).message);
        return;
      }
      const body = { region: region.value.trim() || null, occupancy_limit: limit.value.trim() ? Number(limit.value) : null, opening_hours: hours };
      const updated = await api<Shop>('PATCH', `/api/sites/${encodeURIComponent(s.slug)}`, { body });
      msg.show('Saved.', 'ok');
      done(updated);
    },
  });
}

/** "Mon 10:00-21:00 · Tue closed ..." in three letters a day. */
export function hoursSummary(hours: OpeningHours): string {
  return WEEKDAY_KEYS.map((k, i) => `${DAY_NAMES[i]!.slice(0, 3)} ${hours[k].length ? periodsText(hours[k]) : 'closed'}`).join(' · ');
}
