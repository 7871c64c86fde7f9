/**
 * Body counting on real clips, offline (`npm run bench -- door-offline`, issue 25): for fast iteration on the
 * counter, without RTSP or head office. Each labelled clip is decoded by ffmpeg at the camera rate (CLIP_FPS, default
 * the clip's manifest `fps` or 10) into RGB frames that go, one at a time, through the same DoorCounting the agent
 * runs (motion gating, door_fps pacing, the real person detector in its worker thread, tracker, line); the next frame
 * is handed over once the detector is idle, so every frame a camera would have analysed is analysed (the detector's
 * ms per call says whether it keeps up at that rate). Per clip: truth vs counted entries and exits, precision and
 * recall of crossings (a counted crossing matches a true one of its direction within 1.5 s, each true one at most
 * once), detector calls, the detector thread's CPU (process CPU minus the main thread's) and the process's CPU per
 * second of video (= share of a core at real time). ffmpeg's decoding is its own process and is not included.
 *
 * Clips: a manifest (DOOR_CLIPS, default bench/real-footage/clips.json) listing `{ id, file?, line, fps?, scale? }`
 * with `line` a CountingLine; the video at `file` (relative to the manifest's folder) or test/fixtures/real/<id>.mp4
 * beside it; labels at labels/<id>.json (reconciled) or labels/<id>.a.json beside the manifest ({ crossings: [{ t, direction }] }). DOOR_ONLY=id,id
 * picks clips; DOOR_FPS sets door_fps (default the agent's 3; 0 every frame). Options under test (the agent's
 * defaults when unset): DOOR_BAND, DOOR_FIT, DOOR_SIZE, DOOR_FOLLOW, DOOR_PERSON_PX (0: off), DOOR_NEAR_FPS,
 * DOOR_ROI and DOOR_STILL (1 / 0), DOOR_PER_HEIGHT and DOOR_LINE_MARGIN (the line's hysteresis), DOOR_BORN_SIDE and
 * DOOR_LOST_PAST, DOOR_EMERGED (the line's rules for tracks born in its band, lost past it, or first seen beside
 * another just past it; 0: off), DOOR_MAX_LOST (ms),
 * DOOR_MIN_SCORE, DOOR_MAX_IOU (its NMS) and DOOR_MODEL (the detector's). DOOR_VERBOSE prints truth and counted crossings; DOOR_TRACE every
 * look (its region and boxes, per mille of the picture) and crossing. Hard cases derived from a real clip:
 * DOOR_CLIPS=bench/real-footage/derived/clips.json after its make.sh. DOOR_DUMP=dir writes every look (region, boxes)
 * to <dir>/<clip>.looks.json, which bench/door-replay.ts replays through the tracker and the line without the detector.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { assign } from '../agent/bodies/assign.js';
import { startBodyDetectorThread } from '../agent/bodies/detector-thread.js';
import { shapeInput, type Fit } from '../agent/bodies/image.js';
import { MOVENET_SIZE } from '../agent/bodies/movenet.js';
import type { DetectHint } from '../agent/bodies/types.js';
import type { RawImage } from '../agent/capture/ppm.js';
import type { Frame } from '../agent/capture/frame.js';
import type { BodyModelId } from '../agent/models/catalogue.js';
import { ffmpegBin } from '../agent/capture/ffmpeg-bin.js';
import { ensureTestBodyModels, testModelsDir } from '../agent/models/test-cache.js';
import { DoorCounting, type DoorCountingOptions } from '../agent/runtime/doors.js';
import { processCpuMs, threadCpuMs } from '../agent/vision/cpu.js';
import type { CountingLine } from '../shared/agent-api.js';
import { root } from './api.js';
import { progress, table } from './util.js';

/** Settings under test (the agent's defaults when unset): DOOR_FIT, DOOR_SIZE (MoveNet input side), DOOR_BAND (margin; 0: whole picture). */
const FIT = (process.env.DOOR_FIT ?? 'shape') as Fit;
const SIZE = process.env.DOOR_SIZE ? Number(process.env.DOOR_SIZE) : undefined;
const BAND = process.env.DOOR_BAND !== undefined ? Number(process.env.DOOR_BAND) : undefined;

export interface Clip {
  id: string;
  video: string;
  line: CountingLine;
  fps: number;
  truth: { t: number; direction: 'in' | 'out' }[];
}

interface ManifestEntry {
  id: string;
  file?: string;
  video?: string;
  line: CountingLine;
  fps?: number;
}

