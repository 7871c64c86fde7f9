import net from 'node:net';
import tls from 'node:tls';
import mqttPacket, { type Packet, type IPublishPacket } from 'mqtt-packet';
import type { Logger } from 'pino';

/**
 * Head office's ingest session on an external broker: a persistent MQTT 5 session (clean start off, a session that
 * does not expire) subscribed at QoS 1, whose PUBACK for a message is written only when `onMessage`'s promise
 * resolves, i.e. once the visit or crossing is stored.
 *
 * Why not mqtt.js: it hands incoming packets over one at a time and goes on to the next only after the previous
 * one's acknowledgement (customHandleAcks' callback) is sent, so holding a PUBACK until the batch commits would
 * serialise ingest to one message per commit. Here messages are handed over as they arrive and acknowledged out of
 * band, up to the broker's in-flight window (Receive Maximum, below).
 *
 * A rejected message is not acknowledged; the session is dropped and opened again, and the broker delivers every
 * message still unacknowledged again (MQTT 5, 4.4). The same happens while head office is away: the broker queues the
 * shops' messages in this session until it comes back. Ingest is idempotent (a visit_id or crossing_id it already
 * has is a no-op), so a message delivered twice is stored once.
 */
export interface AckingSessionOptions {
  url: URL;
  username: string | undefined;
  password: string | undefined;
  clientId: string;
  filters: string[];
  /** Filters an earlier version of head office subscribed this session to: unsubscribed on every connect. */
  retired?: string[];
  log: Logger;
  /** In-flight QoS 1 messages the broker may send before an acknowledgement (MQTT 5 Receive Maximum). */
  receiveMaximum?: number;
  keepaliveS?: number;
  onMessage(topic: string, payload: Buffer): Promise<void>;
}

const SESSION_NEVER_EXPIRES = 0xffffffff;

export class AckingSession {
  private socket: net.Socket | undefined;
  private generation = 0;
  private stopping = false;
  private retryMs = 500;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private awaitingPong = false;
  private subscribed = false;
  private readonly waiters: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private counters = { delivered: 0, acked: 0, refused: 0, connects: 0 };

  constructor(private readonly opts: AckingSessionOptions) {}

  get ready(): boolean {
    return this.subscribed;
  }

  get stats(): { delivered: number; acked: number; refused: number; connects: number } {
    return { ...this.counters };
  }

  /** Connects; resolves once subscribed, rejects on the first failure (later ones are retried). */
  start(): Promise<void> {
    const first = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.connect();
    return first;
  }

