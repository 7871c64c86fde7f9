/**
 * CPU time of the calling thread (Linux: /proc/thread-self/schedstat, in
 * nanoseconds), for the benchmark and diagnostics; undefined elsewhere. The
 * kernel updates it at scheduler ticks and switches, so it is exact over long
 * spans and a sample (tick-sized steps) over short ones: use processCpuMs for
 * short spans on a thread that is the only busy one.
 */
import { readFileSync } from 'node:fs';

export function threadCpuMs(): number | undefined {
  try {
    const [onCpu] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    const ns = Number(onCpu);
    return Number.isFinite(ns) ? ns / 1e6 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU time of the whole process (getrusage: exact at any span), in ms. */
export function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
