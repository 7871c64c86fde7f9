/**
 * What the benchmarks of the real `footfall agent` process share (bench/agent-real.ts, bench/door.ts): a local RTSP
 * server playing a video, ffmpeg alone decoding a stream with capture's own arguments (the bare reference), and the
 * statistics of 1-s /proc samples.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { decodeArgs } from '../agent/capture/ffmpeg.js';
import { exited, type Proc } from './api.js';
import { cpuSeconds, endProcess } from './proc.js';
import { ffmpegBin } from '../agent/capture/ffmpeg-bin.js';
import { startRtspServer } from '../agent/fixtures/rtsp-server.js';

export interface Rtsp {
  port: number;
  stop(): Promise<void>;
}

/** The RTSP test server (agent/fixtures/rtsp-server.ts: node, ffmpeg as the source) looping `file` at rtsp://127.0.0.1:<port><mount>. */
export async function startRtsp(file: string, mount: string): Promise<Rtsp> {
  return startRtspServer({ file, mounts: [mount] });
}

/**
 * ffmpeg alone on a stream with capture's own arguments (`fps`, `maxWidth`), output thrown away: CPU % of a core,
 * one sample a second for `seconds` after `warmupMs`.
 */
export async function bareDecode(url: string, seconds: number, opts: { fps: number; maxWidth: number; warmupMs: number }): Promise<number[]> {
  const args = decodeArgs(url, { fps: opts.fps, maxWidth: opts.maxWidth }).map((a) => (a === 'pipe:1' ? '/dev/null' : a));
  const child = spawn(ffmpegBin(), ['-y', ...args], { stdio: ['ignore', 'ignore', 'ignore'] });
  const exit = exited(child);
  await new Promise((r) => setTimeout(r, opts.warmupMs));
  const pcts: number[] = [];
  let c0 = cpuSeconds(child.pid!)!;
  for (let i = 0; i < seconds; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const c = cpuSeconds(child.pid!) ?? c0;
    pcts.push(100 * (c - c0));
    c0 = c;
  }
  child.kill('SIGTERM');
  await exit;
  return pcts;
}

/** Stops `procs` newest first (SIGTERM, SIGKILL after 5 s), then head office. */
export async function stopProcesses(procs: ({ child: ChildProcess; exit: Promise<void> } | Rtsp)[], server: Proc | undefined): Promise<void> {
  for (const p of [...procs].reverse()) {
    if ('stop' in p) {
      await p.stop();
      continue;
    }
    await endProcess(p, 5000);
  }
  if (server) {
    server.child.kill('SIGTERM');
    await server.exit;
  }
}

/** Mean of the finite values (NaN when none). */
export const mean = (xs: number[]) => {
  const s = xs.filter(Number.isFinite);
  return s.length ? s.reduce((a, b) => a + b, 0) / s.length : Number.NaN;
};
/** Median of the finite values (NaN when none). */
export const med = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
/** "min-max" of the finite values with `d` decimals ("-" when none). */
export const range = (xs: number[], d = 1) => {
  const s = xs.filter(Number.isFinite);
  return s.length ? `${Math.min(...s).toFixed(d)}-${Math.max(...s).toFixed(d)}` : '-';
};
/** One decimal, "-" for NaN. */
export const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
