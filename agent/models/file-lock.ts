/**
 * A small cross-process lock file, so that several processes (vitest workers,
 * a CLI run next to a starting agent) fetching into the same directory do the
 * download once and the others wait for it.
 *
 * The lock only avoids duplicate work: correctness does not depend on it,
 * because every file is written under a temporary name and renamed into place.
 * A lock left by a dead process (same host, pid gone) or older than `staleMs`
 * is broken.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

export interface FileLockOptions {
  /** Give up waiting after this long; default 10 minutes. */
  timeoutMs?: number;
  /** A lock older than this is considered abandoned; default 15 minutes. */
  staleMs?: number;
  /** Poll interval while waiting; default 250 ms. */
  pollMs?: number;
  /** Called once when the lock is held by someone else and we start waiting. */
  onWait?: (holder: string) => void;
}

interface LockContent {
  pid: number;
  host: string;
  token: string;
  at: string;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readLock(path: string): Promise<{ content?: LockContent; mtimeMs: number } | undefined> {
  try {
    const [text, st] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    try {
      return { content: JSON.parse(text) as LockContent, mtimeMs: st.mtimeMs };
    } catch {
      return { mtimeMs: st.mtimeMs }; // being written right now, or garbage
    }
  } catch {
    return undefined;
  }
}

/** Run `fn` while holding the lock file `lockPath` (created exclusively, removed afterwards). */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10 * 60 * 1000;
  const staleMs = options.staleMs ?? 15 * 60 * 1000;
  const pollMs = options.pollMs ?? 250;
  const me: LockContent = { pid: process.pid, host: hostname(), token: randomBytes(8).toString('hex'), at: new Date().toISOString() };
  const deadline = Date.now() + timeoutMs;
  let warned = false;

  for (;;) {
    try {
      const handle = await open(lockPath, 'wx');
      try {
        await handle.writeFile(JSON.stringify(me));
      } finally {
        await handle.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const held = await readLock(lockPath);
    if (held) {
      const c = held.content;
      const dead = c !== undefined && c.host === me.host && !processAlive(c.pid);
      const old = Date.now() - held.mtimeMs > staleMs;
      if (dead || old) {
        // Move it aside atomically rather than unlinking, so that two processes
        // breaking the same stale lock cannot both succeed on the same file.
        const aside = `${lockPath}.stale-${me.token}`;
        try {
          await rename(lockPath, aside);
          await rm(aside, { force: true });
        } catch {
          // someone else broke or released it first
        }
        continue;
      }
      if (!warned) {
        warned = true;
        options.onWait?.(c ? `pid ${c.pid} on ${c.host} since ${c.at}` : 'another process');
      }
    }
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${Math.round(timeoutMs / 1000)} s waiting for the lock ${lockPath}. If no other fetch is running, delete that file.`);
    }
    await sleep(pollMs);
  }

  try {
    return await fn();
  } finally {
    const held = await readLock(lockPath);
    if (held?.content?.token === me.token) await rm(lockPath, { force: true });
  }
}
