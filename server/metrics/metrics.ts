/**
 * Prometheus metrics of head office (prom-client), for the operator's monitoring: HTTP requests by route, the
 * process (CPU, memory, event loop, GC), the broker, open streams, visit ingest, and the fleet of shop PCs as their
 * heartbeats describe it. Built only when FOOTFALL_METRICS_TOKEN is set (docs/operations.md); off, nothing is
 * collected and GET /metrics is a plain 404.
 *
 * Labels never carry a tenant, a person or an id: routes are their templates (`/api/shops/:id`), and the fleet
 * is counted over every company, so a scrape shows how the appliance runs, not whose data it holds.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { and, isNotNull, sql } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Store } from '../db/open.js';
import type { Broker } from '../broker/broker.js';
import type { ArrivalsHub } from '../visits/hub.js';
import type { LiveHub } from '../cameras/live.js';
import type { IngestStats } from '../visits/ingest.js';
import type { CrossingStats } from '../crossings/ingest.js';
import { one } from '../db/query.js';
import { shops } from '../db/tables.js';

/** What the gauges read at each scrape. */
export interface MetricSources {
  config: Config;
  store: Store;
  broker: Broker;
  arrivals: ArrivalsHub;
  live: LiveHub;
  ingest: { readonly stats: IngestStats };
  /** Crossing ingest (entries and exits at the door). */
  crossings?: { readonly stats: CrossingStats };
}

/** Ingest outcomes of a received crossing message, as `outcome` labels. */
const CROSSING_OUTCOMES: [keyof CrossingStats, string][] = [
  ['stored', 'stored'],
  ['duplicates', 'duplicate'],
  ['invalid', 'invalid'],
  ['unknownShop', 'unknown_shop'],
  ['suspended', 'suspended'],
];

