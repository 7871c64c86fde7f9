/**
 * Decoding a video file into RGB frames with ffmpeg, for tests, the benchmark
 * and diagnostics (the agent's live capture is agent/capture).
 */
import { spawn } from 'node:child_process';
import { ffmpegBin, probeVideoFile } from '../capture/ffmpeg-bin.js';
import type { RgbImage } from './types.js';


export async function probeVideo(path: string): Promise<{ width: number; height: number; duration: number }> {
  const { width, height, duration } = await probeVideoFile(path);
  return { width, height, duration };
}

export interface DecodeOptions {
  /** Output frame rate (ffmpeg `fps` filter); default the file's own. */
  fps?: number;
}

/**
 * Frames of a video as RGB24, in order, each in its own buffer. Decoding runs
 * in an ffmpeg child process; `cpuMs` is filled in (user + system CPU of
 * ffmpeg, from bash's `times`) once iteration finishes.
 */
export async function* decodeVideo(path: string, opts: DecodeOptions = {}, usage?: { cpuMs?: number }): AsyncGenerator<RgbImage> {
  const { width, height } = await probeVideo(path);
  const vf = opts.fps ? ['-vf', `fps=${opts.fps}`] : [];
  const args = ['-nostdin', '-v', 'error', '-i', path, ...vf, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'];
  // Run through bash so `times` can report ffmpeg's CPU time on fd 3.
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const bin = `'${ffmpegBin().replace(/'/g, `'\\''`)}'`;
  const child = spawn('bash', ['-c', `${bin} ${quoted}; rc=$?; times >&3; exit $rc`], { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let timesText = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  (child.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => (timesText += d.toString()));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  const size = width * height * 3;
  let buf: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of child.stdout!) {
      buf = buf.length === 0 ? (chunk as Buffer) : Buffer.concat([buf, chunk as Buffer]);
      while (buf.length >= size) {
        const data = new Uint8Array(size);
        data.set(buf.subarray(0, size));
        buf = buf.subarray(size);
        yield { width, height, data };
      }
    }
    const code = await exited;
    if (code !== 0) throw new Error(`ffmpeg failed on ${path} (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
    if (usage) usage.cpuMs = parseChildTimes(timesText);
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

/** bash `times` second line ("0m1.234s 0m0.050s"): children's user and system time, in ms. */
function parseChildTimes(text: string): number | undefined {
  const line = text.trim().split('\n')[1];
  if (!line) return undefined;
  const parts = [...line.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60_000 + Number(m[2]) * 1000);
  return parts.length === 2 ? parts[0]! + parts[1]! : undefined;
}
