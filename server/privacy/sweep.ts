import fs from 'node:fs';
import { and, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Deps } from '../context.js';
import { writeAudit } from '../audit/service.js';
import { faceFile } from '../customers/faces.js';
import { cleared } from '../customers/service.js';
import { ageVisits } from './retention.js';
import { privacyOf, type PrivacySettings } from './service.js';
import { companies, customers, faceImages, visits, companyPrivacy } from '../db/tables.js';
import type { Db } from '../db/open.js';
import { truncateWal } from '../db/checkpoint.js';
import { tickGalleryClock } from '../visits/gallery-clock.js';

const DAY_MS = 86_400_000;

export interface SweepOptions {
  /** Customers forgotten per transaction. */
  batch?: number;
  /** Stop after this many batches (a test's stand-in for a restart mid-sweep); a shop's local day aged is one batch. */
  maxBatches?: number;
  now?: number;
  /**
   * Called with each batch's ids after they were read and before their transaction: a test's stand-in for a change
   * (a consent, a visit, a setting) committed in between, which the transaction must respect.
   */
  afterRead?: (ids: string[]) => Promise<void>;
}

interface Removed {
  templates: number;
  photos: number;
  /** Visits and door crossings aged into footfall_counts (visit_retention_days), and the shop-days that took. */
  visits: number;
  crossings: number;
  days: number;
}

export interface SweepResult extends Removed {
  /** false: stopped early (maxBatches or closing); the next run carries on. */
  complete: boolean;
}

/**
 * Who is forgotten now (docs/privacy.md): a customer without consent, not marked staff, not erased or merged away,
 * holding a template or a photo, last seen before the cutoff: `template_retention_days` ago, or, in `consented` mode,
 * the end of their stay (FOOTFALL_VISIT_GAP_S after they were last seen), whichever is later.
 */
export function cutoffOf(settings: PrivacySettings, gapS: number, now: number): string {
  const retention = now - settings.templateRetentionDays * DAY_MS;
  const stay = settings.recognition === 'all' ? -Infinity : now - gapS * 1000;
  return new Date(Math.max(retention, stay)).toISOString();
}

/** Up to `limit` customers of the company due now (cutoffOf); `among`: of these ids only. */
async function candidates(db: Db, companyId: string, cutoff: string, limit: number, among?: string[]) {
  return await db
    .select({ id: customers.id, model: customers.recognitionModel })
    .from(customers)
    .where(
      and(
        eq(customers.companyId, companyId),
        among ? inArray(customers.id, among) : undefined,
        isNull(customers.erasedAt),
        isNull(customers.mergedInto),
        eq(customers.consent, false),
        eq(customers.staff, false),
        lt(sql`coalesce(${customers.lastSeenAt}, ${customers.createdAt})`, cutoff),
        or(sql`${customers.template} is not null`, sql`exists (select 1 from face_images f where f.customer_id = ${customers.id})`),
      ),
    )
    .limit(limit);
}

/**
 * Forgets customers in one transaction: visits unlinked (they stay, counted as unidentified), photo rows deleted,
 * the row cleared (no template, no profile) and marked erased, as after an erasure but with no do-not-enrol marker
 * (the person may be enrolled again on a later visit, and forgotten again). Photo files go after the commit; the
 * templates leave the ingest thread's galleries.
 *
 * `read` was read before the transaction, so inside it the company's settings and each customer's row are read again
 * and only those still due are forgotten: a consent given, a staff mark, a visit (ingest moves last_seen_at), an
 * erasure or merge, or a longer retention committed in between keeps the customer. On SQLite nothing else writes
 * inside the transaction (BEGIN IMMEDIATE); on PostgreSQL a change committed during it makes SERIALIZABLE refuse one
 * of the two, and the store runs the body again, which reads again. The cutoff used is handed back for the next
 * batch's read.
 */
