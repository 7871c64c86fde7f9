/**
 * One picture from a camera, or why not: for connection checks ("open the stream, read a frame, close it").
 * Starts its own short-lived ffmpeg, independent of the camera's worker.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineTail, decodeArgs, hasCredentials, spawnFfmpeg, stopFfmpeg, writeStreamScript } from './ffmpeg.js';
import { PpmReader, type RawImage } from './ppm.js';
import { REASONS, explainFfmpeg, type Explanation } from './reasons.js';
import { redact, rtspUrl, type CameraSource } from './source.js';

export type GrabResult = ({ ok: true; image: RawImage } | ({ ok: false } & Explanation)) & {
  /** How long it took, in milliseconds. */
  ms: number;
};

export interface GrabOptions {
  /** Scale down to at most this wide; default 1920. */
  maxWidth?: number;
  ffmpegPath?: string;
  /** Stops ffmpeg early (the agent shutting down): the result is `{ ok: false, code: 'failed', reason: 'stopped' }`. */
  signal?: AbortSignal;
}

/**
 * Opens the stream, returns its first picture within `timeoutMs` (default 10 s) and closes it. Never throws for
 * a camera problem: `{ ok: false, code, reason }` says what went wrong ("wrong password", ...).
 */
export async function grabFrame(target: string | CameraSource, timeoutMs = 10_000, options: GrabOptions = {}): Promise<GrabResult> {
  const started = Date.now();
  const url = typeof target === 'string' ? target : rtspUrl(target);
  const secrets = typeof target === 'string' ? [] : [target.password];
  const ioTimeoutMs = timeoutMs + 5000;
  // A password stays off ffmpeg's command line (see writeStreamScript): in a private folder, gone when ffmpeg is.
  const dir = hasCredentials(url) ? mkdtempSync(join(tmpdir(), 'footfall-grab-')) : undefined;
  const input = dir ? writeStreamScript(url, dir, 'camera', { ioTimeoutMs, ffmpegPath: options.ffmpegPath }) : url;
  const args = decodeArgs(input, { fps: 25, maxWidth: options.maxWidth ?? 1920, frames: 1, ioTimeoutMs, ffmpegPath: options.ffmpegPath });
  const child = spawnFfmpeg(args, options.ffmpegPath);
  const stderr = new LineTail(30, (line) => redact(line, secrets));
  let image: RawImage | undefined;
  let failure: Explanation | undefined;
  let spawnError: NodeJS.ErrnoException | undefined;

  const reader = new PpmReader((img) => {
    image ??= img;
    void stopFfmpeg(child, 1000); // one is enough
  });
  child.stdout.on('data', (chunk: Buffer) => {
    if (image || failure) return;
    try {
      reader.push(chunk);
    } catch (err) {
      failure = { code: 'decode_error', reason: `unreadable pictures from ffmpeg (${(err as Error).message})` };
      void stopFfmpeg(child, 1000);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  child.once('error', (err: NodeJS.ErrnoException) => {
    spawnError = err;
  });
  const timer = setTimeout(() => {
    if (image) return;
    failure ??= REASONS.noAnswer;
    void stopFfmpeg(child, 1000);
  }, timeoutMs);
  const abort = (): void => {
    if (image) return;
    failure ??= { code: 'failed', reason: 'stopped' };
    void stopFfmpeg(child, 1000);
  };
  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener('abort', abort, { once: true });
  await new Promise<void>((resolve) => child.once('close', () => resolve()));
  options.signal?.removeEventListener('abort', abort);
  if (dir) rmSync(dir, { recursive: true, force: true });
  clearTimeout(timer);
  stderr.end();

  const ms = Date.now() - started;
  if (image) return { ok: true, image, ms };
  if (spawnError) return { ok: false, ...(spawnError.code === 'ENOENT' ? REASONS.noFfmpeg : { code: 'failed', reason: `ffmpeg would not start (${spawnError.code})` }), ms };
  if (options.signal?.aborted && failure) return { ok: false, ...failure, ms };
  const fromLog = explainFfmpeg(stderr.lines);
  return { ok: false, ...(failure && fromLog.code !== 'decode_error' ? failure : fromLog), ms };
}
