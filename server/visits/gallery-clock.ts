import type { Store } from '../db/open.js';
import { preparedStatements } from '../db/statement.js';

/**
 * A company's gallery clock (`gallery_clocks`, server/customers/schema.ts). Every transaction that changes what the
 * company's face galleries hold moves the clock on by one (`tickGalleryClock`) and stamps the customers it changed
 * with the new tick (`customers.gallery_tick`): ingest's new customers and template updates, erasure, merge and
 * template retention. A process's in-memory gallery remembers the tick it is up to; what other processes (or the
 * main thread) changed since is the customers stamped after it (`galleryChangesSince`), read in the transaction that
 * holds the clock's next tick, so nothing is read twice or missed. Two transactions cannot hold the same tick: the
 * clock's row is written by both (SQLite: one writer; PostgreSQL: the second waits, or is refused and run again).
 */

/** A customer as a gallery needs it after a change: gone (no template) or with its template now. */
export interface ChangedCustomer {
  id: string;
  template: Buffer | null;
  count: number;
  erasedAt: string | null;
  mergedInto: string | null;
}

const statementsOf = preparedStatements((prep) => ({
  tick: prep(
    `insert into gallery_clocks (company_id, tick) values (?, 1)
     on conflict (company_id) do update set tick = gallery_clocks.tick + 1 returning tick`,
  ),
  read: prep('select tick from gallery_clocks where company_id = ?'),
  since: prep(
    `select id, template, template_count as count, erased_at as "erasedAt", merged_into as "mergedInto"
     from customers where company_id = ? and recognition_model = ? and gallery_tick > ?`,
  ),
}));

/** Moves the company's clock on by one, inside the caller's transaction; returns the new tick (to stamp with). */
export async function tickGalleryClock(store: Store, companyId: string): Promise<number> {
  const r = await statementsOf(store).tick.get<{ tick: number }>(companyId);
  return r!.tick;
}

/** The company's clock now (0 before its first change). */
export async function readGalleryClock(store: Store, companyId: string): Promise<number> {
  return (await statementsOf(store).read.get<{ tick: number }>(companyId))?.tick ?? 0;
}

/** The company's customers of one recognition model stamped after `tick`. */
export async function galleryChangesSince(store: Store, companyId: string, model: string, tick: number): Promise<ChangedCustomer[]> {
  return await statementsOf(store).since.all<ChangedCustomer>(companyId, model, tick);
}
