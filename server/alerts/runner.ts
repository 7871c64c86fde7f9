import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Keys } from '../crypto/keys.js';
import type { Store } from '../db/open.js';
import { Deliverer } from './delivery.js';
import { evaluate, type Transition } from './service.js';

/**
 * Evaluates the alert rules every FOOTFALL_ALERT_INTERVAL_S and sends what that raised or cleared (and any delivery
 * due for a retry) right after. One pass at a time; a failing pass is logged and the next one runs as usual.
 */
export class AlertRunner {
  private readonly pending = new Map<string, number>();
  private readonly deliverer: Deliverer;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;
  private stopped = false;
  /** Until then a shop that looks offline is unknown (its PC has had no time to report to this process). */
  private readonly graceUntil: number;

  constructor(private readonly deps: { store: Store; config: Config; keys: Keys; log: Logger }) {
    this.deliverer = new Deliverer(deps);
    this.graceUntil = Date.now() + 3 * deps.config.FOOTFALL_HEARTBEAT_INTERVAL_S * 1000;
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.deps.config.FOOTFALL_ALERT_INTERVAL_S * 1000);
    this.timer.unref();
  }

  /** One evaluation and delivery pass (also for tests); resolves when done. */
  tick(now = Date.now()): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.pass ??= (async () => {
      try {
        const changed: Transition[] = await evaluate(this.deps.store, this.deps.config, this.pending, now, now >= this.graceUntil);
        for (const t of changed) this.deps.log.info({ alert_id: t.alert.id, kind: t.alert.kind, shop_id: t.alert.shopId, event: t.event }, `alert ${t.event}`);
        await this.deliverer.run();
      } catch (err) {
        this.deps.log.error({ err }, 'alert pass failed');
      }
    })().finally(() => (this.pass = undefined));
    return this.pass;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.pass;
    this.deliverer.close();
  }
}
