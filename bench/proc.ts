import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

/** Linux /proc readings of another process, for benchmarks that measure real processes. */

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on every Linux this runs on). */
const TICKS = 100;

/** CPU seconds (user + system) used so far by a process, or undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which is in brackets and may hold spaces): state is field 3; utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / TICKS;
  } catch {
    return undefined;
  }
}

/** Resident set size in bytes (VmRSS), or undefined when the process is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The direct children of a process (their pids). */
export function childrenOf(pid: number): number[] {
  try {
    const out: number[] = [];
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      const text = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
    return out;
  } catch {
    return [];
  }
}

/** The command line of a process. */
export function commandOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** Total CPU seconds of the whole machine (all cores, busy and idle), from /proc/stat. */
export function machineBusy(): { busy: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const idle = (line[3] ?? 0) + (line[4] ?? 0);
  const total = line.reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / TICKS, total: total / TICKS };
}


/** Polls `f` every 50 ms until it returns something other than undefined (throws after `timeoutMs`). */
export async function waitFor<T>(what: string, f: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`benchmark: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves when the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves once it has exited. */
export async function endProcess(p: { child: ChildProcess; exit: Promise<void> }, graceMs: number): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  const killer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  await p.exit;
  clearTimeout(killer);
}

/** A process started with its stdout and stderr (a JSON log) going to a file. */
export interface LoggedProcess {
  child: ChildProcess;
  pid: number;
  exit: Promise<void>;
  /** The log so far. */
  log(): string;
  /** Waits for the first log line for which `match` gives something, and returns that. */
  waitLog<T>(what: string, match: (line: string) => T | undefined, timeoutMs?: number): Promise<T>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL unless it has exited; waits for the exit. */
  kill(): Promise<void>;
}

export function spawnLogged(command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; logFile: string }): LoggedProcess {
  const out = fs.openSync(opts.logFile, 'w');
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const exit = exited(child);
  const log = () => fs.readFileSync(opts.logFile, 'utf8');
  return {
    child,
    pid: child.pid!,
    exit,
    log,
    waitLog: (what, match, timeoutMs = 60_000) =>
      waitFor(what, () => {
        for (const line of log().split('\n')) {
          const v = match(line);
          if (v !== undefined) return v;
        }
        return undefined;
      }, timeoutMs),
    async stop() {
      child.kill('SIGTERM');
      await exit;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exit;
    },
  };
}

/** One second of a `footfall agent` process: its CPU % (node), its ffmpeg child's (NaN when ffmpeg changed), its RSS in MiB. */
export interface AgentSample {
  node: number;
  ffmpeg: number;
  rss: number;
}

/** The first ffmpeg among a process's children. */
export function ffmpegChildOf(pid: number): number | undefined {
  return childrenOf(pid).find((p) => commandOf(p).includes('ffmpeg'));
}

/** Samples an agent process and its ffmpeg every second until wall-clock `stopAtMs`, then waits out the rest. */
export async function sampleAgent(pid: number, stopAtMs: number): Promise<AgentSample[]> {
  const samples: AgentSample[] = [];
  let a0 = cpuSeconds(pid)!;
  let f = ffmpegChildOf(pid);
  let f0 = f !== undefined ? (cpuSeconds(f) ?? 0) : 0;
  let t0 = performance.now();
  while (Date.now() < stopAtMs - 1000) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = performance.now();
    const a = cpuSeconds(pid)!;
    const fNow = ffmpegChildOf(pid);
    const fc = fNow !== undefined ? (cpuSeconds(fNow) ?? 0) : 0;
    const wall = (now - t0) / 1000;
    samples.push({ node: (100 * (a - a0)) / wall, ffmpeg: fNow === f ? (100 * (fc - f0)) / wall : Number.NaN, rss: (rssBytes(pid) ?? 0) / 2 ** 20 });
    [a0, f, f0, t0] = [a, fNow, fc, now];
  }
  await new Promise((r) => setTimeout(r, Math.max(0, stopAtMs - Date.now())));
  return samples;
}
