/**
 * Drains the durable queue to the broker: QoS 1 publishes, oldest first, at most `window` unacknowledged at a
 * time; an item is deleted from the queue only in the PUBACK callback.
 *
 * While the client is disconnected nothing new is handed to it. Items already handed over stay in mqtt.js's
 * outgoing store, which re-sends them (in order, before anything new) as soon as the connection is back; their
 * callbacks then fire on the PUBACK. A callback with an error puts the item back in the queue, to be sent again.
 * If the agent stops or dies meanwhile, the queue file still has every unacknowledged item.
 */
import type { MqttClient } from 'mqtt';
import { pino } from 'pino';
import type { DurableQueue, Log, QueueItem } from './queue.js';

export interface PublisherOptions {
  queue: DurableQueue;
  client: MqttClient;
  /** Unacknowledged publishes at a time; default 16. */
  window?: number;
  /** Wait after a publish failed while connected, before trying again; default 1 s. */
  retryMs?: number;
  log?: Log;
}

export class Publisher {
  private readonly queue: DurableQueue;
  private readonly client: MqttClient;
  private readonly window: number;
  private readonly retryMs: number;
  private readonly log: Log;
  private readonly inFlight = new Set<number>();
  private running = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private idleWaiters: (() => void)[] = [];
  private readonly pump = () => this.fill();

  constructor(options: PublisherOptions) {
    this.queue = options.queue;
    this.client = options.client;
    this.window = Math.max(1, options.window ?? 16);
    this.retryMs = options.retryMs ?? 1000;
    this.log = options.log ?? pino({ level: 'silent' });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.client.on('connect', this.pump);
    this.queue.on('enqueued', this.pump);
    this.fill();
  }

  /**
   * Stops handing items to the client. Items still unacknowledged stay in the queue file (sent again by the next
   * publisher); a PUBACK that still arrives deletes its item as usual.
   */
  stop(): void {
    this.running = false;
    clearTimeout(this.retryTimer);
    this.client.off('connect', this.pump);
    this.queue.off('enqueued', this.pump);
    if (this.queue.open) for (const id of this.inFlight) this.queue.release(id);
    this.inFlight.clear();
    this.wakeIdle();
  }

  /** Publishes handed to the client and not yet acknowledged. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Resolves when the queue is empty and nothing is in flight (or the publisher stops). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private fill(): void {
    if (!this.running || !this.client.connected || !this.queue.open) return;
    const room = this.window - this.inFlight.size;
    if (room <= 0) return;
    for (const item of this.queue.peek(room)) this.send(item);
  }

  private send(item: QueueItem): void {
    this.inFlight.add(item.id);
    this.client.publish(item.topic, item.payload, { qos: 1 }, (err) => this.done(item, err));
  }

  private done(item: QueueItem, err: Error | undefined): void {
    const mine = this.inFlight.delete(item.id);
    if (!this.queue.open) return;
    if (!err) {
      this.queue.ack(item.id);
    } else {
      if (mine) this.queue.release(item.id);
      this.log.debug({ err, id: item.id, topic: item.topic }, 'publish not acknowledged; will send again');
      // Connection trouble: the next 'connect' refills. Anything else (a refusal): do not spin on it.
      if (this.running && this.client.connected && !this.retryTimer) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.fill();
        }, this.retryMs);
        this.retryTimer.unref();
      }
      return;
    }
    this.fill();
    if (this.isIdle()) this.wakeIdle();
  }

  private isIdle(): boolean {
    return !this.running || (this.inFlight.size === 0 && (!this.queue.open || this.queue.stats().queued === 0));
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
