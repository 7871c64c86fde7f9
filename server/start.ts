import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { buildApp, fastRoutes } from './app.js';
import { withFastLane } from './http/fast-lane.js';
import { answerClientError } from './http/client-errors.js';
import type { Config } from './config.js';
import type { Deps } from './context.js';
import type { Store } from './db/open.js';
import { openStore } from './db/store.js';
import { laterCheckpointer } from './db/checkpointer.js';
import { loadKeys, unusableKeys, type Keys } from './crypto/keys.js';
import { openBroker, type Broker } from './broker/broker.js';
import { adminExists, createAdmin } from './auth/admins.js';
import { warmPasswords } from './auth/passwords.js';
import { pruneFailures } from './auth/login-limits.js';
import { pruneEndedSessions } from './auth/sessions.js';
import { imagesPurger } from './photos/local-store.js';
import { providerAccountsPurger } from './auth-service/purger.js';
import { startAuthRuntime } from './auth-service/runtime.js';
import { pruneRefreshTokens } from './idp/tokens.js';
import { createLogger } from './logger.js';
import { ShopLogins, shopLoginsPurger } from './shops/broker-logins.js';
import { ingestHeartbeats } from './shops/heartbeats.js';
import { LiveHub } from './cameras/live.js';
import { snapshotsPurger } from './cameras/snapshots.js';
import { sweepUnlinkedFaces } from './customers/faces.js';
import { pruneAudit } from './audit/query.js';
import { PrivacySweeper } from './privacy/sweep.js';
import { ArrivalsRelay } from './visits/arrivals-relay.js';
import { ChangeListener } from './db/pg/changes.js';
import { ArrivalsHub } from './visits/hub.js';
import { IdentityControl } from './visits/identity-control.js';
import { VisitIngest } from './visits/ingest.js';
import { CrossingIngest } from './crossings/ingest.js';
import { Metrics } from './metrics/metrics.js';
import { reportPool, type ReportPool } from './reports/pool.js';
import { AlertRunner } from './alerts/runner.js';
import { DigestScheduler } from './digests/scheduler.js';

export interface RunningServer {
  url: string;
  httpPort: number;
  mqttPort: number;
  deps: Deps;
  store: Store;
  broker: Broker;
  /** Visit ingest (its counters; `drained()` for tests and the benchmark). */
  ingest: VisitIngest;
  /** Crossing ingest (entries and exits; its counters). */
  crossings: CrossingIngest;
  /** The alert rules' evaluation and deliveries (docs/operations.md, "Alerts"). */
  alerts: AlertRunner;
  /** Scheduled report e-mails (docs/reports.md). */
  digests: DigestScheduler;
  /** The report threads (started on the first report; terminated on close). */
  reports: ReportPool;
  close(): Promise<void>;
}

export const DEFAULT_ADMIN_EMAIL = 'admin@footfall.local';

/**
 * Starts head office: database (migrated), key, broker, HTTP. On a first start with no platform admin it
 * creates one (FOOTFALL_ADMIN_EMAIL, default admin@footfall.local) and prints a generated password once.
 */
