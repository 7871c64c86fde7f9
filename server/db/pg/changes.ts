import pg from 'pg';
import type { Logger } from 'pino';
import { watchVersion } from '../read-cache.js';
import type { PostgresStore } from './store.js';

/**
 * The read cache's "nothing changed" on PostgreSQL (server/db/read-cache.ts; docs/scale-out.md, "The read cache on
 * PostgreSQL"). Triggers (migration 0003) announce every statement that writes a table a cached answer may read:
 * NOTIFY footfall_changes, which PostgreSQL delivers when the transaction commits, after the commit is visible to
 * new snapshots, once per transaction. This process's counter moves on:
 * - each notification on a LISTEN connection of its own (any process's commits, this process's ingest thread's);
 * - each commit of this store's `tx`, before the caller goes on (so a request's own write is never answered from an
 *   older entry, without waiting for the notification);
 * - once after every (re)connect, for what was committed while no notification could arrive.
 * While that connection is not listening (starting, lost, connecting again) the version is NaN: nothing is served
 * from the cache, and nothing read then is kept.
 *
 * A connection that dies without a word (a firewall dropping an idle flow) would deliver nothing and look alive: it
 * is asked `select 1` every PING_MS, and taken as lost when no answer came within PING_MS either. So in that case
 * answers are served from the cache at most ~2 x PING_MS after a change; in every other case, the notification's
 * delay (a few ms on one network).
 */
export const CHANGES_CHANNEL = 'footfall_changes';

const PING_MS = 5000;

export interface ChangeListenerOptions {
  url: string;
  store: PostgresStore;
  log: Logger;
  /** The first pause before connecting again after a loss (doubles up to 5 s). */
  retryMs?: number;
}

export class ChangeListener {
  private client: pg.Client | undefined;
  private counter = 0;
  private listening = false;
  private stopped = false;
  private retryMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private pingSince: number | undefined;

  constructor(private readonly deps: ChangeListenerOptions) {
    this.retryMs = deps.retryMs ?? 250;
    deps.store.afterCommit(() => this.counter++);
    watchVersion(deps.store.db, () => (this.listening ? this.counter : Number.NaN));
  }

  /** Whether changes are heard now (else the read cache serves nothing). */
  get live(): boolean {
    return this.listening;
  }

  /** Resolves once listening (rejects if the first connection fails: head office does not start without it). */
  async start(): Promise<void> {
    await this.connect();
    this.pingTimer = setInterval(() => this.ping(), PING_MS);
    this.pingTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listening = false;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    watchVersion(this.deps.store.db, undefined);
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.deps.url, application_name: 'footfall-changes', keepAlive: true });
    client.on('notification', (n) => {
      if (n.channel === CHANGES_CHANNEL && this.client === client) this.counter++;
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query(`listen ${CHANGES_CHANNEL}`);
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
    // Anything may have been committed before LISTEN took effect: what was read before is not valid any more.
    this.counter++;
    this.listening = true;
    this.retryMs = this.deps.retryMs ?? 250;
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    this.listening = false;
    this.deps.log.warn({ err }, 'read cache: lost its PostgreSQL LISTEN connection; serving nothing from the cache until it is back');
    client.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    this.retryTimer = setTimeout(() => {
      this.connect().catch((err: unknown) => {
        this.deps.log.warn({ err }, 'read cache: could not connect to listen for changes; trying again');
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
