/**
 * The shop PC's MQTT connection to head office's broker.
 *
 * - mqtt.js 5 speaking MQTT 3.1.1 (head office's aedes broker speaks 3.1.1 only), the enrolment's stable client id
 *   and `clean: false`, so the broker keeps the session (subscription, QoS 1 notices) across reconnects.
 * - Reconnects itself with backoff (1 s doubling to 60 s, with jitter; back to 1 s only after a connection that
 *   lasted 30 s), re-using the client's message stores: QoS 1 publishes handed to the client before a
 *   disconnection are re-sent after it, and their callbacks fire on the PUBACK (agent/queue/publisher.ts relies on
 *   it). mqtt.js's own reconnect() would start with empty stores.
 * - Subscribes to `<prefix>down/#` on every connection and emits each notice parsed against shared/messages.ts.
 * - Says goodbye (`<prefix>up/goodbye`) on a clean stop and leaves the same message as its MQTT last will for a lost
 *   connection: head office marks the shop offline at once either way.
 * - A refused login (CONNACK 4/5: the shop was removed or the PC enrolled again elsewhere) is logged as an error
 *   naming the fix, and retried at the slowest pace.
 */
import { EventEmitter } from 'node:events';
import { connect, type IClientReconnectOptions, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import { DownMessage, type Goodbye } from '../../shared/messages.js';
import { UP } from '../../shared/topics.js';
import { Backoff, type BackoffOptions } from '../capture/backoff.js';

export interface BrokerLinkOptions {
  host: string;
  port: number;
  /** Connect with TLS (mqtts): the enrolment answer's `broker.tls` (an external broker behind TLS). */
  tls?: boolean;
  username: string;
  password: string;
  clientId: string;
  /** `ff/<company>/<shop>/`. */
  topicPrefix: string;
  log: Logger;
  /** Default: 1 s doubling to 60 s (docs/agent-protocol.md section 3). */
  backoff?: BackoffOptions;
  /** Default 30 s. */
  keepaliveS?: number;
  /** CONNACK wait; default 10 s. */
  connectTimeoutMs?: number;
  /** On stop, wait this long for unacknowledged publishes before dropping the connection; default 2 s. */
  stopWaitMs?: number;
  /** A connection that lasts this long starts the backoff from the beginning at its next loss; default 30 s. */
  stableMs?: number;
}

interface BrokerLinkEvents {
  /** Connected (again) and subscribed. */
  connected: [];
  disconnected: [];
  notice: [message: DownMessage];
}

export class BrokerLink extends EventEmitter<BrokerLinkEvents> {
  readonly client: MqttClient;
  private readonly opts: BrokerLinkOptions;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly slowest: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private stableTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private started = false;
  private refused = false;
  private failuresInRow = 0;
  private counters = { connects: 0, notices: 0 };

  constructor(options: BrokerLinkOptions) {
    super();
    this.opts = options;
    this.log = options.log;
    this.backoff = new Backoff({ initialMs: 1000, maxMs: 60_000, ...options.backoff });
    this.slowest = options.backoff?.maxMs ?? 60_000;
    this.client = connect({
      protocol: options.tls ? 'mqtts' : 'mqtt',
      host: options.host,
      port: options.port,
      username: options.username,
      password: options.password,
      clientId: options.clientId,
      protocolVersion: 4,
      clean: false,
      keepalive: options.keepaliveS ?? 30,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      reconnectPeriod: 0, // reconnection is ours (backoff), see scheduleReconnect
      queueQoSZero: false, // a heartbeat is worth nothing later
      resubscribe: false,
      manualConnect: true,
      // Head office marks the shop offline at once when the connection is lost without a DISCONNECT (shared/messages.ts Goodbye).
      will: { topic: options.topicPrefix + UP.goodbye, payload: Buffer.from(JSON.stringify({ reason: 'connection_lost' } satisfies Goodbye)), qos: 1, retain: false },
    });
    this.client.on('connect', (connack) => this.onConnect(connack.sessionPresent));
    this.client.on('close', () => this.onClose());
    this.client.on('error', (err) => this.onError(err));
    this.client.on('message', (topic, payload) => this.onMessage(topic, payload));
  }

  get connected(): boolean {
    return this.client.connected;
  }

  /** The broker refused the login (shop removed, or another PC enrolled for it): re-enrolment needed. */
  get refusedLogin(): boolean {
    return this.refused;
  }

  get stats(): { connects: number; notices: number } {
    return { ...this.counters };
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.log.info({ broker: `${this.opts.host}:${this.opts.port}`, client_id: this.opts.clientId }, 'connecting to the broker');
    this.client.connect();
  }

  /** QoS 0, only while connected (a heartbeat is not worth keeping). */
  publishNow(topic: string, payload: string): boolean {
    if (!this.client.connected) return false;
    this.client.publish(topic, payload, { qos: 0 }, (err) => {
      if (err) this.log.debug({ err, topic }, 'publish failed');
    });
    return true;
  }

  /** Says goodbye (head office marks the shop offline at once) and disconnects cleanly (DISCONNECT packet); no reconnection afterwards. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    clearTimeout(this.stableTimer);
    if (this.client.connected) {
      const bye: Goodbye = { reason: 'stopping', sent_at: new Date().toISOString() };
      // QoS 1: end(false) below waits for its PUBACK (bounded by stopWaitMs like every unacknowledged publish).
      this.client.publish(this.opts.topicPrefix + UP.goodbye, JSON.stringify(bye), { qos: 1 }, (err) => {
        if (err) this.log.debug({ err }, 'goodbye not sent');
      });
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        // Publishes still unacknowledged (the broker is gone or slow): drop the socket rather than wait. Not with
        // end(true): mqtt.js ignores it once the end(false) below is under way, and the socket stayed open.
        const stream = this.client.stream;
        if (!stream || stream.destroyed) return resolve();
        stream.once('close', () => resolve());
        stream.destroy();
      }, this.opts.stopWaitMs ?? 2000);
      this.client.end(false, {}, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private onConnect(sessionPresent: boolean): void {
    this.counters.connects++;
    // Only a connection that lasts starts the backoff over: one the broker closes at once (another PC with this
    // identity takes the session over, a refused publish) would otherwise be retried at the first wait for ever.
    clearTimeout(this.stableTimer);
    this.stableTimer = setTimeout(() => this.backoff.reset(), this.opts.stableMs ?? 30_000);
    this.stableTimer.unref();
    this.failuresInRow = 0;
    if (this.refused) this.log.info('the broker accepts this shop PC again');
    this.refused = false;
    this.log.info({ session_present: sessionPresent }, 'connected to the broker');
    const filter = `${this.opts.topicPrefix}down/#`;
    this.client.subscribe(filter, { qos: 1 }, (err, granted) => {
      if (err) {
        this.log.warn({ err }, 'subscription failed');
      } else if (granted?.some((g) => g.qos === 128)) {
        this.log.error({ filter }, 'the broker refused our subscription: head office notices will not arrive (polling continues)');
      }
    });
    this.emit('connected');
  }

  private onClose(): void {
    clearTimeout(this.stableTimer);
    const wasConnected = this.failuresInRow === 0 && this.counters.connects > 0;
    if (this.stopping) return;
    if (wasConnected) {
      this.log.warn('lost the broker connection; reconnecting');
      this.emit('disconnected');
    }
    this.failuresInRow++;
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopping || this.retryTimer) return;
    const delay = this.refused ? this.slowest : this.backoff.next();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.stopping || this.client.connected) return;
      // Same stores: what is in flight is re-sent after the CONNACK.
      const stores = { incomingStore: this.client.incomingStore, outgoingStore: this.client.outgoingStore } as unknown as IClientReconnectOptions;
      this.client.reconnect(stores);
    }, delay);
    this.retryTimer.unref();
  }

  private onError(err: Error & { code?: string | number }): void {
    if (this.stopping) return;
    const code = err.code;
    if (code === 4 || code === 5 || code === 134 || code === 135) {
      if (!this.refused) {
        this.log.error(
          { code },
          'the broker refused this shop PC (the shop was removed, or another PC was enrolled for it): enrol this PC again with a new code (footfall enrol --force ...) and restart the agent',
        );
      }
      this.refused = true;
      return;
    }
    // One warning per outage, then quiet.
    if (this.failuresInRow <= 1) this.log.warn({ err: err.message, broker: `${this.opts.host}:${this.opts.port}` }, 'broker connection failed; retrying');
    else this.log.debug({ err: err.message }, 'broker connection failed; retrying');
  }

  private onMessage(topic: string, payload: Buffer): void {
    let json: unknown;
    try {
      json = JSON.parse(payload.toString('utf8'));
    } catch {
      if (payload.length > 0) this.log.warn({ topic }, 'notice is not JSON; ignored');
      return;
    }
    const parsed = DownMessage.safeParse(json);
    if (!parsed.success) {
      this.log.warn({ topic, issues: parsed.error.issues.slice(0, 3) }, 'notice not understood; ignored');
      return;
    }
    this.counters.notices++;
    this.emit('notice', parsed.data);
  }
}
