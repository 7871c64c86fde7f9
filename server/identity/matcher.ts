import { DoNotEnrolList, type DoNotEnrolMarker, type DoNotEnrolOptions } from './erasure.js';
import { Gallery, type GalleryOptions, type GalleryRow, type Match } from './gallery.js';
import { mergedTemplate, runningMean, type TemplateState } from './template.js';
import { unitCopy } from './vector.js';

/**
 * Who is this face? The decision on top of a company's gallery, with no I/O: the caller (the visits ingest)
 * stores what it decides, in the same synchronous transaction.
 *
 * - The best gallery match at or above `matchThreshold` links the visit to that customer.
 * - Burst protection: customers enrolled within `burstWindowMs` (of capture time) are also checked, at the looser
 *   `burstThreshold`: the list is a handful of faces, so a looser threshold costs few false links, and it catches
 *   the second camera's (worse) view of the person enrolled a second ago. Enrolment is synchronous (the `enrol`
 *   callback creates the customer row and the gallery add follows before `decide` returns), so the next visit
 *   always sees the new customer.
 * - Otherwise a face that passed the quality gate becomes a new customer, unless a do-not-enrol marker (an erased
 *   customer's face) blocks it; a face under the gate is footfall without identity.
 * - A good embedding (gate passed) at or above `updateThreshold` updates the template: a running mean whose
 *   weight is capped at `templateWeightCap`, so templates follow ageing.
 */
export interface MatcherOptions {
  matchThreshold: number;
  burstThreshold: number;
  burstWindowMs: number;
  updateThreshold: number;
  templateWeightCap: number;
  /** Recently enrolled customers remembered for burst protection (the oldest are dropped first). */
  recentMax: number;
}

/**
 * Starting values from the measured `fr_feature` separation (same person >= 0.47, different people <= 0.16 on
 * pairs): the match threshold sits in the gap with room for the 1:N tail (a company of 100k faces sees impostor
 * scores far out in the tail that pairs never show). The caller owns the thresholds; re-measure on real photos.
 */
export const DEFAULT_MATCHER_OPTIONS: MatcherOptions = {
  // Measured on real faces (docs/recognition.md): different people reach 0.40 (same group photo), same-person photo
  // pairs start at 0.55. Friends arriving together must not merge, so the burst threshold stays above 0.40 too.
  matchThreshold: 0.45,
  burstThreshold: 0.4,
  burstWindowMs: 20_000,
  updateThreshold: 0.5,
  templateWeightCap: 20,
  recentMax: 256,
};

export interface Visit {
  embedding: ArrayLike<number>;
  /** The face passed the quality gate (size, sharpness, pose): good enough to enrol or to update a template. */
  passedGate: boolean;
  /** Capture time, epoch milliseconds (visits can arrive late, bursts are judged on capture time). */
  at: number;
}

export type Decision =
  | {
      kind: 'match';
      customerId: string;
      similarity: number;
      /** `burst`: linked only thanks to the recently enrolled list's looser threshold. */
      via: 'gallery' | 'burst';
      /** Set when this visit updated the template: store it. */
      template?: TemplateState;
    }
  | { kind: 'new'; customerId: string; template: TemplateState }
  | { kind: 'footfall'; reason: 'below_gate' | 'do_not_enrol' };

/** Creates the customer row (synchronously, inside the caller's transaction) and returns its id. */
export type Enrol = (visit: Visit, index: number) => string;

interface Recent {
  customerId: string;
  at: number;
}

/** What decisions changed in memory since `begin`: enough to take it back exactly. */
interface Journal {
  /** Customers enrolled, in order (each took the gallery's last slot). */
  added: string[];
  /** Each updated customer's template and weight before its first update. */
  updated: Map<string, { template: Float32Array; count: number }>;
  /** The recently enrolled list as it was. */
  recent: Recent[];
  latest: number;
  /** Something besides decisions changed the gallery meanwhile (forget, erase, merge): the undo would not be exact. */
  broken: boolean;
}

export class Matcher {
  private readonly options: MatcherOptions;
  private recent: Recent[] = [];
  private latest = -Infinity;
  private journal: Journal | undefined;

  constructor(
    readonly gallery: Gallery,
    options: Partial<MatcherOptions> = {},
    private readonly doNotEnrol?: DoNotEnrolList,
  ) {
    this.options = { ...DEFAULT_MATCHER_OPTIONS, ...options };
  }

