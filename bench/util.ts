import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';

/** Shared helpers for benchmarks. */

/** Value at quantile p (0..1) of the samples (nearest rank). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

export function ms(x: number): string {
  if (!Number.isFinite(x)) return '-';
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3);
}

export function pct(x: number): string {
  return `${(100 * x).toFixed(x >= 0.9995 || x === 0 ? 0 : 1)} %`;
}

export function count(n: number): string {
  return n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n);
}

/** A markdown table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Milliseconds taken by `f`. */
export function time(f: () => void): number {
  const t = performance.now();
  f();
  return performance.now() - t;
}

export async function timeAsync(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

let gcFn: (() => void) | undefined;

/** Runs a full garbage collection (for memory measurements) without needing --expose-gc on the command line. */
export function gc(): void {
  if (!gcFn) {
    v8.setFlagsFromString('--expose-gc');
    gcFn = vm.runInNewContext('gc') as () => void;
  }
  gcFn();
}

/** Bytes held by the process that a data structure can account for: JS heap plus array buffers. */
export function heldBytes(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

export function progress(message: string): void {
  process.stderr.write(`  ${message}\n`);
}

export function machine(): string {
  const cpus = os.cpus();
  const gib = (os.totalmem() / 2 ** 30).toFixed(0);
  return `${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${gib} GiB, Node ${process.version}`;
}

export function loadAverage(): string {
  return os.loadavg().map((x) => x.toFixed(1)).join(' / ');
}

export async function settle(): Promise<void> {
  gc();
  await new Promise((r) => setTimeout(r, 200));
  gc();
}

/** The platform admin of a benchmark's head office. */
export const BENCH_ADMIN = { email: 'bench@footfall.local', password: 'bench-password-1' } as const;

/** Head office's settings for a benchmark (for loadConfig): loopback, any free ports, a silent log, BENCH_ADMIN. */
export function benchServerSettings(dataDir: string): Record<string, string> {
  return {
    FOOTFALL_DATA_DIR: dataDir,
    FOOTFALL_HTTP_HOST: '127.0.0.1',
    FOOTFALL_HTTP_PORT: '0',
    FOOTFALL_MQTT_HOST: '127.0.0.1',
    FOOTFALL_MQTT_PORT: '0',
    FOOTFALL_ADMIN_EMAIL: BENCH_ADMIN.email,
    FOOTFALL_ADMIN_PASSWORD: BENCH_ADMIN.password,
    FOOTFALL_LOG_LEVEL: 'silent',
  };
}

/**
 * The benches' seeded data: a linear congruential sequence and, from its first 512 values, a stored-template BLOB
 * (512 little-endian float32) that every seeded customer shares (they measure reads, not matching).
 */
export function seededData(seed = 17): { rand: () => number; template: Buffer } {
  let s = seed;
  const rand = () => {
    s = (s * 1_103_515_245 + 12_345) >>> 0;
    return s / 2 ** 32;
  };
  const template = Buffer.alloc(512 * 4);
  for (let d = 0; d < 512; d++) template.writeFloatLE((rand() - 0.5) / 11.3, d * 4);
  return { rand, template };
}
