/**
 * CPU time of the calling thread (Linux: /proc/thread-self/schedstat, in
 * nanoseconds), for the benchmark and diagnostics. undefined elsewhere.
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
