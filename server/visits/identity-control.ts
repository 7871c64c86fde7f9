import { lte } from 'drizzle-orm';
import type { CompanyPurger } from '../clients/deletion.js';
import type { Keys } from '../crypto/keys.js';
import type { Db } from '../db/open.js';
import { DoNotEnrolList, type DoNotEnrolMarker } from '../identity/erasure.js';
import type { TemplateState } from '../identity/template.js';
import { markerKey } from './identities.js';
import type { ControlMessage } from './ingest-protocol.js';
import { doNotEnrol } from '../db/tables.js';
import { changes } from '../db/query.js';

/** How long an erased face is kept from being enrolled again (the marker's life). */
export const MARKER_TTL_MS = 180 * 24 * 3600 * 1000;

/** Marker lists kept for sketching (each holds a 512 KiB projection). */
const SKETCHERS = 16;

/**
 * The main thread's side of the identity state, which lives on the ingest thread (`Identities`): erasure and merge
 * compute what they store here with pure functions, inside their own transaction, and after the commit tell the
 * ingest thread (`afterErase`, `afterMerge`); company deletion drops the company's galleries there.
 */
export class IdentityControl {
  private send: ((m: ControlMessage) => void) | undefined;
  private readonly waiting: ControlMessage[] = [];
  private readonly sketchers = new Map<string, DoNotEnrolList>();

  constructor(private readonly keys: Keys) {}

  /** Connects to the ingest thread; what was sent before is delivered now, in order. */
  attach(send: (m: ControlMessage) => void): void {
    this.send = send;
    for (const m of this.waiting.splice(0)) send(m);
  }

  private post(m: ControlMessage): void {
    if (this.send) this.send(m);
    else this.waiting.push(m);
  }

  /** True when erasure can store a do-not-enrol marker (the server key is usable). */
  get canMark(): boolean {
    return this.keys.problem === undefined;
  }

  /** The marker an erasure stores for this template (pure). */
  markerFor(companyId: string, template: Float32Array, now: number): DoNotEnrolMarker {
    let list = this.sketchers.get(companyId);
    if (!list) {
      list = new DoNotEnrolList(markerKey(this.keys, companyId));
      if (this.sketchers.size >= SKETCHERS) this.sketchers.delete(this.sketchers.keys().next().value!);
      this.sketchers.set(companyId, list);
    }
    return { sketch: list.sketch(template), expiresAt: now + MARKER_TTL_MS };
  }

  /** After an erasure committed. */
  afterErase(companyId: string, model: string, customerId: string, marker: DoNotEnrolMarker | undefined): void {
    this.post({ t: 'erased', companyId, model, customerId, marker });
  }

  /** After a merge committed. */
  afterMerge(companyId: string, model: string, keepId: string, dropId: string, merged: TemplateState | undefined): void {
    this.post({ t: 'merged', companyId, model, keepId, dropId, merged });
  }

  /** Deletes expired markers (the ingest thread's lists skip expired ones by themselves). */
  async pruneMarkers(db: Db, now = Date.now()): Promise<number> {
    return changes(await db.delete(doNotEnrol).where(lte(doNotEnrol.expiresAt, new Date(now).toISOString())));
  }

  /** Company deletion step: the company's galleries leave the ingest thread's memory (its rows go with it). */
  purger(): CompanyPurger {
    return {
      name: 'identities',
      failure: { status: 500, code: 'internal', message: 'The company could not be deleted.' },
      purge: async (companyId) => {
        this.sketchers.delete(companyId);
        this.post({ t: 'dropCompany', companyId });
        return 0;
      },
    };
  }
}