export async function startServer(config: Config, opts: { log?: Logger; announce?: (line: string) => void } = {}): Promise<RunningServer> {
  const log = opts.log ?? createLogger(config.FOOTFALL_LOG_LEVEL);
  const announce = opts.announce ?? ((line: string) => process.stdout.write(line + '\n'));
  // Once visits come, the WAL is checkpointed on a thread of its own, so no visit waits for one (server/db/checkpointer.ts).
  const store = await openStore(config);
  const checkpointer = store.dialect === 'sqlite' ? laterCheckpointer(config, log, store) : undefined;
  const closeStore = async () => {
    await checkpointer?.stop();
    await store.close();
  };
  let keys: Keys;
  try {
    keys = loadKeys(config);
  } catch (err) {
    // Start anyway (sign-in and reading data work), but refuse everything that needs the key (503 no_encryption_key).
    log.error({ err }, 'no usable encryption key: opening shops, enrolling shop PCs and camera passwords are refused until it is restored (do not delete the key file: secrets sealed with it would be lost)');
    keys = unusableKeys(err instanceof Error ? err.message : String(err));
  }
  const broker = await openBroker(config, log).catch(async (err: unknown) => {
    await closeStore();
    throw err;
  });
  await startAuthRuntime(config, store, log).catch(async (err: unknown) => {
    await broker.close();
    await closeStore();
    throw err;
  });
  const shopLogins = new ShopLogins({ store, keys, broker, log });
  broker.setAuth(shopLogins);
  const live = new LiveHub(broker, log);
  // Several processes share an external broker: a live view works whichever process the shop PC's uploads reach.
  if (broker.kind === 'external') await live.relayAcrossProcesses();
  const identities = new IdentityControl(keys);
  const arrivals = new ArrivalsHub();
  const purgers = [providerAccountsPurger(config, store), imagesPurger({ store, config }), shopLoginsPurger(store, shopLogins), snapshotsPurger({ store, config }), identities.purger()];
  const metrics = config.FOOTFALL_METRICS_TOKEN ? new Metrics() : undefined;
  const deps: Deps = { config, store, log, keys, broker, purgers, shopLogins, live, identities, arrivals, ...(metrics ? { metrics } : {}) };
  // The visit ingest thread and the WAL checkpoint thread start when shop PCs report (a heartbeat, a crossing or a
  // visit), not with head office: a head office nobody reports to yet does not pay for them (server/visits/ingest.ts).
  const ingest = new VisitIngest(deps, () => checkpointer?.start());
  const reporting = () => ingest.warm();
  const stopHeartbeats = await ingestHeartbeats({ ...deps, reporting });
  // PostgreSQL: every process's streams get every process's arrivals (server/visits/arrivals-relay.ts).
  const relay = store.dialect === 'postgres' ? new ArrivalsRelay({ url: config.FOOTFALL_DATABASE_URL!, store, config, hub: arrivals, log }) : undefined;
  await relay?.start();
  // PostgreSQL: the read cache hears every process's changes (server/db/pg/changes.ts).
  const changes = store.dialect === 'postgres' ? new ChangeListener({ url: config.FOOTFALL_DATABASE_URL!, store, log }) : undefined;
  await changes?.start();
  ingest.start();
  const crossings = new CrossingIngest({ ...deps, reporting });
  crossings.start();
  metrics?.watch({ config, store, broker, arrivals, live, ingest, crossings });
  const reports = reportPool(deps);
  const privacy = new PrivacySweeper(deps);
  deps.privacy = privacy;
  const alertRunner = new AlertRunner({ store, config, keys, log });
  const digests = new DigestScheduler({ store, config, log });

  let firstAdmin = false;
  if (!(await adminExists(store))) {
    const email = config.FOOTFALL_ADMIN_EMAIL ?? DEFAULT_ADMIN_EMAIL;
    const made = await createAdmin(store, email, config.FOOTFALL_ADMIN_PASSWORD);
    firstAdmin = true;
    if (made.generated) {
      announce(`\nPlatform admin created: ${made.email}\nPassword (shown once, not stored anywhere): ${made.password}\n`);
    } else {
      log.info({ email: made.email }, 'platform admin created from FOOTFALL_ADMIN_PASSWORD');
    }
  }
  void warmPasswords();

  const app = buildApp(deps);
  const callback = app.callback();
  // Koa answers its own errors (its onerror), so the promise of a request never rejects.
  const koa = (req: http.IncomingMessage, res: http.ServerResponse): void => void callback(req, res);
  const server = http.createServer(config.FOOTFALL_FAST_LANE ? withFastLane(deps, fastRoutes(), koa) : koa);
  server.requestTimeout = 0; // SSE streams stay open; each route bounds its own work
  server.on('clientError', answerClientError);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.FOOTFALL_HTTP_PORT, config.FOOTFALL_HTTP_HOST, () => resolve());
  }).catch(async (err: unknown) => {
    await broker.close();
    await closeStore();
    throw err;
  });
  const httpPort = (server.address() as AddressInfo).port;
  const host = config.FOOTFALL_HTTP_HOST === '0.0.0.0' || config.FOOTFALL_HTTP_HOST === '::' ? '127.0.0.1' : config.FOOTFALL_HTTP_HOST;
  const url = `http://${host}:${httpPort}`;
  log.info({ url, console: `${url}/`, mqtt_port: broker.port, data_dir: config.dataDir, key: keys.source }, 'head office ready');
  if (firstAdmin) announce(`Web console: ${url}/ (sign in there as the platform admin, then create the first company)\n`);

  alertRunner.start();
  digests.start();
  const prune = setInterval(() => void pruneAll(), 10 * 60_000);
  const pruneAll = async () => {
    try {
      await pruneFailures(store.db, config);
      await pruneEndedSessions(store.db);
      await pruneRefreshTokens(store);
    } catch (err) {
      log.error({ err }, 'login and session prune failed');
    }
    try {
      await pruneAudit(store.db, config.FOOTFALL_AUDIT_RETENTION_DAYS);
    } catch (err) {
      log.error({ err }, 'audit prune failed');
    }
    try {
      await sweepUnlinkedFaces(deps);
      await identities.pruneMarkers(store.db);
    } catch (err) {
      log.error({ err }, 'face image sweep or marker prune failed');
    }
  };
  prune.unref();
  privacy.start(); // a sweep cut short by a stop carries on now

  let closing: Promise<void> | undefined;
  return {
    url,
    httpPort,
    mqttPort: broker.port,
    deps,
    store,
    broker,
    ingest,
    crossings,
    reports,
    alerts: alertRunner,
    digests,
    close() {
      closing ??= (async () => {
        clearInterval(prune);
        await privacy.stop();
        live.close();
        arrivals.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await reports.close();
        await alertRunner.stop();
        await digests.stop();
        await stopHeartbeats();
        await ingest.stop();
        await relay?.stop();
        await changes?.stop();
        await crossings.stop();
        await broker.close();
        await closeStore();
      })();
      return closing;
    },
  };
}
