import type { Logger } from 'pino';
import { watchVersion } from '../read-cache.js';
import { PgListen } from './listen.js';
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
 * A connection that dies without a word is found by PgListen's ping (listen.ts): in that case answers are served
 * from the cache at most ~10 s after a change; in every other case, the notification's delay (a few ms on one
 * network).
 */
export const CHANGES_CHANNEL = 'footfall_changes';

export interface ChangeListenerOptions {
  url: string;
  store: PostgresStore;
  log: Logger;
  /** The first pause before connecting again after a loss (doubles up to 5 s). */
  retryMs?: number;
}

export class ChangeListener {
  private counter = 0;
  private readonly listen: PgListen;

  constructor(private readonly deps: ChangeListenerOptions) {
    this.listen = new PgListen({
      url: deps.url,
      channel: CHANGES_CHANNEL,
      applicationName: 'footfall-changes',
      who: 'read cache (serving nothing from it until it listens again)',
      log: deps.log,
      ...(deps.retryMs !== undefined ? { retryMs: deps.retryMs } : {}),
      onNotify: () => this.counter++,
      // Anything may have been committed before LISTEN took effect: what was read before is not valid any more.
      onListening: () => this.counter++,
    });
    deps.store.afterCommit(() => this.counter++);
    watchVersion(deps.store.db, () => (this.listen.live ? this.counter : Number.NaN));
  }

  /** Whether changes are heard now (else the read cache serves nothing). */
  get live(): boolean {
    return this.listen.live;
  }

  /** Resolves once listening (rejects if the first connection fails: head office does not start without it). */
  async start(): Promise<void> {
    await this.listen.start();
  }

  async stop(): Promise<void> {
    watchVersion(this.deps.store.db, undefined);
    await this.listen.stop();
  }
}