async function forget(deps: Deps, companyId: string, now: number, read: Candidate[]): Promise<{ forgotten: number; photos: number; cutoff: string }> {
  const at = new Date().toISOString();
  const { batch, files, cutoff } = await deps.store.tx(async () => {
    // Inside the body: on PostgreSQL store.db is the transaction's connection only there.
    const db = deps.store.db;
    const cutoff = cutoffOf(await privacyOf(db, companyId), deps.config.FOOTFALL_VISIT_GAP_S, now);
    const ids = read.map((c) => c.id);
    const batch = await candidates(db, companyId, cutoff, ids.length, ids);
    if (batch.length === 0) return { batch, files: [], cutoff };
    const due = batch.map((c) => c.id);
    const photos = await db.select().from(faceImages).where(inArray(faceImages.customerId, due));
    await db.update(visits).set({ customerId: null, isNewVisitor: false, similarity: null, faceImageId: null, mergedFrom: null }).where(inArray(visits.customerId, due));
    await db.delete(faceImages).where(inArray(faceImages.customerId, due));
    await db.update(customers)
      .set({ ...cleared, profileUpdatedAt: null, firstSeenAt: null, lastSeenAt: null, erasedAt: at, galleryTick: await tickGalleryClock(deps.store, companyId) })
      .where(and(eq(customers.companyId, companyId), inArray(customers.id, due)));
    return { batch, files: photos.map((p) => faceFile(deps.config.dataDir, p)), cutoff };
  });
  return { forgotten: batch.length, photos: removeForgotten(deps, companyId, batch, files), cutoff };
}

type Candidate = Awaited<ReturnType<typeof candidates>>[number];

/**
 * After forget's commit: the photo files go, and the templates leave the galleries. How many photos went (one kept in
 * the database, `undefined` here, went with its row at the commit).
 */
function removeForgotten(deps: Deps, companyId: string, batch: Candidate[], files: (string | undefined)[]): number {
  let removed = 0;
  for (const file of files) {
    if (file === undefined) {
      removed++;
      continue;
    }
    try {
      fs.rmSync(file, { force: true });
      removed++;
    } catch (err) {
      deps.log.error({ err, file }, 'privacy sweep: a forgotten customer\'s photo could not be deleted; delete it by hand');
    }
  }
  for (const c of batch) deps.identities.afterErase(companyId, c.model, c.id, undefined);
  return removed;
}

/** One pass over every company (or one). Each batch is its own transaction: a pass cut short loses nothing. */
export async function sweepPrivacy(deps: Deps, opts: SweepOptions & { companyId?: string; closing?: () => boolean } = {}): Promise<SweepResult> {
  const db = deps.store.db;
  const batchSize = opts.batch ?? 200;
  const total = none();
  let batches = 0;
  const stop = () => opts.closing?.() === true || (opts.maxBatches !== undefined && batches >= opts.maxBatches);
  const list = await db.select({ id: companies.id }).from(companies).where(opts.companyId ? eq(companies.id, opts.companyId) : undefined);
  for (const { id: companyId } of list) {
    const settings = await privacyOf(db, companyId);
    const requested = settings.sweepRequestedAt;
    const now = opts.now ?? Date.now();
    let cutoff = cutoffOf(settings, deps.config.FOOTFALL_VISIT_GAP_S, now);
    const mine = none();
    const cut = async () => {
      await record(deps, companyId, settings, mine, false);
      if (add(total, mine).templates > 0) unscrubbed.add(deps.store);
      return scrubFiles(deps).then(() => ({ ...total, complete: false }));
    };
    for (;;) {
      if (stop()) return cut();
      const batch = await candidates(db, companyId, cutoff, batchSize);
      if (batch.length === 0) break;
      await opts.afterRead?.(batch.map((c) => c.id));
      const done = await forget(deps, companyId, now, batch);
      mine.photos += done.photos;
      mine.templates += done.forgotten;
      cutoff = done.cutoff;
      batches++;
      await new Promise((r) => setImmediate(r)); // let requests in between batches
    }
    if (settings.visitRetentionDays !== null) {
      const done = await ageVisits(deps, companyId, settings.visitRetentionDays, {
        now,
        stop,
        after: async (d) => {
          mine.visits += d.visits;
          mine.crossings += d.crossings;
          mine.days++;
          batches++;
          await new Promise((r) => setImmediate(r));
        },
      });
      if (!done) return cut();
    }
    await record(deps, companyId, settings, mine, true);
    if (requested) {
      // Done with what was asked; a change made meanwhile keeps its own request.
      await db.update(companyPrivacy)
        .set({ sweepRequestedAt: null, sweptAt: new Date().toISOString() })
        .where(and(eq(companyPrivacy.companyId, companyId), eq(companyPrivacy.sweepRequestedAt, requested)));
    }
    add(total, mine);
  }
  if (total.templates > 0) unscrubbed.add(deps.store);
  await scrubFiles(deps);
  return { ...total, complete: true };
}

/** Databases whose files may still hold a forgotten template (a scrub found the log busy): the next pass retries. */
const unscrubbed = new WeakSet<Deps['store']>();
const SCRUB_FOR_MS = 1_000;
const SCRUB_WAIT_MS = 25;

