import { api } from './api.js';
import { cardForm, field, select } from './dom.js';

interface Subscription {
  frequency: 'daily' | 'weekly' | 'off';
  hour: number;
  email: string;
}

/** My account: the scheduled report e-mails (GET/PUT /api/reports/subscription; docs/reports.md, "Scheduled e-mails"). */
export function reportEmailsForm(): HTMLElement {
  const choice = select('frequency', [['daily', 'Every morning (yesterday)'], ['weekly', 'Every Monday (the week before)'], ['off', 'None']]);
  choice.disabled = true;
  const form = cardForm({
    id: 'report-emails',
    title: 'Report e-mails',
    intro: 'Headline figures against the period before, the shops ranked and the CSV attached, sent to your e-mail address.',
    fields: [field('Send me', choice)],
    submitLabel: 'Save',
    submit: async ({ msg }) => {
      const r = await api<Subscription>('PUT', '/api/reports/subscription', { body: { frequency: choice.value } });
      msg.show(r.frequency === 'off' ? 'You will get no report e-mails.' : `Saved: ${r.frequency} e-mails to ${r.email} at ${String(r.hour).padStart(2, '0')}:00.`, 'ok');
    },
  });
  void api<Subscription>('GET', '/api/reports/subscription').then(
    (r) => {
      choice.value = r.frequency;
      choice.disabled = false;
      form.querySelector('.small.muted')?.append(` They go out at ${String(r.hour).padStart(2, '0')}:00 in your company's time zone, to ${r.email}.`);
    },
    () => form.remove(),
  );
  return form;
}
