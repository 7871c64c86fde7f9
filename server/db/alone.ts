import type { Store } from './open.js';
import { advisoryKey } from './pg/store.js';

/**
 * Runs `fn` unless another head-office process is running the same named job now; then resolves undefined at once
 * (the job's next pass, on whichever process, picks up what is left). For jobs that read what is due, act outside
 * the database and then mark it done (report e-mails, alert deliveries): two processes doing that at once would send
 * twice. PostgreSQL: a session advisory lock tried on one pooled connection and held while `fn` runs (released if the
 * process dies). SQLite: one process, and each job already runs one pass at a time within it.
 */
export async function alone<T>(store: Store, name: string, fn: () => Promise<T>): Promise<T | undefined> {
  if (store.dialect === 'sqlite') return await fn();
  const client = await store.pool.connect();
  let broken: Error | undefined;
  try {
    const key = String(advisoryKey(`alone:${name}`));
    const got = (await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1::bigint) as ok', [key])).rows[0]?.ok === true;
    if (!got) return undefined;
    try {
      return await fn();
    } finally {
      await client.query('select pg_advisory_unlock($1::bigint)', [key]).catch((err: unknown) => {
        broken = err instanceof Error ? err : new Error(String(err));
      });
    }
  } finally {
    client.release(broken);
  }
}
