import fs from 'node:fs';
import { childrenOf } from './proc.js';

/** /proc readings for the scale benchmark's other processes: a server and its children (PostgreSQL's backends). */

/** USER_HZ, as bench/proc.ts. */
const TICKS = 100;

/** utime + stime (the process's own) and cutime + cstime (its children's that it has waited for), in seconds. */
function times(pid: number): { own: number; waited: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name: state is field 3; utime 14, stime 15, cutime 16, cstime 17.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return { own: (f[11]! + f[12]!) / TICKS, waited: (f[13]! + f[14]!) / TICKS };
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds used so far by a process and all its descendants, ended ones included: PostgreSQL's server waits for
 * each backend it forked, so an ended backend's CPU is in its cutime/cstime; a living one's is read from it. (A
 * backend that ends between the two reads is missed once: a connection pool keeps its backends.)
 */
export function clusterCpuSeconds(pid: number): number {
  const t = times(pid);
  if (!t) return Number.NaN;
  let sum = t.own + t.waited;
  for (const child of childrenOf(pid)) {
    const c = clusterCpuSeconds(child);
    if (Number.isFinite(c)) sum += c;
  }
  return sum;
}

/** The first process whose command line (its arguments) satisfies `match`. */
export function pidByCommandLine(match: (args: string[]) => boolean): number | undefined {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const args = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
      if (args.length > 0 && match(args)) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}