  /** Decides one visit; a new customer is created through `enrol` and is in the gallery when this returns. */
  decide(visit: Visit, enrol: Enrol): Decision {
    const q = unitCopy(visit.embedding);
    return this.resolve(visit, 0, q, this.gallery.search(q, 1)[0], enrol);
  }

  /**
   * Decides a burst of visits in order, with one batched gallery search. A customer enrolled by an earlier visit
   * of the batch is found through the recently enrolled list (checked for every visit), so the batch enrols a
   * face once, as `decide` one by one would. The ranking is the one from the start of the batch, re-scored
   * against the current templates (a template update within the batch does not re-rank later visits).
   */
  decideBatch(visits: readonly Visit[], enrol: Enrol): Decision[] {
    const qs = visits.map((v) => unitCopy(v.embedding));
    const found = this.gallery.searchBatch(qs, 1);
    // Customers enrolled by earlier visits of this batch were not in the gallery when it was searched. The recently
    // enrolled list finds them only within burstWindowMs of capture time; a shop PC sending a backlog (late, in any
    // order) puts one person's visits of hours apart in one batch, so they are compared here too, at the match
    // threshold, as the gallery would have been in separate batches.
    const enrolled: string[] = [];
    return visits.map((v, i) => {
      const best = found[i]![0];
      // Re-score against the current template: an earlier visit of the batch may have updated it or merged it away.
      const sim = best && this.gallery.similarityUnit(best.customerId, qs[i]!);
      let match: Match | undefined = sim === undefined ? undefined : { customerId: best!.customerId, similarity: sim };
      for (const id of enrolled) {
        const s = this.gallery.similarityUnit(id, qs[i]!);
        if (s !== undefined && s >= this.options.matchThreshold && (!match || s > match.similarity)) match = { customerId: id, similarity: s };
      }
      const d = this.resolve(v, i, qs[i]!, match, enrol);
      if (d.kind === 'new') enrolled.push(d.customerId);
      return d;
    });
  }

  /**
   * Starts recording what decisions change in memory (enrolments, template updates, the recently enrolled list), so
   * that `rollback` can take it back if the transaction that stores them fails.
   */
  begin(): void {
    this.journal = { added: [], updated: new Map(), recent: this.recent.slice(), latest: this.latest, broken: false };
  }

  /** The changes since `begin` are kept: their transaction committed. */
  commit(): void {
    this.journal = undefined;
  }

  /**
   * Takes back every change decisions made since `begin`: enrolled customers leave the gallery (last first, so every
   * other customer keeps its slot), updated templates get their earlier value and weight back, bit for bit, and the
   * recently enrolled list is as it was. False (nothing taken back) when there is no record, or when something else
   * changed the gallery meanwhile (an erasure or merge): the caller then reloads it.
   */
  rollback(): boolean {
    const j = this.journal;
    this.journal = undefined;
    if (!j || j.broken) return false;
    for (const [id, was] of j.updated) if (this.gallery.has(id)) this.gallery.restore(id, was.template, was.count);
    for (let i = j.added.length - 1; i >= 0; i--) this.gallery.remove(j.added[i]!);
    this.recent = j.recent;
    this.latest = j.latest;
    return true;
  }

  /** Takes back an enrolment whose transaction failed: the customer leaves the gallery and the recent list. */
  forget(customerId: string): void {
    if (this.journal) this.journal.broken = true;
    this.gallery.remove(customerId);
    this.recent = this.recent.filter((r) => r.customerId !== customerId);
  }

  /**
   * Erasure: the template leaves memory; with a do-not-enrol list, returns the marker to store (no customer id in
   * it). Undefined if the customer had no template in the gallery or there is no list.
   */
  erase(customerId: string, now: number): DoNotEnrolMarker | undefined {
    const entry = this.gallery.entry(customerId);
    this.forget(customerId);
    if (!entry || !this.doNotEnrol) return undefined;
    const marker = this.doNotEnrol.mark(entry.template, now);
    entry.template.fill(0);
    return marker;
  }

