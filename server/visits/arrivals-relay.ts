import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Store } from '../db/open.js';
import { PgListen } from '../db/pg/listen.js';
import { run } from '../db/raw.js';
import type { ArrivalsHub, FeedItem } from './hub.js';
import { presentArrival, type FeedRow } from './presenter.js';
import { feedAfter, feedRange } from './service.js';

/**
 * The arrivals stream across head-office processes (PostgreSQL; issue 27 item 3). An ingest transaction announces
 * the positions of the visits it wrote (`announceArrivals`: NOTIFY, which PostgreSQL delivers only if the transaction
 * commits, and in commit order); every process listens (`ArrivalsRelay`) and hands the rows of each announced range
 * to its own streams. So a stream on any process gets every arrival, once, whichever process stored it. On SQLite
 * there is one process, and the ingest thread hands its rows over directly (server/visits/ingest.ts).
 */
export const ARRIVALS_CHANNEL = 'footfall_arrivals';

/** A NOTIFY payload must stay under 8,000 bytes; ranges are split across several notifications past this. */
const PAYLOAD_MAX = 7000;

/** A company's visits written by one transaction: positions from `first` to `last`. */
export type ArrivalRange = [companyId: string, first: number, last: number];

/** Inside the ingest transaction: announces its ranges (`company:first:last`, comma-separated). */
export async function announceArrivals(store: Store, ranges: readonly ArrivalRange[]): Promise<void> {
  let payload = '';
  for (const [company, first, last] of ranges) {
    const part = `${company}:${first}:${last}`;
    if (payload !== '' && payload.length + part.length + 1 > PAYLOAD_MAX) {
      await run(store.db, sql`select pg_notify(${ARRIVALS_CHANNEL}, ${payload})`);
      payload = '';
    }
    payload = payload === '' ? part : `${payload},${part}`;
  }
  if (payload !== '') await run(store.db, sql`select pg_notify(${ARRIVALS_CHANNEL}, ${payload})`);
}

/** Reads one notification's ranges; malformed parts are skipped. */
export function parseArrivals(payload: string): ArrivalRange[] {
  const out: ArrivalRange[] = [];
  for (const part of payload.split(',')) {
    const m = /^([^:]+):(\d+):(\d+)$/.exec(part);
    if (m) out.push([m[1]!, Number(m[2]), Number(m[3])]);
  }
  return out;
}

/** Feed rows as the streams send them. */
export function feedItems(rows: readonly FeedRow[], config: Config): FeedItem[] {
  return rows.map((f) => ({
    seq: f.seq,
    shopId: f.shopId,
    arrival: presentArrival(f, config),
    faceImageId: f.faceImageId ?? undefined,
    customerId: f.customerId ?? undefined,
  }));
}

/**
 * A company's committed visits `from` to `last`, read, presented and handed to its open arrival streams; nothing is
 * read when none is open. The main thread's on SQLite (VisitIngest), every process's on PostgreSQL (below).
 */
export async function publishRange(deps: { store: Store; config: Config; hub: ArrivalsHub }, [company, from, last]: ArrivalRange): Promise<void> {
  if (!deps.hub.listening(company) || from > last) return;
  deps.hub.publish(company, feedItems(await feedRange(deps.store, [company], from, last), deps.config));
}

/** Rows read after a reconnect, per company, at most (a stream that fell further behind reconnects by its cursor). */
const CATCH_UP_MAX = 1000;

/**
 * One process's listener: its own connection (not the pool's: LISTEN belongs to a session), LISTEN on the channel,
 * each notification's rows read and handed to the hub in the order PostgreSQL delivered them. Rows are read only for
 * companies with an open stream here. If the connection drops, it connects again and first hands over what was
 * committed meanwhile (the rows after the last position it handed over, per company with a stream).
 */
export class ArrivalsRelay {
  private readonly listen: PgListen;
  private queue: Promise<void> = Promise.resolve();
  /** The last position handed over (or skipped, with no stream open), per company. */
  private readonly lastSeq = new Map<string, number>();

  constructor(private readonly deps: { url: string; store: Store; config: Config; hub: ArrivalsHub; log: Logger }) {
    this.listen = new PgListen({
      url: deps.url,
      channel: ARRIVALS_CHANNEL,
      applicationName: 'footfall-arrivals',
      who: 'arrivals relay',
      log: deps.log,
      onNotify: (payload) => {
        if (payload === undefined) return;
        const ranges = parseArrivals(payload);
        this.queue = this.queue.then(() => this.deliver(ranges));
      },
      onListening: (first) => {
        if (!first) this.queue = this.queue.then(() => this.catchUp());
      },
    });
  }

  /** Resolves once listening (rejects if the first connection fails: head office does not start without it). */
  async start(): Promise<void> {
    await this.listen.start();
  }

  async stop(): Promise<void> {
    await this.listen.stop();
    await this.queue;
  }

  private async deliver(ranges: readonly ArrivalRange[]): Promise<void> {
    const { log } = this.deps;
    for (const [company, first, last] of ranges) {
      const from = Math.max(first, (this.lastSeq.get(company) ?? 0) + 1);
      this.lastSeq.set(company, Math.max(last, this.lastSeq.get(company) ?? 0));
      try {
        await publishRange(this.deps, [company, from, last]);
      } catch (err) {
        log.error({ err, company_id: company }, 'arrivals relay: rows of a committed range could not be read');
      }
    }
  }

  /** After a reconnect: what was committed while no notification could arrive, for the companies with a stream. */
  private async catchUp(): Promise<void> {
    const { store, config, hub, log } = this.deps;
    for (const [company, after] of this.lastSeq) {
      if (!hub.listening(company)) continue;
      try {
        const rows = await feedAfter(store, company, after, CATCH_UP_MAX);
        if (rows.length === 0) continue;
        this.lastSeq.set(company, rows[rows.length - 1]!.seq);
        hub.publish(company, feedItems(rows, config));
      } catch (err) {
        log.error({ err, company_id: company }, 'arrivals relay: catching up after a reconnect failed');
      }
    }
  }
}
