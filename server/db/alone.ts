import type { Store } from './open.js';
import { ifUnlocked } from './pg/store.js';

/**
 * Runs `fn` unless another head-office process is running the same named job now; then resolves undefined at once
 * (the job's next pass, on whichever process, picks up what is left). For jobs that read what is due, act outside
 * the database and then mark it done (report e-mails, alert deliveries): two processes doing that at once would send
 * twice. PostgreSQL: a session advisory lock tried on one pooled connection and held while `fn` runs (released if the
 * process dies). SQLite: one process, and each job already runs one pass at a time within it.
 */
export async function alone<T>(store: Store, name: string, fn: () => Promise<T>): Promise<T | undefined> {
  if (store.dialect === 'sqlite') return await fn();
  return await ifUnlocked(store.pool, `alone:${name}`, fn);
}