/** Ingest outcomes of a received visit message, as `outcome` labels. */
const OUTCOMES: [keyof IngestStats, string][] = [
  ['stored', 'stored'],
  ['duplicates', 'duplicate'],
  ['invalid', 'invalid'],
  ['unknownShop', 'unknown_shop'],
  ['suspended', 'suspended'],
  ['failed', 'failed'],
];

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly duration: Histogram<'method' | 'route'>;
  private readonly privacyRuns: Counter<'outcome'>;
  private readonly privacyRemoved: Counter<'kind'>;
  /** The fleet's aggregate, read once per scrape (several gauges show parts of it). */
  private fleetNow: Fleet | undefined;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'footfall_' });
    this.requests = new Counter({
      name: 'footfall_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'footfall_http_request_duration_seconds',
      help: 'Time to answer an HTTP request (streams: how long they stayed open), by method and route template.',
      labelNames: ['method', 'route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.privacyRuns = new Counter({
      name: 'footfall_privacy_sweeps_total',
      help: 'Privacy sweeps (docs/privacy.md) by outcome: done or failed.',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.privacyRemoved = new Counter({
      name: 'footfall_privacy_removed_total',
      help: 'What privacy sweeps removed, by kind: template (a customer forgotten with their photos), photo (a file), visit and crossing (aged into daily counts by visit_retention_days).',
      labelNames: ['kind'],
      registers: [this.registry],
    });
  }

  /** A privacy sweep ended (server/privacy/sweep.ts). */
  privacySweep(outcome: 'done' | 'failed', removed: { templates: number; photos: number; visits?: number; crossings?: number }): void {
    this.privacyRuns.inc({ outcome });
    if (removed.templates) this.privacyRemoved.inc({ kind: 'template' }, removed.templates);
    if (removed.photos) this.privacyRemoved.inc({ kind: 'photo' }, removed.photos);
    if (removed.visits) this.privacyRemoved.inc({ kind: 'visit' }, removed.visits);
    if (removed.crossings) this.privacyRemoved.inc({ kind: 'crossing' }, removed.crossings);
  }

  /** One answered request; `route` is the matched route's template, or `unmatched`. */
  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.duration.observe({ method, route }, seconds);
  }

  /** Gauges and counters read from the running parts at each scrape. */
  watch(s: MetricSources): void {
    const registers = [this.registry];
    new Gauge({
      name: 'footfall_broker_clients',
      help: 'MQTT clients connected to the embedded broker (shop PCs).',
      registers,
      collect() {
        const n = s.broker.connectedClients;
        if (n !== undefined) this.set(n);
      },
    });
    new Gauge({
      name: 'footfall_arrival_streams',
      help: 'Open arrival streams (GET /api/visits/stream).',
      registers,
      collect() {
        this.set(s.arrivals.listeners);
      },
    });
    new Gauge({
      name: 'footfall_live_viewers',
      help: 'People watching a live camera view.',
      registers,
      collect() {
        this.set(s.live.totalViewers);
      },
    });
    new Counter({
      name: 'footfall_ingest_received_total',
      help: 'Visit messages received from shop PCs.',
      registers,
      collect() {
        this.reset();
        this.inc(s.ingest.stats.received);
      },
    });
    new Counter({
      name: 'footfall_ingest_visits_total',
      help: 'Visit messages by outcome: stored, duplicate (already stored), invalid, unknown_shop, suspended (company), failed.',
      labelNames: ['outcome'],
      registers,
      collect() {
        const stats = s.ingest.stats;
        this.reset();
        for (const [key, outcome] of OUTCOMES) this.inc({ outcome }, stats[key]);
      },
    });
    new Counter({
      name: 'footfall_ingest_batches_total',
      help: 'Transactions visit ingest has written.',
      registers,
      collect() {
        this.reset();
        this.inc(s.ingest.stats.batches);
      },
    });
    new Counter({
      name: 'footfall_identity_visits_total',
      help: 'Stored visits with a face, by what identity gave them: matched (a known customer) or new_customer.',
      labelNames: ['result'],
      registers,
      collect() {
        const stats = s.ingest.stats;
        this.reset();
        this.inc({ result: 'matched' }, stats.matched);
        this.inc({ result: 'new_customer' }, stats.newCustomers);
      },
    });
    const crossings = s.crossings;
    if (crossings) {
      new Counter({
        name: 'footfall_ingest_crossings_total',
        help: 'Crossing messages (entries and exits) by outcome: stored, duplicate (already stored), invalid, unknown_shop, suspended (company).',
        labelNames: ['outcome'],
        registers,
        collect() {
          const stats = crossings.stats;
          this.reset();
          for (const [key, outcome] of CROSSING_OUTCOMES) this.inc({ outcome }, stats[key]);
        },
      });
      new Counter({
        name: 'footfall_ingest_crossings_unknown_camera_total',
        help: 'Stored crossings whose camera_id names no camera of the shop (counted for the shop without a camera).',
        registers,
        collect() {
          this.reset();
          this.inc(crossings.stats.unknownCamera);
        },
      });
    }
    const fleet = async (): Promise<Fleet> => (this.fleetNow ??= await fleetOf(s));
    new Gauge({
      name: 'footfall_shop_pcs',
      help: 'Shops by their shop PC: online (a heartbeat within three intervals), offline (enrolled, silent), not_enrolled.',
      labelNames: ['state'],
      registers,
      async collect() {
        const f = await fleet();
        this.set({ state: 'online' }, f.online);
        this.set({ state: 'offline' }, f.enrolled - f.online);
        this.set({ state: 'not_enrolled' }, f.shops - f.enrolled);
      },
    });
    new Gauge({
      name: 'footfall_shop_pc_cameras',
      help: 'Cameras of online shop PCs, as their last heartbeat reported them: up or down.',
      labelNames: ['state'],
      registers,
      async collect() {
        const f = await fleet();
        this.set({ state: 'up' }, f.camerasUp);
        this.set({ state: 'down' }, f.camerasTotal - f.camerasUp);
      },
    });
    new Gauge({
      name: 'footfall_shop_pc_queued_visits',
      help: 'Visits waiting in the queues of online shop PCs (not yet delivered to head office).',
      registers,
      async collect() {
        this.set((await fleet()).queued);
      },
    });
    new Gauge({
      name: 'footfall_shop_pc_dropped_visits',
      help: 'Visits online shop PCs report they had to drop (queue full), since each started.',
      registers,
      async collect() {
        this.set((await fleet()).dropped);
      },
    });
  }

  /** The text exposition format. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    this.fleetNow = undefined;
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

interface Fleet {
  shops: number;
  enrolled: number;
  online: number;
  camerasUp: number;
  camerasTotal: number;
  queued: number;
  dropped: number;
}

/** Every fleet gauge from one aggregate query over the shops (all companies). */
async function fleetOf({ store, config }: MetricSources): Promise<Fleet> {
  const since = new Date(Date.now() - 3 * config.FOOTFALL_HEARTBEAT_INTERVAL_S * 1000).toISOString();
  const online = and(isNotNull(shops.agentTokenHash), sql`${shops.lastHeartbeatAt} >= ${since}`, sql`(${shops.offlineSince} is null or ${shops.offlineSince} < ${shops.lastHeartbeatAt})`);
  const row = await one(store.db
    .select({
      shops: sql<number>`count(*)`,
      enrolled: sql<number>`count(${shops.agentTokenHash})`,
      online: sql<number>`coalesce(sum(case when ${online} then 1 else 0 end), 0)`,
      camerasUp: sql<number>`coalesce(sum(case when ${online} then ${shops.camerasUp} else 0 end), 0)`,
      camerasTotal: sql<number>`coalesce(sum(case when ${online} then ${shops.camerasTotal} else 0 end), 0)`,
      queued: sql<number>`coalesce(sum(case when ${online} then ${shops.queued} else 0 end), 0)`,
      dropped: sql<number>`coalesce(sum(case when ${online} then ${shops.dropped} else 0 end), 0)`,
    })
    .from(shops));
  return row ?? { shops: 0, enrolled: 0, online: 0, camerasUp: 0, camerasTotal: 0, queued: 0, dropped: 0 };
}
