import { parentPort, workerData } from 'node:worker_threads';
import { loadKeys, unusableKeys, type Keys } from '../crypto/keys.js';
import { openStore } from '../db/store.js';
import { createLogger } from '../logger.js';
import { Identities } from './identities.js';
import { IngestCore } from './ingest-core.js';
import type { ArrivalRange } from './arrivals-relay.js';
import type { FromWorker, ToWorker, WorkerInit } from './ingest-protocol.js';

/**
 * The ingest thread: its own SQLite connection (WAL: the main thread reads while this one writes; writers take
 * turns) or PostgreSQL pool, the face galleries, and IngestCore. The main thread (VisitIngest) forwards every visit message and the
 * identity notices (erasure, merge, company deletion) and gets back the committed rows for the arrival streams.
 */
const port = parentPort!;
const send = (m: FromWorker) => port.postMessage(m);

async function main(): Promise<void> {
  const { config } = workerData as WorkerInit;
  const log = createLogger(config.FOOTFALL_LOG_LEVEL).child({ thread: 'ingest' });
  // One connection is enough on PostgreSQL: a batch is one transaction, and batches follow one another. On SQLite
  // the WAL checkpoints run on their own thread (server/db/checkpointer.ts): none inside this thread's commits.
  const store = await openStore(config, { pool: 2, autoCheckpoint: false });
  let keys: Keys;
  try {
    keys = loadKeys(config);
  } catch (err) {
    keys = unusableKeys(err instanceof Error ? err.message : String(err));
  }
  const identities = new Identities({ store, keys, log }, { matchThreshold: config.FOOTFALL_MATCH_THRESHOLD, burstThreshold: config.FOOTFALL_BURST_THRESHOLD });
  let acked = -1;
  let ackQueued = false;
  // Committed rows wait for the next ack: one message back per turn, not two per batch.
  let committed: ArrivalRange[][] = [];
  const ack = () => {
    ackQueued = false;
    const doneUpTo = core.doneUpTo;
    if (doneUpTo === acked && committed.length === 0) return;
    acked = doneUpTo;
    send({ t: 'ack', doneUpTo, stats: { ...core.stats }, committed });
    committed = [];
  };
  const queueAck = () => {
    if (ackQueued) return;
    ackQueued = true;
    setImmediate(ack);
  };
  const core: IngestCore = new IngestCore({
    store,
    config,
    log,
    identities,
    emit: (c) => {
      committed.push(c.ranges);
      queueAck();
    },
    onTick: queueAck,
  });

  const handle = async (m: ToWorker): Promise<void> => {
    switch (m.t) {
      case 'visits':
        for (const v of m.list) core.accept(v.id, v.topic, v.payload, v.at);
        queueAck();
        break;
      case 'erased':
        identities.afterErase(m.companyId, m.model, m.customerId, m.marker);
        break;
      case 'merged':
        identities.afterMerge(m.companyId, m.model, m.keepId, m.dropId, m.merged);
        break;
      case 'dropCompany':
        identities.dropCompany(m.companyId);
        break;
      case 'drain':
        void core.drained().then(() => {
          ack();
          send({ t: 'drained', id: m.id, stats: { ...core.stats } });
        });
        break;
      case 'stop':
        await core.flushAll();
        ack();
        await store.close();
        send({ t: 'stopped', stats: { ...core.stats } });
        port.close();
        break;
    }
  };
  // A failure is the thread's to report, as a throw in a synchronous handler was: an unhandled rejection ends the thread.
  port.on('message', (m: ToWorker) => void handle(m));
  const loaded = await identities.loadAll();
  log.info({ galleries: loaded.galleries, customers: loaded.customers, ms: Math.round(loaded.ms) }, 'face galleries loaded');
  send({ t: 'ready', ...loaded });
}

try {
  await main();
} catch (err) {
  send({ t: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
}
