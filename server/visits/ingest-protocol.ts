import type { Config } from '../config.js';
import type { DoNotEnrolMarker } from '../identity/erasure.js';
import type { TemplateState } from '../identity/template.js';
import type { ArrivalRange } from './arrivals-relay.js';
import type { IngestStats } from './ingest-core.js';

/** Messages between the main thread (VisitIngest, IdentityControl) and the ingest thread (ingest-worker.ts). */

export type ControlMessage =
  | { t: 'erased'; companyId: string; model: string; customerId: string; marker: DoNotEnrolMarker | undefined }
  | { t: 'merged'; companyId: string; model: string; keepId: string; dropId: string; merged: TemplateState | undefined }
  | { t: 'dropCompany'; companyId: string };

export type ToWorker =
  | ControlMessage
  /**
   * MQTT messages of `ff/<company>/<shop>/up/visit`, numbered (ascending), handed over in the same turn of the main
   * thread's event loop: one message per turn, not per visit (the payloads' bytes are transferred).
   */
  | { t: 'visits'; list: VisitHandOver[] }
  | { t: 'drain'; id: number }
  | { t: 'stop' };

export type FromWorker =
  | { t: 'ready'; galleries: number; customers: number; ms: number }
  /**
   * Every visit message numbered up to `doneUpTo` is finished with (written, dropped or refused); the counters; and
   * the positions of the visits of the batches committed since the last one, per company, for the arrival streams
   * (read and published by the main thread, for companies with a stream open, before the PUBACKs).
   */
  | { t: 'ack'; doneUpTo: number; stats: IngestStats; committed: ArrivalRange[][] }
  | { t: 'drained'; id: number; stats: IngestStats }
  | { t: 'stopped'; stats: IngestStats }
  | { t: 'failed'; error: string };

export interface VisitHandOver {
  id: number;
  topic: string;
  payload: Uint8Array;
  at: string;
}

export interface WorkerInit {
  config: Config;
}
