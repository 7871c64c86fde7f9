import type { Arrival } from './presenter.js';

/** One committed visit as the stream sends it: the row, its position and its shop (for the site filter). */
export interface FeedItem {
  seq: number;
  shopId: string;
  arrival: Arrival;
  /** The face image the row links to (for the audit of photo links), if any. */
  faceImageId: string | undefined;
  customerId: string | undefined;
}

export type Listener = (items: readonly FeedItem[]) => void;

/**
 * In-process fan-out of committed visits to the open arrival streams (GET /api/visits/stream). Ingest publishes each
 * committed batch once per company, already presented (always: a stream that opens while a batch is being written
 * must not miss it); each stream filters by shop and writes. Nothing polls the
 * database per client: a stream reads the database only to catch up from its cursor when it opens.
 */
export class ArrivalsHub {
  private readonly byCompany = new Map<string, Set<Listener>>();
  private readonly closers = new Set<() => void>();

  /** Listens to a company's new visits; returns the function that stops listening. */
  subscribe(companyId: string, listener: Listener, onClose?: () => void): () => void {
    let set = this.byCompany.get(companyId);
    if (!set) this.byCompany.set(companyId, (set = new Set()));
    set.add(listener);
    if (onClose) this.closers.add(onClose);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byCompany.get(companyId) === set) this.byCompany.delete(companyId);
      if (onClose) this.closers.delete(onClose);
    };
  }

  /** Whether any stream of this company is open here. */
  listening(companyId: string): boolean {
    return this.byCompany.has(companyId);
  }

  publish(companyId: string, items: readonly FeedItem[]): void {
    const set = this.byCompany.get(companyId);
    if (!set || items.length === 0) return;
    for (const listener of [...set]) listener(items);
  }

  get listeners(): number {
    let n = 0;
    for (const s of this.byCompany.values()) n += s.size;
    return n;
  }

  /** Shutdown: ends every stream. */
  close(): void {
    for (const c of [...this.closers]) c();
    this.closers.clear();
    this.byCompany.clear();
  }
}
