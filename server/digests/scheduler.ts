import { eq } from 'drizzle-orm';
import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { alone } from '../db/alone.js';
import type { Store } from '../db/open.js';
import { createMailer } from '../mail.js';
import { digestEmail } from './presenter.js';
import { companyZone, digestFigures, duePeriods, markSent, recipientsDue } from './service.js';
import { companies } from '../db/tables.js';

/**
 * Scheduled report e-mails (docs/reports.md, "Scheduled e-mails"): every minute, for each active company, the
 * periods due in its zone at FOOTFALL_REPORT_EMAIL_HOUR, to each member who wants them and has not had them. A
 * member is marked only once their e-mail was accepted by the SMTP server, so a failure is tried again next minute.
 * Off without FOOTFALL_SMTP_HOST.
 */
export class DigestScheduler {
  private readonly mailer: Transporter | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<number> | undefined;

  constructor(private readonly deps: { store: Store; config: Config; log: Logger }) {
    this.mailer = createMailer(deps.config);
  }

  start(): void {
    if (!this.mailer) return;
    this.timer = setInterval(() => void this.tick(), 60_000);
    this.timer.unref();
  }

  /** One pass at `now`; resolves with the number of e-mails sent. */
  tick(now = Date.now()): Promise<number> {
    // One process of several sends (server/db/alone.ts); the others' passes find nothing to do meanwhile.
    this.pass ??= alone(this.deps.store, 'report-emails', () => this.send(now))
      .then((n) => n ?? 0)
      .finally(() => (this.pass = undefined));
    return this.pass;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.pass?.catch(() => 0);
    this.mailer?.close();
  }

  private async send(now: number): Promise<number> {
    const { store, config, log } = this.deps;
    if (!this.mailer) return 0;
    let sent = 0;
    const list = await store.db.select({ id: companies.id, name: companies.name }).from(companies).where(eq(companies.active, true));
    for (const company of list) {
      const zone = await companyZone(store.db, company.id);
      for (const period of duePeriods(zone, config.FOOTFALL_REPORT_EMAIL_HOUR, now)) {
        const to = await recipientsDue(store.db, company.id, period);
        if (to.length === 0) continue;
        const mail = digestEmail(company.name, zone, period, await digestFigures(store.db, company.id, zone, period));
        for (const member of to) {
          try {
            await this.mailer.sendMail({
              from: config.FOOTFALL_SMTP_FROM,
              to: member.email,
              subject: mail.subject,
              text: mail.text,
              attachments: [{ filename: mail.csv.filename, content: mail.csv.content, contentType: 'text/csv; charset=utf-8' }],
            });
            await markSent(store.db, member, company.id, period);
            sent++;
          } catch (err) {
            log.warn({ err, company_id: company.id, user_id: member.id, period: period.from }, 'report e-mail not sent; will retry');
          }
        }
      }
    }
    return sent;
  }
}
