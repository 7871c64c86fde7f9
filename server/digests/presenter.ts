import { footfallCsv } from '../reports/csv.js';
import { presentFootfall, ratio } from '../reports/presenter.js';
import type { digestFigures, Period } from './service.js';

const change = (now: number, before: number) => (before === 0 ? (now === 0 ? 'no change' : 'new') : `${now >= before ? '+' : ''}${Math.round(((now - before) / before) * 1000) / 10} %`);
const pct = (x: number) => `${Math.round(ratio(x) * 1000) / 10} %`;

/** The scheduled e-mail (docs/reports.md, "Scheduled e-mails"): headline figures against the period before, shops ranked, the footfall CSV attached. */
export function digestEmail(company: string, zone: string, p: Period, f: Awaited<ReturnType<typeof digestFigures>>) {
  const span = p.from === p.to ? p.from : `${p.from} to ${p.to}`;
  const prev = p.prevFrom === p.prevTo ? p.prevFrom : `${p.prevFrom} to ${p.prevTo}`;
  const rows: [string, number | string, number | string][] = [
    ['Visitors', f.now.total, f.before.total],
    ['Visits', f.now.visits, f.before.visits],
    ['Entries', f.now.entries, f.before.entries],
    ['Purchasers', f.conv.purchasers, f.convBefore.purchasers],
    ['Conversion', pct(f.conv.conversion), pct(f.convBefore.conversion)],
  ];
  const numeric = (v: number | string, w: number | string) => (typeof v === 'number' && typeof w === 'number' ? `  (${change(v, w)})` : '');
  const text = [
    `${company}: ${p.kind === 'daily' ? 'daily' : 'weekly'} report for ${span} (days in ${zone}).`,
    '',
    ...rows.map(([k, v, w]) => `${k.padEnd(12)} ${String(v).padStart(8)}   before: ${String(w).padStart(8)}${numeric(v, w)}`),
    '',
    `"Before" is ${prev}.`,
    '',
    'Shops by visitors:',
    ...f.ranking.map((s, i) => `${String(i + 1).padStart(3)}. ${s.name}: ${s.visitors}`),
    '',
    `The ${p.kind === 'daily' ? 'hour-by-hour' : 'day-by-day'} footfall is attached as CSV.`,
    '',
    '-- ',
    'Footfall head office. To stop or change these e-mails: console, My account, "Report e-mails".',
  ].join('\n');
  return {
    subject: `[Footfall] ${company} ${p.kind} report, ${span}: ${f.now.total} visitors (${change(f.now.total, f.before.total)})`,
    text: text + '\n',
    csv: { filename: `footfall-${p.from}-to-${p.to}.csv`, content: footfallCsv(presentFootfall(f.now)) },
  };
}
