/**
 * Where a door camera's face work goes (`npm run bench -- faces-door`): the agent-real door videos (720p, one woman
 * in the doorway 4 s of every 6; `large`: her face 350-400 px wide) decoded with capture's own arguments (5 fps,
 * max_width 1280), fed to the agent's FramePipeline on a one-worker engine one frame at a time (the next once the
 * previous is analysed: no frame dropped, so the calls do not depend on the machine's speed), frames 200 ms apart.
 *
 * Counts every model call (per visit and per pass) and the worker's time in each stage and model, and this process's
 * CPU per camera-second; and prints what recognition decided (visits, links, embeddings' cosines) so a change can be
 * checked to decide the same.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { pictureArgs } from '../agent/capture/ffmpeg.js';
import { ffmpegBin } from '../agent/capture/ffmpeg-bin.js';
import { PpmReader } from '../agent/capture/ppm.js';
import type { RawImage } from '../agent/capture/ppm.js';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { processCpuMs } from '../agent/vision/cpu.js';
import { dot } from '../agent/vision/embeddings.js';
import { createVisionEngine } from '../agent/vision/engine.js';
import { FramePipeline } from '../agent/vision/pipeline.js';
import type { Visit } from '../agent/vision/types.js';
import { doorVideos } from './agent-real.js';
import { loadAverage, ms, progress, table } from './util.js';

const execFileP = promisify(execFile);
const FPS = 5;
const PASSES = Number(process.env.BENCH_FACES_PASSES ?? 5);
const T0 = Date.UTC(2026, 0, 1, 9);

async function decode(file: string): Promise<RawImage[]> {
  const args = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-i', file, ...pictureArgs({ fps: FPS, maxWidth: 1280 })];
  const { stdout } = await execFileP(ffmpegBin(), args, { encoding: 'buffer', maxBuffer: 2 ** 30 });
  const frames: RawImage[] = [];
  new PpmReader((img) => frames.push(img)).push(stdout);
  return frames;
}

interface SceneResult {
  frames: number;
  seconds: number;
  cpuMs: number;
  visits: Visit[];
  stats: ReturnType<FramePipeline['stats']>;
  engine: Awaited<ReturnType<Awaited<ReturnType<typeof createVisionEngine>>['stats']>>;
  embeddingCalls: number;
  timings: FramePipeline['timings'];
}

async function scene(file: string): Promise<SceneResult> {
  const frames = await decode(file);
  const engine = await createVisionEngine({ modelsDir: testModelsDir(), workers: 1, intraOpThreads: 1 });
  const pipeline = new FramePipeline({ engine, config: { faceImages: true } });
  const visits: Visit[] = [];
  pipeline.on('visit', (v) => visits.push(v));
  pipeline.on('error', (e) => progress(`pipeline error: ${e.message}`));
  // One pass to warm up (V8, onnxruntime's first runs), on another camera.
  for (let i = 0; i < frames.length; i++) {
    pipeline.consume({ ...frames[i]!, cameraId: 'warm', at: new Date(T0 - 3_600_000 + i * 200) });
    await pipeline.drain();
  }
  pipeline.removeCamera('warm');
  await pipeline.settle();
  visits.length = 0;
  const e0 = await engine.stats();
  const calls0 = pipeline.embeddingCalls;
  const t0 = { ...pipeline.timings };
  const c0 = processCpuMs();
  let n = 0;
  for (let p = 0; p < PASSES; p++) {
    for (const f of frames) {
      pipeline.consume({ ...f, cameraId: 'door', at: new Date(T0 + n * (1000 / FPS)) });
      n++;
      await pipeline.drain();
    }
  }
  await pipeline.flush();
  const cpuMs = processCpuMs() - c0;
  const e1 = await engine.stats();
  const stats = pipeline.stats();
  const calls = pipeline.embeddingCalls - calls0;
  const timings = { intake: pipeline.timings.intake - t0.intake, tracking: pipeline.timings.tracking - t0.tracking, faceImages: pipeline.timings.faceImages - t0.faceImages };
  await pipeline.close();
  await engine.close();
  for (const [k, v] of Object.entries(e1.models)) {
    const before = e0.models[k as keyof typeof e0.models];
    if (before) {
      v.runs -= before.runs;
      v.ms -= before.ms;
    }
  }
  for (const k of Object.keys(e1.stages) as (keyof typeof e1.stages)[]) e1.stages[k] -= e0.stages[k];
  return { frames: n, seconds: n / FPS, cpuMs, visits, stats, engine: e1, embeddingCalls: calls, timings };
}

/** What recognition decided, to compare runs: visits, their passes, embeddings' cosines to the first visit. */
function decisions(visits: Visit[]): string[] {
  const first = visits.find((v) => v.embedding)?.embedding;
  return visits.map((v, i) => {
    const cos = v.embedding && first ? dot(v.embedding, first).toFixed(4) : '-';
    const digest = v.embedding ? createHash('sha256').update(Buffer.from(v.embedding.buffer, v.embedding.byteOffset, v.embedding.byteLength)).digest('hex').slice(0, 12) : '-';
    return `visit ${i + 1}: ${v.track.first_seen_at.slice(11, 19)}-${v.track.last_seen_at.slice(11, 19)} frames ${v.track.frames} embedded ${v.track.faces_embedded} tracks ${v.pass?.tracks ?? 1} cosine to first ${cos} embedding ${digest} quality ${v.quality.toFixed(3)} attributes ${JSON.stringify({ age: v.attributes?.age, gender: v.attributes?.gender, emotion: v.attributes?.emotion })}${v.pass?.closes ? ' (closing)' : ''}`;
  });
}

export async function run(): Promise<string | undefined> {
  await ensureTestModels();
  const videos = await doorVideos();
  const out: string[] = ['## Face work per door camera, offline (FramePipeline, one worker, no frame dropped)', ''];
  const loadBefore = loadAverage();
  for (const which of ['door', 'large'] as const) {
    progress(`${which}: decoding and running ${PASSES} passes`);
    const r = await scene(videos[which]);
    const m = r.engine.models;
    const perS = (x: number) => `${((100 * x) / (r.seconds * 1000)).toFixed(2)} %`;
    const rows: (string | number)[][] = [];
    for (const [k, v] of Object.entries(m)) rows.push([`model ${k}`, v.runs, ms(v.ms / Math.max(1, v.runs)), ms(v.ms), perS(v.ms)]);
    for (const [k, v] of Object.entries(r.engine.stages)) rows.push([`worker stage ${k}`, '', '', ms(v), perS(v)]);
    for (const [k, v] of Object.entries(r.timings)) rows.push([`main thread ${k}`, '', '', ms(v), perS(v)]);
    rows.push(['process CPU (all threads)', '', '', ms(r.cpuMs), perS(r.cpuMs)]);
    const s = r.stats;
    out.push(
      `### ${which}: ${r.frames} frames (${r.seconds} s of camera at ${FPS} fps), ${r.visits.length} visits, ${r.embeddingCalls} embedding calls (${s.embeddings} for visits, ${s.link_embeddings} short-term), links by position ${s.links_position}, by face ${s.links_face}, vetoed ${s.links_vetoed}`,
      '',
      table(['', 'calls', 'ms per call', 'ms total', '% of a core'], rows),
      '',
      '```',
      ...decisions(r.visits),
      '```',
      '',
    );
  }
  out.push(`Load average before / after: ${loadBefore} → ${loadAverage()} (2 cores shared with other work).`);
  return out.join('\n');
}
