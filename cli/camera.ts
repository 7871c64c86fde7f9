/**
 * `footfall camera test <rtsp-url>`: an installer's check of one camera from the shop PC, before (or without)
 * head office. It opens the stream the way the agent's capture does (agent/capture: the same ffmpeg input and
 * picture options, 5 pictures a second at most 640 wide, a password kept off ffmpeg's command line), says why not
 * when it cannot (agent/capture/reasons.ts), counts the pictures for a few seconds and, with the face models,
 * counts faces and the share below the quality gate with the placement check's verdict (agent/runtime/checks.ts).
 *
 * Exit status 0 when pictures arrived, 1 otherwise (docs/agent.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LineTail, decodeArgs, hasCredentials, spawnFfmpeg, stopFfmpeg, writeStreamScript } from '../agent/capture/ffmpeg.js';
import { PpmReader, type RawImage } from '../agent/capture/ppm.js';
import { REASONS, explainFfmpeg, type Explanation, type ReasonCode } from '../agent/capture/reasons.js';
import { redact } from '../agent/capture/source.js';
import type { Cause } from '../agent/runtime/recognition.js';
import type { VisionEngine } from '../agent/vision/engine.js';

/** The agent's detect rate and the picture width this test decodes at. */
export const TEST_FPS = 5;
export const TEST_MAX_WIDTH = 640;
/** As CameraWorker: no picture this long after ffmpeg started is "camera did not answer in time". */
const FIRST_PICTURE_TIMEOUT_MS = 15_000;
export const MAX_SECONDS = 60;

export interface CameraTestOptions {
  url: string;
  seconds?: number;
  user?: string;
  password?: string;
  transport?: 'tcp' | 'udp';
  /** Face models folder; false: recognition not checked. Missing models are reported, not an error. */
  models?: string | false;
  /** Write a JPEG of the best picture here. */
  snapshot?: string;
  ffmpegPath?: string;
}

export interface StreamInfo {
  codec: string;
  profile?: string;
  width?: number;
  height?: number;
  fps?: number;
}

export interface RecognitionReport {
  checked: boolean;
  /** Why recognition was not checked. */
  problem?: string;
  model?: string;
  gate?: number;
  /** Pictures analysed (the newest one whenever the engine was free, as the placement check does). */
  analysed?: number;
  faces?: number;
  /** Most faces in one picture, and faces per analysed picture on average. */
  max_faces_per_picture?: number;
  faces_per_picture?: number;
  /** Face box widths in pixels of the decoded picture (at most 640 wide, what the agent analyses). */
  face_width_px?: { min: number; median: number; max: number } | null;
  below_gate?: number;
  fraction_below_gate?: number | null;
  verdict?: string;
  headline?: string;
  advice?: string;
}

export interface CameraTestReport {
  /** The URL with its password replaced by ***. */
  url: string;
  transport: 'tcp' | 'udp';
  connected: boolean;
  /** `ok`, or capture's reason word (`auth_failed`, `no_stream`, `unreachable`, `timeout`, `decode_error`, `failed`). */
  code: ReasonCode | 'ok';
  /** Why not, in words ("wrong password"); also set when the stream ended early after pictures. */
  reason: string | null;
  /** What the camera sends, as ffmpeg reported it (null when it did not say). */
  stream: StreamInfo | null;
  /** What the agent gets: pictures a second and their size. */
  decoded: { fps: number; width: number; height: number } | null;
  ms_to_first_picture: number | null;
  seconds: number;
  frames: number;
  recognition: RecognitionReport;
  snapshot: { file: string; width: number; height: number } | null;
}

