import type { Config } from '../config.js';
import type { DoNotEnrolMarker } from '../identity/erasure.js';
import type { TemplateState } from '../identity/template.js';
import type { FeedItem } from './hub.js';
import type { IngestStats } from './ingest-core.js';

/** Messages between the main thread (VisitIngest, IdentityControl) and the ingest thread (ingest-worker.ts). */

export type ControlMessage =
  | { t: 'erased'; companyId: string; model: string; customerId: string; marker: DoNotEnrolMarker | undefined }
  | { t: 'merged'; companyId: string; model: string; keepId: string; dropId: string; merged: TemplateState | undefined }
  | { t: 'dropCompany'; companyId: string };

export type ToWorker =
  | ControlMessage
  /** One MQTT message of `ff/<company>/<shop>/up/visit`, numbered (the payload's bytes are transferred). */
  | { t: 'visit'; id: number; topic: string; payload: Uint8Array; at: string }
  | { t: 'drain'; id: number }
  | { t: 'stop' };

export type FromWorker =
  | { t: 'ready'; galleries: number; customers: number; ms: number }
  /** Rows of one committed batch, for the arrival streams. */
  | { t: 'committed'; items: [string, FeedItem[]][] }
  /** Every visit message numbered up to `doneUpTo` is finished with (written, dropped or refused); the counters. */
  | { t: 'ack'; doneUpTo: number; stats: IngestStats }
  | { t: 'drained'; id: number; stats: IngestStats }
  | { t: 'stopped'; stats: IngestStats }
  | { t: 'failed'; error: string };

export interface WorkerInit {
  config: Config;
}
