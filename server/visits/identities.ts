import { and, eq, gt, isNotNull, isNull } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Keys } from '../crypto/keys.js';
import type { Store } from '../db/open.js';
import { DoNotEnrolList, type DoNotEnrolMarker } from '../identity/erasure.js';
import { Gallery } from '../identity/gallery.js';
import { Matcher, type MatcherOptions } from '../identity/matcher.js';
import type { TemplateState } from '../identity/template.js';
import { templateFromBlob } from '../identity/vector.js';
import { customers, doNotEnrol } from '../db/tables.js';
import { galleryChangesSince, readGalleryClock } from './gallery-clock.js';

interface Entry {
  companyId: string;
  model: string;
  gallery: Gallery;
  matcher: Matcher;
  /** undefined when the server key is unusable (markers can be neither made nor checked). */
  markers: DoNotEnrolList | undefined;
  /** The company's gallery clock this entry is up to (server/visits/gallery-clock.ts). */
  tick: number;
}

/**
 * The in-memory identity state of every company, on the ingest thread: one gallery and matcher per (company,
 * recognition model) (faces of different models never compare; companies never see each other's faces), built from
 * the stored templates on first use and kept equal to the database:
 *
 * - ingest decides a batch inside its transaction (the matcher adds new customers and updates templates in memory
 *   as it goes, recording what it changed), then calls `settle` for every touched entry once the transaction
 *   committed, or `undo` when it failed: the matcher takes back exactly what the failed attempt changed, so the
 *   gallery is again what the database holds, without reloading it (on PostgreSQL a serialization failure re-ran the
 *   batch after reloading 20,000 templates inside the new transaction: the largest cost of the failing bench runs,
 *   docs/benchmarks.md, finding 1). Where the undo cannot be exact (an erasure or merge changed the gallery
 *   meanwhile), or after a stale decision, `discard` forgets the entry and the next use reloads it;
 * - erasure and merge run on the main thread (IdentityControl): they store what pure functions computed and, after
 *   their commit, tell this thread (`afterErase`, `afterMerge`); a batch decided in between is caught by ingest's
 *   check against the database and decided again on a reloaded gallery.
 *
 * Why not the identity module's `Matchers` (one matcher per company): a company's faces of two recognition models
 * must not share a gallery, so the key here is (company, model).
 */
export class Identities {
  private readonly entries = new Map<string, Entry>();

  /**
   * The entries an open transaction decided against: the entry, and the tick its memory is at without that
   * transaction's changes (the tick before the one the transaction moved the clock to).
   */
  private readonly open = new Map<string, { entry: Entry; tick: number }>();

  private readonly options: Partial<MatcherOptions>;

  constructor(
    private readonly deps: { store: Store; keys: Keys; log: Logger },
    options: Partial<MatcherOptions> = {},
  ) {
    this.options = { ...INGEST_MATCHER_OPTIONS, ...options };
  }

  private static key(companyId: string, model: string): string {
    return `${companyId}\u0000${model}`;
  }

  /**
   * The matcher for a transaction that holds the company's gallery clock at `tick` (it has just moved it on): first
   * brought up to `tick - 1` with what others changed (server/visits/gallery-clock.ts), then marked as at `tick`,
   * since what this transaction decides is stamped with it. The matcher records what the decisions change: `settle`
   * keeps it after the commit, `undo` takes it back after a failure.
   */
  async matcherAt(companyId: string, model: string, tick: number): Promise<Matcher> {
    // An entry loaded here read the clock inside this transaction, after it moved: already at `tick`, and holding
    // what was committed at `tick - 1` (the rows this transaction read).
    const e = await this.entry(companyId, model);
    if (e.tick < tick - 1) await this.catchUp(e);
    const k = Identities.key(companyId, model);
    if (!this.open.has(k)) {
      this.open.set(k, { entry: e, tick: tick - 1 });
      e.matcher.begin();
    }
    e.tick = tick;
    return e.matcher;
  }

  /** The transaction that decided against this (company, model) committed: its changes stay. */
  settle(companyId: string, model: string): void {
    const k = Identities.key(companyId, model);
    this.open.get(k)?.entry.matcher.commit();
    this.open.delete(k);
  }

  /**
   * The transaction that decided against this (company, model) failed: the matcher takes back what it changed and
   * the entry's tick goes back to before it, so the next transaction catches up from there (what others committed
   * meanwhile). If that cannot be exact, the entry is forgotten (the next use reloads it).
   */
  undo(companyId: string, model: string): void {
    const k = Identities.key(companyId, model);
    const o = this.open.get(k);
    this.open.delete(k);
    // Nothing recorded: the attempt failed before deciding (an entry it was loading was never kept; a catch-up cut
    // short applied only committed changes, and the tick was not moved).
    if (!o) return;
    const e = this.entries.get(k);
    if (e !== o.entry) return; // forgotten or replaced meanwhile (company deleted): nothing of it is in memory
    if (e.matcher.rollback()) e.tick = o.tick;
    else this.entries.delete(k);
  }

  /** Applies the changes stamped after the entry's tick: templates added or replaced, customers gone, markers. */
  private async catchUp(e: Entry): Promise<void> {
    let erased = false;
    for (const c of await galleryChangesSince(this.deps.store, e.companyId, e.model, e.tick)) {
      if (!c.template || c.erasedAt || c.mergedInto) {
        e.matcher.forget(c.id);
        erased ||= c.erasedAt !== null;
        continue;
      }
      const template = templateFromBlob(c.template);
      const count = Math.max(1, c.count);
      if (e.gallery.has(c.id)) e.gallery.update(c.id, template, count);
      else e.gallery.add(c.id, template, count);
    }
    if (erased && e.markers) e.markers.reset(await this.storedMarkers(e.companyId, e.model, Date.now()), Date.now());
  }