/** The URL with `user`/`password` put in (URL-encoded) when given; the password ends up only in ffmpeg's script. */
export function withCredentials(url: string, user?: string, password?: string): string {
  if (user === undefined && password === undefined) return url;
  const m = url.match(/^(rtsps?:\/\/)(?:[^/@]*@)?(.*)$/i);
  if (!m) return url;
  const existing = url.match(/^rtsps?:\/\/([^/@:]*)(?::([^/@]*))?@/i);
  const u = user ?? (existing?.[1] ? decodeURIComponent(existing[1]) : '');
  const p = password ?? (existing?.[2] ? decodeURIComponent(existing[2]) : '');
  return `${m[1]}${encodeURIComponent(u)}${p ? ':' + encodeURIComponent(p) : ''}@${m[2]}`;
}

/** The password of a URL (decoded), to be redacted wherever ffmpeg repeats it. */
function passwordOf(url: string): string | undefined {
  const m = url.match(/^[a-z][a-z0-9+.-]*:\/\/[^/@:]*:([^/@]*)@/i);
  if (!m?.[1]) return undefined;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return m[1];
  }
}

/** `Stream #0:0: Video: h264 (Main), yuv420p(progressive), 1920x1080 [SAR 1:1 DAR 16:9], 25 fps, ...` of the input. */
export function parseStreamLine(line: string): StreamInfo | undefined {
  const m = line.match(/Stream #\d+:\d+.*?: Video: ([\w-]+)(?: \(([^)]*)\))?(.*)$/);
  if (!m) return undefined;
  const info: StreamInfo = { codec: m[1]! };
  if (m[2] && !/^0x|\//.test(m[2])) info.profile = m[2];
  const size = m[3]!.match(/, (\d{2,5})x(\d{2,5})\b/);
  if (size) {
    info.width = Number(size[1]);
    info.height = Number(size[2]);
  }
  const fps = m[3]!.match(/, ([\d.]+) (?:fps|tbr)\b/);
  if (fps) info.fps = Number(fps[1]);
  return info;
}


interface Tally {
  analysed: number;
  faces: number;
  below: number;
  maxPerPicture: number;
  widths: number[];
  causes: Record<Cause, number>;
  /** The picture with the most faces above the gate so far (the snapshot). */
  best?: { image: RawImage; good: number; faces: number };
}

/** Looks at the newest picture whenever the engine is free (as the placement check's probe) and tallies the faces. */
class FaceCounter {
  readonly tally: Tally = { analysed: 0, faces: 0, below: 0, maxPerPicture: 0, widths: [], causes: { size: 0, sharpness: 0, pose: 0, detector: 0 } };
  private pending: RawImage | undefined;
  private busy: Promise<void> | undefined;
  private done = false;

  constructor(private readonly engine: VisionEngine) {}

  consume(image: RawImage): void {
    if (this.done) return;
    this.pending = image;
    this.busy ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending) {
        const image = this.pending;
        this.pending = undefined;
        try {
          // The engine takes its buffer over: a copy, so the picture stays usable for the snapshot.
          const data = new Uint8Array(image.data);
          const { faces } = await this.engine.analyze({ width: image.width, height: image.height, data });
          const t = this.tally;
          t.analysed++;
          t.faces += faces.length;
          t.maxPerPicture = Math.max(t.maxPerPicture, faces.length);
          let good = 0;
          for (const face of faces) {
            t.widths.push(face.box.x2 - face.box.x1);
            if (face.passesGate) {
              good++;
              continue;
            }
            t.below++;
            // The weakest part, as the placement probe (agent/runtime/recognition.ts) attributes it.
            const p = face.qualityParts;
            const parts: [Cause, number][] = [
              ['size', p.size],
              ['sharpness', p.sharpness],
              ['pose', p.pose],
              ['detector', p.detector],
            ];
            parts.sort((a, b) => a[1] - b[1]);
            t.causes[parts[0]![0]]++;
          }
          if (!t.best || good > t.best.good || (good === t.best.good && faces.length > t.best.faces)) t.best = { image, good, faces: faces.length };
        } catch {
          // a picture the engine could not analyse: skipped
        }
      }
    } finally {
      this.busy = undefined;
    }
  }

  async finish(): Promise<Tally> {
    this.done = true;
    this.pending = undefined;
    await this.busy;
    return this.tally;
  }
}