  /** Merges `dropId` into `keepId`: the kept template becomes the weighted mean of both. Returns it to store. */
  merge(keepId: string, dropId: string): TemplateState | undefined {
    if (this.journal) this.journal.broken = true;
    const keep = this.gallery.entry(keepId);
    const drop = this.gallery.entry(dropId);
    if (!keep || !drop) return undefined;
    const merged = mergedTemplate(keep, drop, this.options.templateWeightCap);
    this.gallery.update(keepId, merged.template, merged.count);
    this.gallery.remove(dropId);
    for (const r of this.recent) if (r.customerId === dropId) r.customerId = keepId;
    return merged;
  }

  private resolve(visit: Visit, index: number, q: Float32Array, found: Match | undefined, enrol: Enrol): Decision {
    const o = this.options;
    let best: { customerId: string; similarity: number; via: 'gallery' | 'burst' } | undefined;
    if (found && found.similarity >= o.matchThreshold) best = { ...found, via: 'gallery' };
    const burst = this.bestRecent(q, visit.at);
    if (burst && burst.similarity >= o.burstThreshold && (!best || burst.similarity > best.similarity)) {
      best = { ...burst, via: burst.similarity >= o.matchThreshold ? 'gallery' : 'burst' };
    }
    if (best) {
      const decision: Decision = { kind: 'match', ...best };
      if (visit.passedGate && best.similarity >= o.updateThreshold) {
        const entry = this.gallery.entry(best.customerId)!;
        if (this.journal && !this.journal.updated.has(best.customerId)) this.journal.updated.set(best.customerId, entry);
        decision.template = runningMean(entry, q, o.templateWeightCap);
        this.gallery.update(best.customerId, decision.template.template, decision.template.count);
      }
      return decision;
    }
    if (!visit.passedGate) return { kind: 'footfall', reason: 'below_gate' };
    if (this.doNotEnrol?.blocks(q, visit.at)) return { kind: 'footfall', reason: 'do_not_enrol' };
    const customerId = enrol(visit, index);
    this.gallery.add(customerId, q, 1);
    this.journal?.added.push(customerId);
    this.remember(customerId, visit.at);
    return { kind: 'new', customerId, template: { template: q, count: 1 } };
  }

  private bestRecent(q: Float32Array, at: number): Match | undefined {
    let best: Match | undefined;
    for (const r of this.recent) {
      if (Math.abs(at - r.at) > this.options.burstWindowMs) continue;
      const similarity = this.gallery.similarityUnit(r.customerId, q);
      if (similarity !== undefined && (!best || similarity > best.similarity)) best = { customerId: r.customerId, similarity };
    }
    return best;
  }

  private remember(customerId: string, at: number): void {
    this.latest = Math.max(this.latest, at);
    const horizon = this.latest - this.options.burstWindowMs;
    this.recent = this.recent.filter((r) => r.at >= horizon);
    this.recent.push({ customerId, at });
    if (this.recent.length > this.options.recentMax) this.recent.splice(0, this.recent.length - this.options.recentMax);
  }
}

/** What a company's identity state is built from (its rows in the database). */
export interface CompanyIdentity {
  templates: Iterable<GalleryRow>;
  /** Live do-not-enrol markers. */
  markers: Iterable<DoNotEnrolMarker>;
  /** The company's do-not-enrol key (>= 16 bytes; e.g. HKDF of the server key with the company id). */
  key: Uint8Array;
}

/**
 * One matcher (gallery, burst list, do-not-enrol list) per company, built from the database on first use and
 * never shared across companies. `drop` forgets a company: deleted, or a transaction failed after the in-memory
 * state changed, so the next use reloads it from the database.
 */
export class Matchers {
  private readonly byCompany = new Map<string, Matcher>();

  constructor(
    private readonly load: (companyId: string) => CompanyIdentity,
    private readonly options: {
      matcher?: Partial<MatcherOptions>;
      gallery?: GalleryOptions;
      doNotEnrol?: DoNotEnrolOptions;
      now?: () => number;
    } = {},
  ) {}

  of(companyId: string): Matcher {
    let m = this.byCompany.get(companyId);
    if (!m) {
      const state = this.load(companyId);
      const list = new DoNotEnrolList(state.key, this.options.doNotEnrol);
      list.load(state.markers, (this.options.now ?? Date.now)());
      m = new Matcher(Gallery.load(state.templates, this.options.gallery), this.options.matcher, list);
      this.byCompany.set(companyId, m);
    }
    return m;
  }

  has(companyId: string): boolean {
    return this.byCompany.has(companyId);
  }

  drop(companyId: string): void {
    this.byCompany.delete(companyId);
  }
}