/** The clips of a manifest that have a video and labels. */
export function loadClips(manifest: string): Clip[] {
  if (!fs.existsSync(manifest)) return [];
  const dir = path.dirname(manifest);
  const raw = JSON.parse(fs.readFileSync(manifest, 'utf8')) as ManifestEntry[] | { clips: ManifestEntry[] };
  const entries = Array.isArray(raw) ? raw : raw.clips;
  const clips: Clip[] = [];
  for (const e of entries) {
    const candidates = [e.file, e.video]
      .filter((f): f is string => typeof f === 'string')
      .flatMap((f) => [path.resolve(dir, f), path.resolve(root, f)])
      .concat([path.resolve(dir, '../../test/fixtures/real', `${e.id}.mp4`), path.resolve(root, 'test/fixtures/real', `${e.id}.mp4`)]);
    const video = candidates.find((f) => fs.existsSync(f));
    // The reconciled labels when there are, else labeller a's (the derived clips': from construction).
    const labels = [`${e.id}.json`, `${e.id}.a.json`].map((f) => path.join(dir, 'labels', f)).find((f) => fs.existsSync(f));
    if (!video || !labels) continue;
    const truth = (JSON.parse(fs.readFileSync(labels, 'utf8')) as { crossings: { t: number; direction: 'in' | 'out' }[] }).crossings;
    clips.push({ id: e.id, video, line: e.line, fps: e.fps ?? 10, truth });
  }
  return clips;
}

/**
 * Matching of counted crossings to true ones of the same direction within `windowS`, each at most once: as many
 * pairs as can be made, then the least total time difference (optimal assignment; greedy nearest-first matching
 * lost pairs where people cross a second apart and each crossing is stamped a little late).
 */
export function matchCrossings(
  truth: readonly { t: number; direction: string }[],
  counted: readonly { t: number; direction: string }[],
  windowS = 1.5,
): { tp: number; fp: number; fn: number } {
  const cost = counted.map((c) => truth.map((t) => (t.direction === c.direction && Math.abs(t.t - c.t) <= windowS ? Math.abs(t.t - c.t) : Infinity)));
  const tp = assign(cost, truth.length, windowS + 1).filter((j) => j >= 0).length;
  return { tp, fp: counted.length - tp, fn: truth.length - tp };
}

/** Decodes `video` at `fps` into RGB24 frames, calling `onFrame` for each (awaited: back-pressure on ffmpeg). */
export async function decodeClip(video: string, fps: number, onFrame: (data: Buffer, width: number, height: number, t: number) => Promise<void>): Promise<void> {
  const probe = await new Promise<string>((resolve, reject) => {
    const p = spawn('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height', '-of', 'csv=p=0', video]);
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('close', () => resolve(out.trim()));
  });
  const [width, height] = probe.split(',').map(Number) as [number, number];
  const size = width * height * 3;
  const ff = spawn(ffmpegBin(), ['-v', 'error', '-i', video, '-vf', `fps=${fps}`, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let buf: Buffer = Buffer.alloc(0);
  let n = 0;
  for await (const chunk of ff.stdout as AsyncIterable<Buffer>) {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= size) {
      const frame = Buffer.from(buf.subarray(0, size));
      buf = buf.subarray(size);
      await onFrame(frame, width, height, n++ / fps);
    }
  }
}

export interface ClipResult {
  id: string;
  truthIn: number;
  truthOut: number;
  countedIn: number;
  countedOut: number;
  precision: number;
  recall: number;
  fp: number;
  fn: number;
  frames: number;
  calls: number;
  detectorMsPerCall: number;
  /** Detector input pixels per second of video, thousands. */
  kpxPerSecond: number;
  detectorCpuPct: number;
  processCpuPct: number;
  crossings: { t: number; direction: 'in' | 'out' }[];
}

