import { createHmac } from 'node:crypto';
import { and, asc, eq, isNull, lte } from 'drizzle-orm';
import type { Transporter } from 'nodemailer';
import { createMailer } from '../mail.js';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Keys } from '../crypto/keys.js';
import { alone } from '../db/alone.js';
import type { Store } from '../db/open.js';
import { settingsOf } from './service.js';
import { alertEmail, alertPayload, type AlertView } from './presenter.js';
import { alertDeliveries, alerts, shops, cameras } from '../db/tables.js';

/**
 * Sends queued alert deliveries (docs/operations.md, "Alerts"): e-mail through the SMTP server of FOOTFALL_SMTP_*,
 * webhooks as a signed JSON POST. A failed delivery is tried again after FOOTFALL_ALERT_RETRY_BASE_S, doubling each
 * time (at most an hour apart), until FOOTFALL_ALERT_RETRY_MAX attempts; then it is marked failed and logged.
 * Deliveries are rows, so a restart resumes them.
 */
export class Deliverer {
  private mailer: Transporter | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: { store: Store; config: Config; keys: Keys; log: Logger }) {
    this.mailer = createMailer(deps.config);
  }

  /** Sends what is due; a call while one runs waits for it (one sender at a time, in one process of several). */
  run(now = Date.now()): Promise<void> {
    this.running ??= alone(this.deps.store, 'alert-deliveries', () => this.sendDue(now))
      .then(() => undefined)
      .finally(() => (this.running = undefined));
    return this.running;
  }

  close(): void {
    this.mailer?.close();
  }

  private async sendDue(now: number): Promise<void> {
    const { store, config, log } = this.deps;
    const due = await store.db
      .select({ d: alertDeliveries, a: alerts, shopName: shops.name, shopSlug: shops.slug, cameraId: cameras.cameraId, cameraLabel: cameras.label })
      .from(alertDeliveries)
      .innerJoin(alerts, eq(alerts.seq, alertDeliveries.alertSeq))
      .innerJoin(shops, eq(shops.id, alerts.shopId))
      .leftJoin(cameras, eq(cameras.id, alerts.cameraUuid))
      .where(and(isNull(alertDeliveries.deliveredAt), isNull(alertDeliveries.failedAt), lte(alertDeliveries.nextAt, new Date(now).toISOString())))
      .orderBy(asc(alertDeliveries.id))
      .limit(50);
    for (const row of due) {
      const view = { alert: row.a, shopName: row.shopName, shopSlug: row.shopSlug, cameraId: row.cameraId, cameraLabel: row.cameraLabel };
      let error: string | null = null;
      try {
        if (row.d.channel === 'email') await this.email(row.d.target, row.d.event, view);
        else await this.webhook(row.d.target, row.d.event, row.d.id, view);
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const attempts = row.d.attempts + 1;
      const at = new Date().toISOString();
      if (error === null) {
        await store.db.update(alertDeliveries).set({ attempts, deliveredAt: at, lastError: null }).where(eq(alertDeliveries.id, row.d.id));
        continue;
      }
      const giveUp = attempts >= config.FOOTFALL_ALERT_RETRY_MAX;
      const wait = Math.min(3_600_000, config.FOOTFALL_ALERT_RETRY_BASE_S * 1000 * 2 ** (attempts - 1));
      await store.db
        .update(alertDeliveries)
        .set({ attempts, lastError: error.slice(0, 500), ...(giveUp ? { failedAt: at } : { nextAt: new Date(Date.now() + wait).toISOString() }) })
        .where(eq(alertDeliveries.id, row.d.id));
      (giveUp ? log.error.bind(log) : log.warn.bind(log))({ channel: row.d.channel, alert_id: row.a.id, attempts, error }, giveUp ? 'alert delivery given up' : 'alert delivery failed; will retry');
    }
  }

  private async email(to: string, event: 'raised' | 'cleared', view: AlertView): Promise<void> {
    if (!this.mailer) throw new Error('e-mail is not configured on this head office (FOOTFALL_SMTP_HOST)');
    const mail = alertEmail(event, view);
    await this.mailer.sendMail({ from: this.deps.config.FOOTFALL_SMTP_FROM, to, subject: mail.subject, text: mail.text, headers: { 'X-Footfall-Alert': view.alert.id } });
  }

  private async webhook(url: string, event: 'raised' | 'cleared', deliveryId: number, view: AlertView): Promise<void> {
    const { store, keys, config } = this.deps;
    const sealed = (await settingsOf(store.db, view.alert.companyId)).webhookSecret;
    if (!sealed) throw new Error('the webhook has no secret');
    const body = JSON.stringify(alertPayload(event, view));
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', keys.decrypt(sealed)).update(`${timestamp}.${body}`).digest('hex');
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'footfall-alerts',
        'X-Footfall-Event': `alert.${event}`,
        'X-Footfall-Delivery': String(deliveryId),
        'X-Footfall-Timestamp': timestamp,
        'X-Footfall-Signature': `sha256=${signature}`,
      },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(config.FOOTFALL_WEBHOOK_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    if (res.status < 200 || res.status >= 300) throw new Error(`the webhook answered ${res.status}`);
  }
}
