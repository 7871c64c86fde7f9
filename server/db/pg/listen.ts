import pg from 'pg';
import type { Logger } from 'pino';

/** A silent connection is asked `select 1` this often, and taken as lost when no answer came within as long. */
const PING_MS = 5000;

export interface ListenOptions {
  url: string;
  channel: string;
  /** `application_name` of the session (pg_stat_activity). */
  applicationName: string;
  /** Who listens, in log lines ("read cache", "arrivals relay"). */
  who: string;
  log: Logger;
  /** Each notification on the channel, in the order PostgreSQL delivered them. */
  onNotify(payload: string | undefined): void;
  /** Listening (again): `first` on start; otherwise after a loss, when notifications may have been missed. */
  onListening(first: boolean): void;
  /** The first pause before connecting again after a loss (doubles up to 5 s). */
  retryMs?: number;
}

/**
 * A LISTEN session that stays listening: a connection of its own (not the pool's: LISTEN belongs to a session),
 * connected again after a loss (0.25 s doubling to 5 s). A connection that dies without a word (a firewall dropping
 * an idle flow) would deliver nothing and look alive, so it is pinged every PING_MS and taken as lost when no answer
 * came within PING_MS either. Used by the read cache's change counter (changes.ts) and the arrivals relay
 * (server/visits/arrivals-relay.ts).
 */
export class PgListen {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private pingSince: number | undefined;

  constructor(private readonly o: ListenOptions) {
    this.retryMs = o.retryMs ?? 250;
  }

  /** Whether the session is listening now. */
  get live(): boolean {
    return this.client !== undefined && !this.stopped;
  }

  /** Resolves once listening (rejects if the first connection fails: head office does not start without it). */
  async start(): Promise<void> {
    await this.connect(true);
    this.pingTimer = setInterval(() => this.ping(), PING_MS);
    this.pingTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }

  private async connect(first: boolean): Promise<void> {
    const client = new pg.Client({ connectionString: this.o.url, application_name: this.o.applicationName, keepAlive: true });
    client.on('notification', (n) => {
      if (n.channel === this.o.channel && this.client === client) this.o.onNotify(n.payload);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query(`listen ${this.o.channel}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.pingSince = undefined;
    this.retryMs = this.o.retryMs ?? 250;
    this.o.onListening(first);
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    this.o.log.warn({ err }, `${this.o.who}: lost its PostgreSQL LISTEN connection; connecting again`);
    client.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    this.retryTimer = setTimeout(() => {
      this.connect(false).catch((err: unknown) => {
        this.o.log.warn({ err }, `${this.o.who}: could not connect to listen; trying again`);
        this.retryMs = Math.min(this.retryMs * 2, 5000);
        this.retry();
      });
    }, this.retryMs);
    this.retryTimer.unref();
  }

  private ping(): void {
    const client = this.client;
    if (!client) return;
    if (this.pingSince !== undefined) {
      if (Date.now() - this.pingSince >= PING_MS) this.lost(client, new Error(`no answer to a ping in ${PING_MS} ms`));
      return;
    }
    this.pingSince = Date.now();
    client.query('select 1').then(
      () => {
        if (this.client === client) this.pingSince = undefined;
      },
      () => undefined, // the connection's own 'error' event reports it
    );
  }
}