/** One clip through a fresh DoorCounting (its own detector thread). */
export async function runClip(clip: Clip, options: Partial<DoorCountingOptions> = {}): Promise<ClipResult> {
  const crossings: { t: number; direction: 'in' | 'out' }[] = [];
  /** Every look (DOOR_DUMP: written to <DOOR_DUMP>/<clip>.looks.json for bench/door-replay.ts). */
  const looks: { t: number; region: { x: number; y: number; w: number; h: number }; boxes: { x: number; y: number; w: number; h: number; score: number }[] }[] = [];
  let size = { width: 0, height: 0 };
  let inputPixels = 0;
  const start = Date.UTC(2026, 0, 1);
  const log = { debug() {}, info() {}, warn: console.warn, error: console.error };
  const doors = new DoorCounting({
    lineOf: () => clip.line,
    loadDetector: async () => {
      const detector = await startBodyDetectorThread(testModelsDir(), {
        fit: FIT,
        ...(SIZE ? { inputSize: SIZE } : {}),
        ...(process.env.DOOR_MIN_SCORE ? { minScore: Number(process.env.DOOR_MIN_SCORE) } : {}),
        ...(process.env.DOOR_MAX_IOU ? { maxIou: Number(process.env.DOOR_MAX_IOU) } : {}),
        ...(process.env.DOOR_MODEL ? { model: process.env.DOOR_MODEL as BodyModelId } : {}),
        // As the agent (agent/runtime/doors.ts): the whole model on TF.js with FOOTFALL_PERSON_ENGINE=tfjs.
        ...(process.env.FOOTFALL_PERSON_ENGINE === 'tfjs' ? { engine: 'tfjs' as const } : {}),
      });
      // The input pixels of each look (MoveNet, `shape` fit): the detector's cost, whatever the machine's load.
      return {
        name: detector.name,
        close: () => detector.close(),
        detect: (image: RawImage, hint?: DetectHint) => {
          const side = SIZE ?? MOVENET_SIZE;
          const input = FIT === 'shape' ? shapeInput(image.width, image.height, side, hint?.maxScale) : { width: side, height: side };
          inputPixels += input.width * input.height;
          return detector.detect(image, hint);
        },
      };
    },
    onCrossing: (_camera, c) => {
      crossings.push({ t: (c.at.getTime() - start) / 1000, direction: c.direction });
      if (process.env.DOOR_TRACE) console.error(`  ${((c.at.getTime() - start) / 1000).toFixed(1)} CROSSING ${c.direction} ${c.trackId}`);
    },
    ...(process.env.DOOR_TRACE || process.env.DOOR_DUMP
      ? {
          onLook: (_camera: string, at: Date, r: { x: number; y: number; w: number; h: number }, boxes: readonly { x: number; y: number; w: number; h: number; score: number }[]) => {
            looks.push({ t: (at.getTime() - start) / 1000, region: { ...r }, boxes: boxes.map((b) => ({ ...b })) });
            if (!process.env.DOOR_TRACE) return;
            console.error(
              `  ${((at.getTime() - start) / 1000).toFixed(1)} look ${r.w}x${r.h}+${r.x}+${r.y}: ` +
                boxes.map((b) => `x${Math.round((b.x + b.w / 2) * 1000)} y${Math.round((b.y + b.h / 2) * 1000)} h${Math.round(b.h * 1000)} s${b.score.toFixed(2)}`).join(' | '),
            );
          },
        }
      : {}),
    log,
    maxFps: Number(process.env.DOOR_FPS ?? 3),
    ...(process.env.DOOR_FOLLOW !== undefined ? { follow: process.env.DOOR_FOLLOW === '1' } : {}),
    ...(process.env.DOOR_PERSON_PX !== undefined ? { personPx: Number(process.env.DOOR_PERSON_PX) || false } : {}),
    ...(process.env.DOOR_CROWD_PX !== undefined ? { crowdPx: Number(process.env.DOOR_CROWD_PX) || false } : {}),
    ...(process.env.DOOR_NEAR_FPS !== undefined ? { nearFps: Number(process.env.DOOR_NEAR_FPS) } : {}),
    ...(process.env.DOOR_ROI !== undefined ? { roi: process.env.DOOR_ROI === '1' } : {}),
    ...(process.env.DOOR_STILL !== undefined ? { stillTracks: process.env.DOOR_STILL === '1' } : {}),
    ...(process.env.DOOR_LINE_MARGIN !== undefined || process.env.DOOR_PER_HEIGHT !== undefined || process.env.DOOR_BORN_SIDE !== undefined || process.env.DOOR_LOST_PAST !== undefined || process.env.DOOR_EMERGED !== undefined
      ? {
          line: {
            ...(process.env.DOOR_LINE_MARGIN ? { margin: Number(process.env.DOOR_LINE_MARGIN) } : {}),
            ...(process.env.DOOR_PER_HEIGHT ? { perHeight: Number(process.env.DOOR_PER_HEIGHT) } : {}),
            ...(process.env.DOOR_BORN_SIDE ? { bornSide: Number(process.env.DOOR_BORN_SIDE) } : {}),
            ...(process.env.DOOR_LOST_PAST ? { lostPast: Number(process.env.DOOR_LOST_PAST) } : {}),
            ...(process.env.DOOR_EMERGED ? { emerged: Number(process.env.DOOR_EMERGED) } : {}),
          },
        }
      : {}),
    ...(process.env.DOOR_MAX_LOST !== undefined ? { tracker: { maxLostMs: Number(process.env.DOOR_MAX_LOST) } } : {}),
    ...(BAND !== undefined ? { band: BAND > 0 ? { margin: BAND } : false } : {}),
    ...options,
  });
  // The detector's thread is unref'd (it must not keep an agent alive): this keeps the loop alive while it works.
  const alive = setInterval(() => undefined, 1000);
  doors.prepare();
  await doors.idle();
  let frames = 0;
  const p0 = processCpuMs();
  const m0 = threadCpuMs() ?? 0;
  await decodeClip(clip.video, clip.fps, async (data, width, height, t) => {
    const frame: Frame = { cameraId: clip.id, at: new Date(start + Math.round(t * 1000)), width, height, data };
    frames++;
    size = { width, height };
    doors.consume(frame);
    await doors.idle();
  });
  const processMs = processCpuMs() - p0;
  const mainMs = (threadCpuMs() ?? 0) - m0;
  const calls = doors.detectorTime.calls;
  const pixels = inputPixels;
  const wall = doors.detectorTime.ms;
  await doors.close();
  clearInterval(alive);
  if (process.env.DOOR_DUMP) {
    fs.mkdirSync(process.env.DOOR_DUMP, { recursive: true });
    fs.writeFileSync(path.join(process.env.DOOR_DUMP, `${clip.id}.looks.json`), JSON.stringify({ id: clip.id, line: clip.line, ...size, truth: clip.truth, looks }));
  }
  const durationS = frames / clip.fps;
  const truthIn = clip.truth.filter((c) => c.direction === 'in').length;
  const { tp, fp, fn } = matchCrossings(clip.truth, crossings);
  return {
    id: clip.id,
    truthIn,
    truthOut: clip.truth.length - truthIn,
    countedIn: crossings.filter((c) => c.direction === 'in').length,
    countedOut: crossings.filter((c) => c.direction === 'out').length,
    precision: crossings.length ? tp / crossings.length : 1,
    recall: clip.truth.length ? tp / clip.truth.length : 1,
    fp,
    fn,
    frames,
    calls,
    detectorMsPerCall: calls ? wall / calls : 0,
    kpxPerSecond: pixels / 1000 / durationS,
    detectorCpuPct: ((processMs - mainMs) / 1000 / durationS) * 100,
    processCpuPct: (processMs / 1000 / durationS) * 100,
    crossings,
  };
}