  /** After an erasure committed: the customer leaves memory; its marker starts blocking. */
  afterErase(companyId: string, model: string, customerId: string, marker: DoNotEnrolMarker | undefined): void {
    const e = this.entries.get(Identities.key(companyId, model));
    if (!e) return; // not loaded: the next load reads the database, which already has the change
    e.matcher.forget(customerId);
    if (marker && e.markers) e.markers.load([marker], Date.now());
  }

  /** After a merge committed: the survivor's template is the merged one, the merged-away customer is gone. */
  afterMerge(companyId: string, model: string, keepId: string, dropId: string, merged: TemplateState | undefined): void {
    const e = this.entries.get(Identities.key(companyId, model));
    if (!e) return;
    e.matcher.forget(dropId);
    if (merged && e.gallery.has(keepId)) e.gallery.update(keepId, merged.template, merged.count);
    else if (merged) e.gallery.add(keepId, merged.template, merged.count);
  }

  /** The matcher of one (company, model) if it is in memory (loaded nothing): for tests and inspection. */
  loaded(companyId: string, model: string): Matcher | undefined {
    return this.entries.get(Identities.key(companyId, model))?.matcher;
  }

  /** Forgets the memory of one (company, model): a stale gallery; the next use reloads it. */
  discard(companyId: string, model: string): void {
    this.open.delete(Identities.key(companyId, model));
    this.entries.delete(Identities.key(companyId, model));
  }

  /** Forgets every gallery of a company (company deletion). */
  dropCompany(companyId: string): void {
    for (const [k, e] of this.entries) if (e.companyId === companyId) this.entries.delete(k);
    for (const [k, o] of this.open) if (o.entry.companyId === companyId) this.open.delete(k);
  }

  /** Loads every company's galleries now (start-up), so the first visit does not pay for it. */
  async loadAll(): Promise<{ galleries: number; customers: number; ms: number }> {
    const t = performance.now();
    const pairs = await this.deps.store.db
      .selectDistinct({ companyId: customers.companyId, model: customers.recognitionModel })
      .from(customers)
      .where(isNotNull(customers.template));
    let n = 0;
    for (const p of pairs) n += (await this.entry(p.companyId, p.model)).gallery.size;
    return { galleries: pairs.length, customers: n, ms: performance.now() - t };
  }

  private async entry(companyId: string, model: string): Promise<Entry> {
    const k = Identities.key(companyId, model);
    let e = this.entries.get(k);
    if (!e) {
      e = await this.load(companyId, model);
      this.entries.set(k, e);
    }
    return e;
  }

  private async load(companyId: string, model: string): Promise<Entry> {
    const { store, keys, log } = this.deps;
    // The clock first: a change stamped after it and already in the rows below is applied again (harmlessly).
    const tick = await readGalleryClock(store, companyId);
    const rows = await store.db
      .select({ customerId: customers.id, template: customers.template, count: customers.templateCount })
      .from(customers)
      .where(
        and(
          eq(customers.companyId, companyId),
          eq(customers.recognitionModel, model),
          isNotNull(customers.template),
          isNull(customers.erasedAt),
          isNull(customers.mergedInto),
        ),
      );
    const gallery = Gallery.load(rows.map((r) => ({ customerId: r.customerId, template: r.template!, count: Math.max(1, r.count) })));
    let markers: DoNotEnrolList | undefined;
    if (keys.problem === undefined) {
      markers = new DoNotEnrolList(markerKey(keys, companyId));
      const now = Date.now();
      markers.load(await this.storedMarkers(companyId, model, now), now);
    } else {
      log.warn({ company_id: companyId }, 'no usable server key: erased faces are not kept from being enrolled again until it is restored');
    }
    return { companyId, model, gallery, matcher: new Matcher(gallery, this.options, markers), markers, tick };
  }

  private async storedMarkers(companyId: string, model: string, now: number): Promise<DoNotEnrolMarker[]> {
    const stored = await this.deps.store.db
      .select({ sketch: doNotEnrol.sketch, expiresAt: doNotEnrol.expiresAt })
      .from(doNotEnrol)
      .where(and(eq(doNotEnrol.companyId, companyId), eq(doNotEnrol.recognitionModel, model), gt(doNotEnrol.expiresAt, new Date(now).toISOString())));
    return stored.map((m) => ({ sketch: new Uint8Array(m.sketch), expiresAt: Date.parse(m.expiresAt) }));
  }
}

/**
 * The matcher's defaults, except the burst list: at most the 32 latest enrolments of a company (within the 20 s
 * window) are compared with every visit, at the looser burst threshold. Each comparison is a 512-d similarity, so
 * with the default cap of 256 a company enrolling more than 256 people in 20 s (2,000 visits/s, 30 % new) paid
 * 0.47 ms per visit for the list (10k customers: 0.65 ms per decision against 0.18 ms without it), three times the
 * gallery search. 32 costs about 0.06 ms and still covers every enrolment of the window for a company that enrols
 * up to 1.6 new people a second; beyond that, only the latest 32.
 */
export const INGEST_MATCHER_OPTIONS: Partial<MatcherOptions> = { recentMax: 32 };

/** How long an erased face is kept from being enrolled again (the marker's life). */
export const DEFAULT_MARKER_TTL_MS = 180 * 24 * 3600 * 1000;

/**
 * The per-company key of the do-not-enrol sketches: the server's keyed code hash (HMAC-SHA-256 under an HKDF
 * sub-key of the server key) of a purpose string with the company id. Without the server key a marker means nothing,
 * and two companies' markers cannot be linked.
 */
export function markerKey(keys: Keys, companyId: string): Uint8Array {
  return Buffer.from(keys.codeHash(`footfall:do-not-enrol:${companyId}`), 'hex');
}