async function openEngine(models: string): Promise<{ engine?: VisionEngine; problem?: string }> {
  const { loadManifest } = await import('../agent/models/fetch.js');
  try {
    await loadManifest(models);
  } catch {
    return { problem: `face models not installed in ${models} (footfall models fetch --dir ${models}, or --models DIR)` };
  }
  try {
    const { createVisionEngine } = await import('../agent/vision/engine.js');
    // One worker thread: this thread keeps reading ffmpeg's pictures while a picture is analysed.
    return { engine: await createVisionEngine({ modelsDir: models, workers: 1 }) };
  } catch (err) {
    return { problem: `face models would not load: ${(err as Error).message}` };
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Runs the test. Never throws for a camera problem: the report says what went wrong. */
export async function testCamera(options: CameraTestOptions): Promise<CameraTestReport> {
  const seconds = Math.min(MAX_SECONDS, Math.max(1, options.seconds ?? 5));
  const transport = options.transport ?? 'tcp';
  const url = withCredentials(options.url, options.user, options.password);
  const secrets = [passwordOf(url), options.password];
  const shown = redact(url, secrets);

  // Models first (a second or two): the stream's seconds are then all looked at.
  let engine: VisionEngine | undefined;
  let problem: string | undefined;
  if (options.models === false || options.models === undefined) problem = 'recognition not checked (no models folder given)';
  else ({ engine, problem } = await openEngine(options.models));

  const started = Date.now();
  const ioTimeoutMs = FIRST_PICTURE_TIMEOUT_MS + 5000;
  // As agent/capture/grab.ts: a password stays off ffmpeg's command line, in a private folder gone with ffmpeg.
  const dir = hasCredentials(url) ? mkdtempSync(path.join(tmpdir(), 'footfall-camera-test-')) : undefined;
  const input = dir ? writeStreamScript(url, dir, 'camera', { ioTimeoutMs, transport, ffmpegPath: options.ffmpegPath }) : url;
  const args = decodeArgs(input, { fps: TEST_FPS, maxWidth: TEST_MAX_WIDTH, ioTimeoutMs, transport, ffmpegPath: options.ffmpegPath });
  // The same options, but ffmpeg's informational lines too (the stream's codec and size), each tagged with its level
  // so that only warnings and errors explain a failure, as for the agent.
  const level = args.indexOf('-loglevel');
  if (level >= 0) args[level + 1] = 'level+info';
  const child = spawnFfmpeg(args, options.ffmpegPath);

  let stream: StreamInfo | null = null;
  let inInput = false;
  const problems = new LineTail(30, (line) => redact(line, secrets));
  const lines = new LineTail(200, (line) => redact(line, secrets), (line) => {
    const m = line.match(/^(?:\[[^\]]*@[^\]]*\] )?\[(\w+)\] ?(.*)$/);
    const lvl = m?.[1] ?? 'warning';
    const text = m ? m[2]! : line;
    if (lvl === 'info' || lvl === 'verbose') {
      if (/^Input #\d+/.test(text)) inInput = true;
      else if (/^(Output #|Stream mapping)/.test(text)) inInput = false;
      else if (inInput && !stream) stream = parseStreamLine(text) ?? null;
      return;
    }
    problems.push(line.replace(/\[(?:warning|error|fatal|panic)\] ?/, '') + '\n');
  });

  let frames = 0;
  let firstAt: number | undefined;
  let last: RawImage | undefined;
  let failure: Explanation | undefined;
  let spawnError: NodeJS.ErrnoException | undefined;
  let endTimer: NodeJS.Timeout | undefined;
  let timeUp = false;
  const counter = engine ? new FaceCounter(engine) : undefined;

  const reader = new PpmReader((img) => {
    if (timeUp) return; // arrived while ffmpeg was being stopped
    frames++;
    last = img;
    counter?.consume(img);
    if (firstAt === undefined) {
      firstAt = Date.now();
      clearTimeout(firstTimer);
      endTimer = setTimeout(() => {
        timeUp = true;
        void stopFfmpeg(child, 1000);
      }, seconds * 1000);
    }
  });
  child.stdout.on('data', (chunk: Buffer) => {
    if (failure) return;
    try {
      reader.push(chunk);
    } catch (err) {
      failure = { code: 'decode_error', reason: `unreadable pictures from ffmpeg (${(err as Error).message})` };
      void stopFfmpeg(child, 1000);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => lines.push(chunk));
  child.once('error', (err: NodeJS.ErrnoException) => {
    spawnError = err;
  });
  const firstTimer = setTimeout(() => {
    if (firstAt !== undefined) return;
    failure ??= REASONS.noAnswer;
    void stopFfmpeg(child, 1000);
  }, FIRST_PICTURE_TIMEOUT_MS);
  const stopNow = (): void => {
    failure ??= { code: 'failed', reason: 'stopped' };
    void stopFfmpeg(child, 1000);
  };
  process.once('SIGINT', stopNow);
  await new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  process.off('SIGINT', stopNow);
  clearTimeout(firstTimer);
  clearTimeout(endTimer);
  if (dir) rmSync(dir, { recursive: true, force: true });
  lines.end();
  problems.end();
  const tally = await counter?.finish();
  await engine?.close();

  const connected = frames > 0;
  let explanation: Explanation | undefined;
  if (spawnError) explanation = spawnError.code === 'ENOENT' ? REASONS.noFfmpeg : { code: 'failed', reason: `ffmpeg would not start (${spawnError.code})` };
  else if (!connected) {
    const fromLog = explainFfmpeg(problems.lines);
    explanation = failure && fromLog.code !== 'decode_error' ? failure : fromLog;
  } else if (!timeUp && !failure) {
    // The stream ended before the time was up.
    explanation = explainFfmpeg(problems.lines, true);
  } else if (failure && failure.code !== 'failed') explanation = failure;

  let recognition: RecognitionReport;
  if (!engine || !tally) recognition = { checked: false, problem: problem ?? 'recognition not checked' };
  else {
    const { placementVerdict, placementWords } = await import('../agent/runtime/checks.js');
    const words = placementWords({ faces: tally.faces, below: tally.below, causes: tally.causes, frames }, seconds);
    recognition = {
      checked: true,
      model: engine.modelSet,
      gate: engine.config.quality.gate,
      analysed: tally.analysed,
      faces: tally.faces,
      max_faces_per_picture: tally.maxPerPicture,
      faces_per_picture: tally.analysed ? Math.round((tally.faces / tally.analysed) * 100) / 100 : 0,
      face_width_px: tally.widths.length
        ? { min: Math.round(Math.min(...tally.widths)), median: Math.round(median(tally.widths)), max: Math.round(Math.max(...tally.widths)) }
        : null,
      below_gate: tally.below,
      fraction_below_gate: tally.faces ? Math.round((tally.below / tally.faces) * 1000) / 1000 : null,
      verdict: placementVerdict(tally.faces, tally.below),
      headline: words.headline,
      advice: words.advice,
    };
  }

  let snapshot: CameraTestReport['snapshot'] = null;
  const best = tally?.best?.image ?? last;
  if (options.snapshot && best) {
    const { pictureJpeg } = await import('../agent/runtime/picture.js');
    await writeFile(options.snapshot, await pictureJpeg(best, { width: best.width, quality: 90 }));
    snapshot = { file: options.snapshot, width: best.width, height: best.height };
  }

  return {
    url: shown,
    transport,
    connected,
    code: connected ? 'ok' : explanation!.code,
    reason: explanation?.reason ?? null,
    stream,
    decoded: last ? { fps: TEST_FPS, width: last.width, height: last.height } : null,
    ms_to_first_picture: firstAt !== undefined ? firstAt - started : null,
    seconds,
    frames,
    recognition,
    snapshot,
  };
}