export function manifestPath(): string {
  return path.resolve(process.env.DOOR_CLIPS ?? path.join(root, 'bench/real-footage/clips.json'));
}

export async function run(): Promise<string | undefined> {
  const manifest = manifestPath();
  const only = process.env.DOOR_ONLY?.split(',');
  const clips = loadClips(manifest).filter((c) => !only || only.includes(c.id));
  if (clips.length === 0) {
    console.error(`door-offline: no labelled clips in ${manifest} (DOOR_CLIPS names another manifest)`);
    return undefined;
  }
  await ensureTestBodyModels();
  const rows: (string | number)[][] = [];
  for (const clip of clips) {
    progress(`door-offline: ${clip.id}`);
    const r = await runClip(clip);
    if (process.env.DOOR_VERBOSE) console.error(JSON.stringify({ truth: clip.truth, counted: r.crossings }));
    console.error(
      `${r.id}: in ${r.countedIn}/${r.truthIn} out ${r.countedOut}/${r.truthOut} P ${r.precision.toFixed(2)} R ${r.recall.toFixed(2)} ` +
        `calls ${r.calls}/${r.frames} input ${r.kpxPerSecond.toFixed(0)} kpx/s det ${r.detectorMsPerCall.toFixed(0)} ms/call det CPU ${r.detectorCpuPct.toFixed(1)} % proc ${r.processCpuPct.toFixed(1)} %`,
    );
    rows.push([
      r.id,
      `${r.truthIn} / ${r.truthOut}`,
      `${r.countedIn} / ${r.countedOut}`,
      r.precision.toFixed(2),
      r.recall.toFixed(2),
      `${r.calls} / ${r.frames}`,
      r.kpxPerSecond.toFixed(0),
      r.detectorMsPerCall.toFixed(0),
      `${r.detectorCpuPct.toFixed(1)} %`,
      `${r.processCpuPct.toFixed(1)} %`,
    ]);
  }
  return [
    '## Door counting on real clips, offline (door-offline)',
    '',
    `Each labelled clip decoded at its camera rate and fed through the agent's DoorCounting (door_fps ${process.env.DOOR_FPS ?? 3}, real detector in its thread), the next frame once the detector is idle. Input kpx / s: the detector's input pixels per second of video (thousands), its cost whatever the load (a 256x256 look is 66 kpx). CPU: share of one core at real time (process: all threads of this process; detector: the process less its main thread); ffmpeg's decoding not included.`,
    '',
    table(['clip', 'truth in / out', 'counted in / out', 'precision', 'recall', 'detector calls / frames', 'input kpx / s', 'ms per call', 'detector CPU', 'process CPU'], rows),
  ].join('\n');
}