/**
 * The database runs with secure_delete (deleted content is zeroed in its pages), but the WAL file still holds the
 * frames written before the deletion until a checkpoint copies the zeroed pages back and the log starts over. After a
 * sweep that forgot someone, a TRUNCATE checkpoint does that at once, so no template of theirs is left in either file.
 * A busy answer (a reader's snapshot, or the ingest thread's periodic PASSIVE checkpoint, which a checkpoint never
 * waits for) is retried every 25 ms for about a second, without busy_timeout's blocking of the event loop; a log
 * still in use after that is retried by every later pass (FOOTFALL_PRIVACY_SWEEP_S) until it is scrubbed.
 *
 * On PostgreSQL nothing is done here. It has no secure_delete: a cleared row's old version stays in its table's
 * pages until (auto)vacuum frees that space, and a VACUUM only marks it reusable, it does not overwrite it; the
 * write-ahead log, its archive and the base backups keep the old rows until they are recycled or expire. None of that
 * can be scrubbed from a client, so a VACUUM here would cost the server work without giving the guarantee SQLite's
 * checkpoint gives. What the data-protection officer needs is written down instead (docs/scale-out.md): the erased
 * person is gone from every answer at the commit, and from the server's files within autovacuum's round and the
 * operator's WAL-archive and backup retention.
 */
async function scrubFiles(deps: Deps): Promise<void> {
  if (!unscrubbed.has(deps.store)) return;
  if (deps.store.dialect !== 'sqlite') {
    unscrubbed.delete(deps.store);
    return;
  }
  const sqlite = deps.store.sqlite;
  const until = performance.now() + SCRUB_FOR_MS;
  for (;;) {
    try {
      if (truncateWal(sqlite, 0)) {
        unscrubbed.delete(deps.store);
        return;
      }
    } catch (err) {
      deps.log.warn({ err }, 'privacy sweep: checkpoint failed; the database log is scrubbed by the next pass');
      return;
    }
    if (performance.now() >= until) break;
    await new Promise((resolve) => setTimeout(resolve, SCRUB_WAIT_MS));
  }
  deps.log.info('privacy sweep: the database log is in use; it is scrubbed by the next pass');
}

const none = (): Removed => ({ templates: 0, photos: 0, visits: 0, crossings: 0, days: 0 });

function add(total: Removed, more: Removed): Removed {
  total.templates += more.templates;
  total.photos += more.photos;
  total.visits += more.visits;
  total.crossings += more.crossings;
  total.days += more.days;
  return total;
}

/** An audit row per company that lost something (or whose requested sweep finished), naming no one. */
async function record(deps: Deps, companyId: string, s: PrivacySettings, removed: Removed, complete: boolean): Promise<void> {
  if (removed.templates === 0 && removed.days === 0 && !(complete && s.sweepRequestedAt)) return;
  await writeAudit(deps.store, {
    action: 'privacy.sweep',
    companyId,
    target: companyId,
    detail: {
      customers_forgotten: removed.templates,
      photos_deleted: removed.photos,
      visits_aggregated: removed.visits,
      crossings_aggregated: removed.crossings,
      days_aggregated: removed.days,
      complete,
      recognition: s.recognition,
      template_retention_days: s.templateRetentionDays,
      visit_retention_days: s.visitRetentionDays,
    },
  });
}

/** Runs the sweep on start, every FOOTFALL_PRIVACY_SWEEP_S, and soon after a settings change; one run at a time. */
export class PrivacySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(private readonly deps: Deps) {}

  start(): void {
    void this.request();
    this.timer = setInterval(() => void this.request(), this.deps.config.FOOTFALL_PRIVACY_SWEEP_S * 1000);
    this.timer.unref();
  }

  /** Runs a sweep now (or right after the one running). Resolves when it has run. */
  request(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          const r = await sweepPrivacy(this.deps, { closing: () => this.closed });
          this.deps.metrics?.privacySweep('done', r);
          if (r.templates > 0 || r.days > 0)
            this.deps.log.info({ customers_forgotten: r.templates, photos_deleted: r.photos, visits_aggregated: r.visits, crossings_aggregated: r.crossings }, 'privacy sweep');
        } catch (err) {
          this.deps.metrics?.privacySweep('failed', none());
          this.deps.log.error({ err }, 'privacy sweep failed; it runs again at the next interval');
        }
      } while (this.again && !this.closed);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