  /** Ends the session's connection (the broker keeps the session and what it holds for the next start). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    const s = this.socket;
    this.socket = undefined;
    if (!s || s.destroyed) return;
    await new Promise<void>((resolve) => {
      s.once('close', () => resolve());
      s.end(mqttPacket.generate({ cmd: 'disconnect', reasonCode: 0 }, { protocolVersion: 5 }));
      setTimeout(() => s.destroy(), 2000).unref();
    });
  }

  private connect(): void {
    const gen = ++this.generation;
    const { url } = this.opts;
    const port = Number(url.port) || (url.protocol === 'mqtts:' ? 8883 : 1883);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const socket = url.protocol === 'mqtts:' ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect({ host, port });
    this.socket = socket;
    const parser = mqttPacket.parser({ protocolVersion: 5 });
    parser.on('packet', (p: Packet) => this.onPacket(gen, p));
    parser.on('error', (err: Error) => {
      this.opts.log.error({ err }, 'ingest session: bad packet from the broker');
      socket.destroy();
    });
    socket.on(url.protocol === 'mqtts:' ? 'secureConnect' : 'connect', () => {
      this.write({
        cmd: 'connect',
        protocolId: 'MQTT',
        protocolVersion: 5,
        clean: false,
        clientId: this.opts.clientId,
        keepalive: this.opts.keepaliveS ?? 30,
        ...(this.opts.username !== undefined ? { username: this.opts.username } : {}),
        ...(this.opts.password !== undefined ? { password: Buffer.from(this.opts.password) } : {}),
        properties: { sessionExpiryInterval: SESSION_NEVER_EXPIRES, receiveMaximum: this.opts.receiveMaximum ?? 1000 },
      });
    });
    socket.on('data', (chunk: Buffer) => parser.parse(chunk));
    socket.on('error', (err) => this.fail(gen, err));
    socket.on('close', () => this.onClose(gen));
  }

  private write(p: Packet): void {
    const s = this.socket;
    if (s && !s.destroyed) s.write(mqttPacket.generate(p, { protocolVersion: 5 }));
  }

  private onPacket(gen: number, p: Packet): void {
    if (gen !== this.generation) return;
    switch (p.cmd) {
      case 'connack': {
        if (p.reasonCode) {
          this.fail(gen, new Error(`the broker refused head office's ingest session (reason code ${p.reasonCode}): check FOOTFALL_MQTT_USERNAME and its ACL`));
          this.socket?.destroy();
          return;
        }
        this.counters.connects++;
        this.retryMs = 500;
        this.startPings(gen);
        if (this.opts.retired?.length) this.write({ cmd: 'unsubscribe', messageId: 2, unsubscriptions: this.opts.retired });
        // Subscribing again on a resumed session is harmless and covers a session the broker lost.
        this.write({ cmd: 'subscribe', messageId: 1, subscriptions: this.opts.filters.map((topic) => ({ topic, qos: 1 as const })) });
        return;
      }
      case 'suback': {
        const granted = p.granted.map((g) => (typeof g === 'number' ? g : (g as { qos: number }).qos));
        const refused = this.opts.filters.filter((_, i) => (granted[i] ?? 0x80) >= 0x80);
        if (refused.length > 0) {
          this.fail(gen, new Error(`the broker refused head office's subscription to ${refused.join(', ')}: its ACL must allow subscribing to ff/#`));
          this.socket?.destroy();
          return;
        }
        this.subscribed = true;
        for (const w of this.waiters.splice(0)) w.resolve();
        return;
      }
      case 'publish':
        this.onPublish(gen, p);
        return;
      case 'pingresp':
        this.awaitingPong = false;
        return;
      case 'disconnect':
        // 0x8E: another connection took this client id over: two head-office processes with one FOOTFALL_MQTT_CLIENT_ID
        // would take it from each other for ever.
        if (p.reasonCode === 0x8e) this.opts.log.error({ client_id: this.opts.clientId }, 'another connection took over head office\'s ingest session: each head-office process needs its own FOOTFALL_MQTT_CLIENT_ID');
        else this.opts.log.warn({ reason: p.reasonCode }, 'the broker ended head office\'s ingest session');
        this.socket?.destroy();
        return;
      default:
        return;
    }
  }

  private onPublish(gen: number, p: IPublishPacket): void {
    this.counters.delivered++;
    const payload = typeof p.payload === 'string' ? Buffer.from(p.payload) : p.payload;
    const messageId = p.messageId;
    this.opts.onMessage(p.topic, payload).then(
      () => {
        // An acknowledgement belongs to the connection it came on: after a reconnect the broker sends the message again.
        if (p.qos === 0 || gen !== this.generation || messageId === undefined) return;
        this.counters.acked++;
        this.write({ cmd: 'puback', messageId, reasonCode: 0 });
      },
      (err: unknown) => {
        this.counters.refused++;
        if (gen !== this.generation) return;
        this.opts.log.warn({ err, topic: p.topic }, 'message not stored: reconnecting so the broker sends it again');
        this.socket?.destroy();
      },
    );
  }

  private startPings(gen: number): void {
    clearInterval(this.pingTimer);
    this.awaitingPong = false;
    const every = ((this.opts.keepaliveS ?? 30) * 1000) / 2;
    this.pingTimer = setInterval(() => {
      if (gen !== this.generation) return;
      if (this.awaitingPong) {
        this.opts.log.warn('the broker stopped answering head office\'s ingest session: reconnecting');
        this.socket?.destroy();
        return;
      }
      this.awaitingPong = true;
      this.write({ cmd: 'pingreq' });
    }, every);
    this.pingTimer.unref();
  }

  private fail(gen: number, err: Error): void {
    if (gen !== this.generation) return;
    if (this.waiters.length > 0) {
      for (const w of this.waiters.splice(0)) w.reject(err);
      this.stopping = true;
      this.socket?.destroy();
      return;
    }
    this.opts.log.error({ err }, 'ingest session failed; reconnecting');
  }

  private onClose(gen: number): void {
    if (gen !== this.generation) return;
    this.subscribed = false;
    clearInterval(this.pingTimer);
    if (this.stopping) return;
    this.generation++; // late answers to the closed connection are ignored
    this.retryTimer = setTimeout(() => this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
  }
}
