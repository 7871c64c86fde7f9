/**
 * Recognition pipeline benchmark (`npm run bench -- agent`): frames/s and
 * time per stage on the stage clip (or, without ../shared/faces, a video made
 * from the registry photos), CPU per processed frame against bare model
 * inference, embeddings per track, event-loop blocking, and how many 5-fps
 * cameras one core sustains at one visitor per 10 s per camera. Measured
 * numbers only: every figure below comes from this run.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { promisify } from 'node:util';
import sharp from 'sharp';
import type { ModelId } from '../agent/models/catalogue.js';
import { ensureTestModels, testCacheRoot, testModelsDir } from '../agent/models/test-cache.js';
import { processCpuMs, threadCpuMs } from '../agent/vision/cpu.js';
import { createVisionEngine } from '../agent/vision/engine.js';
import type { EngineStats, VisionEngine } from '../agent/vision/engine.js';
import { ensureRegistryVideo, sharedClip } from '../agent/vision/fixtures.js';
import { laplacianVariance, resizeToTensor, toGrey, warpAffine } from '../agent/vision/image.js';
import { ModelSessions } from '../agent/vision/models.js';
import { FramePipeline } from '../agent/vision/pipeline.js';
import type { PipelineStats } from '../agent/vision/pipeline.js';
import type { RgbImage, Visit } from '../agent/vision/types.js';
import { decodeVideo } from '../agent/vision/video.js';
import { loadAverage, ms, progress, table } from './util.js';

const execFileP = promisify(execFile);
const FPS = 5;

/** This thread's CPU (sampled at scheduler ticks: used over whole runs only). */
function mainCpuMs(): number {
  return threadCpuMs() ?? processCpuMs();
}

async function decodeAll(path: string): Promise<{ frames: RgbImage[]; decodeCpuMs: number }> {
  const usage: { cpuMs?: number } = {};
  const frames: RgbImage[] = [];
  for await (const f of decodeVideo(path, { fps: FPS }, usage)) frames.push(f);
  return { frames, decodeCpuMs: usage.cpuMs ?? Number.NaN };
}

/** CPU ms per run of each model alone, on the calling thread (intra-op threads 1), random inputs. */
async function bareModelCpu(modelsDir: string): Promise<Record<ModelId, number>> {
  const models = await ModelSessions.load({ modelsDir, intraOpThreads: 1 });
  const runs: Record<ModelId, number> = { detect: 200, landmark: 500, feature: 60, age: 300, gender: 300, expression: 40 };
  const out = {} as Record<ModelId, number>;
  for (const id of Object.keys(runs) as ModelId[]) {
    const n = models.spec(id).input.shape.reduce((a, b) => a * b, 1);
    const input = new Float32Array(n);
    for (let i = 0; i < n; i++) input[i] = Math.random() * 2 - 1;
    for (let i = 0; i < 5; i++) await models.run(id, input);
    const c0 = processCpuMs();
    for (let i = 0; i < runs[id]; i++) await models.run(id, input);
    out[id] = (processCpuMs() - c0) / runs[id];
  }
  await models.release();
  return out;
}

interface RunResult {
  frames: number;
  wallMs: number;
  processCpuMs: number;
  mainCpuMs: number;
  engine: EngineStats;
  stats: PipelineStats;
  timings: FramePipeline['timings'];
  visits: Visit[];
  loopDelay: { p99: number; max: number };
}

/** Feed the frames `loops` times through a FramePipeline, each frame once the previous one is analysed. */
async function runPipeline(engine: VisionEngine, frames: RgbImage[], loops: number): Promise<RunResult> {
  const before = await engine.stats();
  const pipeline = new FramePipeline({ engine });
  const visits: Visit[] = [];
  pipeline.on('visit', (v) => visits.push(v));
  const h = monitorEventLoopDelay({ resolution: 1 });
  const t0 = performance.now();
  const p0 = processCpuMs();
  const m0 = mainCpuMs();
  h.enable();
  let n = 0;
  const start = Date.UTC(2026, 0, 1, 9);
  for (let loop = 0; loop < loops; loop++) {
    for (const f of frames) {
      pipeline.consume({ cameraId: 'cam', width: f.width, height: f.height, data: Buffer.from(f.data.buffer, f.data.byteOffset, f.data.length), at: new Date(start + n++ * (1000 / FPS)) });
      await pipeline.drain();
    }
  }
  await pipeline.flush();
  h.disable();
  const after = await engine.stats();
  const result: RunResult = {
    frames: n,
    wallMs: performance.now() - t0,
    processCpuMs: processCpuMs() - p0,
    mainCpuMs: mainCpuMs() - m0,
    engine: diffStats(after, before),
    stats: pipeline.stats(),
    timings: { ...pipeline.timings },
    visits,
    loopDelay: { p99: h.percentile(99) / 1e6, max: h.max / 1e6 },
  };
  await pipeline.close();
  return result;
}

function diffStats(a: EngineStats, b: EngineStats): EngineStats {
  const models: EngineStats['models'] = {};
  for (const [k, v] of Object.entries(a.models) as [ModelId, { runs: number; ms: number }][]) {
    const o = b.models[k] ?? { runs: 0, ms: 0 };
    models[k] = { runs: v.runs - o.runs, ms: v.ms - o.ms };
  }
  const stages = { ...a.stages };
  for (const k of Object.keys(stages) as (keyof typeof stages)[]) stages[k] -= b.stages[k];
  return { models, stages, ...(a.cpuMs !== undefined && b.cpuMs !== undefined ? { cpuMs: a.cpuMs - b.cpuMs } : {}) };
}

function bareMsOf(r: RunResult, bare: Record<ModelId, number>): number {
  let total = 0;
  for (const [k, v] of Object.entries(r.engine.models) as [ModelId, { runs: number }][]) total += v.runs * (bare[k] ?? 0);
  return total;
}

/** A 640x360 H.264 test pattern with no face, for the cost of an empty frame. */
async function emptyVideo(): Promise<string> {
  const dir = join(testCacheRoot(), 'video');
  const out = join(dir, 'no-faces-640x360-20s.mp4');
  if (existsSync(out)) return out;
  await mkdir(dir, { recursive: true });
  await execFileP('ffmpeg', ['-nostdin', '-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=5:duration=20', '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', out]);
  return out;
}

/** Own code against sharp for the small image operations (the OpenCV question, docs/decisions.md). */
async function pixelOps(frame: RgbImage): Promise<string[][]> {
  sharp.concurrency(1);
  const raw = Buffer.from(frame.data.buffer, frame.data.byteOffset, frame.data.length);
  const rawOpts = { raw: { width: frame.width, height: frame.height, channels: 3 as const } };
  const fmt = { colour: 'RGB' as const, mean: [127, 127, 127], std: [128, 128, 128] };
  const out = new Float32Array(3 * 320 * 240);
  const m = [0.9, -0.1, frame.width / 2 - 40, 0.1, 0.9, frame.height / 2 - 60] as const;
  const aligned = warpAffine(frame, m, 112, 112);
  const alignedRaw = Buffer.from(aligned.data);
  const measure = async (n: number, f: () => unknown): Promise<number> => {
    for (let i = 0; i < 10; i++) await f();
    const c0 = processCpuMs();
    for (let i = 0; i < n; i++) await f();
    return (processCpuMs() - c0) / n;
  };
  const rows: string[][] = [];
  rows.push([
    `frame ${frame.width}x${frame.height} -> 320x240 detector tensor`,
    ms(await measure(300, () => resizeToTensor(frame, 320, 240, fmt, out))),
    ms(await measure(100, async () => sharp(raw, rawOpts).resize(320, 240, { fit: 'fill' }).raw().toBuffer())),
    'sharp: resize to raw RGB only (the tensor conversion would come on top)',
  ]);
  rows.push([
    '112x112 aligned crop (affine warp, bilinear)',
    ms(await measure(1000, () => warpAffine(frame, m, 112, 112))),
    ms(await measure(100, async () =>
      sharp(raw, rawOpts).extract({ left: Math.round(m[2]), top: Math.round(m[5]), width: 128, height: 128 }).affine([[1.1, 0.12], [-0.12, 1.1]], { interpolator: 'bilinear' }).extract({ left: 0, top: 0, width: 112, height: 112 }).raw().toBuffer(),
    )),
    'sharp: extract + affine + extract',
  ]);
  rows.push([
    'grey + variance of the Laplacian, 112x112',
    ms(await measure(2000, () => laplacianVariance(toGrey(aligned), 112, 112, { x: 24, y: 36, w: 64, h: 68 }))),
    ms(await measure(100, async () => sharp(alignedRaw, { raw: { width: 112, height: 112, channels: 3 } }).greyscale().convolve({ width: 3, height: 3, kernel: [0, 1, 0, 1, -4, 1, 0, 1, 0], offset: 128 }).stats())),
    'sharp: greyscale + convolve + stats',
  ]);
  return rows;
}

export async function run(): Promise<string> {
  await ensureTestModels((m) => progress(m));
  const modelsDir = testModelsDir();
  const clip = sharedClip();
  const source = clip ?? (await ensureRegistryVideo());
  const sourceName = clip
    ? '`../shared/faces/short-hamilton-clip.mp4` (9 s, 640x360 H.264; one person on stage, one at a piano, audience shots)'
    : '`registry-photos-2x-v2.mp4` (made from the registry photos: each held 2 s then 2 s blank, twice; ../shared/faces absent)';
  progress(`decoding ${source} at ${FPS} fps`);
  const decoded = await decodeAll(source);
  const decodePerFrame = decoded.decodeCpuMs / decoded.frames.length;
  progress('bare model inference');
  const bare = await bareModelCpu(modelsDir);

  const loops = clip ? 4 : 2;
  const empty = await decodeAll(await emptyVideo());
  progress(`pipeline, 1 worker thread, ${loops} loops, as in production`);
  const prodEngine = await createVisionEngine({ modelsDir, workers: 1, intraOpThreads: 1 });
  await runPipeline(prodEngine, decoded.frames.slice(0, 10), 1); // warm-up (JIT, ORT arenas)
  const p = await runPipeline(prodEngine, decoded.frames, loops);
  const pe = await runPipeline(prodEngine, empty.frames, 1);
  await prodEngine.close();
  progress('inline (no worker): CPU per stage, and the event loop without a worker');
  const inline = await createVisionEngine({ modelsDir, workers: 0, intraOpThreads: 1, measureCpu: true });
  await runPipeline(inline, decoded.frames.slice(0, 10), 1);
  const r = await runPipeline(inline, decoded.frames, loops);
  await inline.close();

  progress('pixel operations: own code and sharp');
  const ops = await pixelOps(decoded.frames[Math.floor(decoded.frames.length / 2)]!);

  // ---- derived numbers. p: production run (worker); r: the same frames inline with CPU time per stage.
  const F = p.frames;
  const st = r.engine.stages;
  const faces = p.stats.faces;
  const visits = p.stats.visits;
  const visitsId = p.stats.visits_with_identity;
  const emb = p.stats.embeddings;
  const runs = (id: ModelId): number => p.engine.models[id]?.runs ?? 0;
  const bareTotal = bareMsOf(p, bare);
  const ratio = p.processCpuMs / bareTotal;
  const ratioWithDecode = (p.processCpuMs + F * decodePerFrame) / bareTotal;
  const emptyCpu = pe.processCpuMs / pe.frames;
  const emptyDecode = empty.decodeCpuMs / empty.frames.length;
  const emptyBare = bareMsOf(pe, bare) / pe.frames;
  const stageSum = Object.values(st).reduce((x, y) => x + y, 0);
  const inlineOther = r.processCpuMs - stageSum; // tracking, copies, JPEG, GC: what is not an analysis stage
  const modelCpuInPipeline = Object.values(r.engine.models).reduce((x, v) => x + v.ms, 0);
  // Split the production run's CPU into per-face and per-visit parts (stage CPU from the inline run) and the rest per frame.
  const faceCpu = (st.landmarks + st.align + st.quality) / Math.max(1, faces);
  const visitCpu = (st.embed + st.attributes) / Math.max(1, visits);
  const perFrame = (p.processCpuMs - faces * faceCpu - visits * visitCpu) / F;
  const tracks = visits + p.stats.tracks_discarded;
  const facesPerTrack = faces / Math.max(1, tracks);
  const per10s = 10 * FPS * (perFrame + decodePerFrame) + facesPerTrack * faceCpu + visitCpu;
  const camerasPerCore = 10_000 / per10s;
  const embeddedHist = new Map<number, number>();
  for (const v of p.visits) embeddedHist.set(v.track.faces_embedded, (embeddedHist.get(v.track.faces_embedded) ?? 0) + 1);

  const lines: string[] = [];
  lines.push('## Recognition pipeline on the shop PC');
  lines.push('');
  lines.push(
    `Source: ${sourceName}, decoded with ffmpeg at ${FPS} fps (${decoded.frames.length} frames of ${decoded.frames[0]?.width}x${decoded.frames[0]?.height}), ` +
      `fed ${loops} times to a \`FramePipeline\` with one vision worker thread (onnxruntime intra-op threads 1), each frame once the previous one ` +
      `is analysed (no frame dropped). CPU is the whole process (main thread, worker, sharp) from \`process.cpuUsage\`; ffmpeg's own CPU is ` +
      `the decode row. Bare model inference: each model alone in a loop on this thread, random inputs. Load average at the end: ${loadAverage()} ` +
      '(the machine is shared; CPU times are what this code used, wall times include waiting for a core).',
  );
  lines.push('');
  lines.push(
    table(
      ['', 'value'],
      [
        ['frames processed', `${F} (${faces} faces, ${visits} visits of which ${visitsId} with an embedding, ${p.stats.tracks_discarded} one-frame tracks dropped)`],
        ['throughput, one worker', `${(F / (p.wallMs / 1000)).toFixed(1)} frames/s (${ms(p.wallMs / F)} ms wall per frame)`],
        ['CPU per processed frame (pipeline, all threads)', `${ms(p.processCpuMs / F)} ms (main thread ${ms(p.mainCpuMs / F)} ms, vision worker ${p.engine.cpuMs !== undefined ? ms(p.engine.cpuMs / F) : '-'} ms, the rest sharp and V8 helper threads)`],
        ['bare model inference per processed frame', `${ms(bareTotal / F)} ms (the same calls timed inside the pipeline: ${ms(modelCpuInPipeline / F)} ms)`],
        ['**CPU per processed frame / bare model inference**', `**${ratio.toFixed(2)}x** (goal <= 1.15x); with ffmpeg decoding: ${ratioWithDecode.toFixed(2)}x`],
        ['empty scene (no face), per frame', `CPU ${ms(emptyCpu)} ms + decode ${ms(emptyDecode)} ms; bare detector ${ms(emptyBare)} ms, so ${(emptyCpu / emptyBare).toFixed(2)}x`],
        ['embeddings per track (visits with identity)', `${(emb / Math.max(1, visitsId)).toFixed(2)} (${[...embeddedHist.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${v} visits with ${k}`).join(', ')})`],
        ['event loop while processing, worker thread', `p99 ${ms(p.loopDelay.p99)} ms, max ${ms(p.loopDelay.max)} ms`],
        ['event loop while processing, inline (no worker)', `p99 ${ms(r.loopDelay.p99)} ms, max ${ms(r.loopDelay.max)} ms`],
      ],
    ),
  );
  lines.push('');
  lines.push('### Time per stage');
  lines.push('');
  lines.push(
    table(
      ['stage', 'CPU per processed frame', 'per unit', 'bare model', 'where'],
      [
        ['decode (ffmpeg, 640x360 H.264 -> RGB at 5 fps)', `${ms(decodePerFrame)} ms CPU`, '', '', 'ffmpeg process'],
        ['detect: frame -> 320x240 tensor', `${ms(st.detectPrep / F)} ms`, '', '', 'worker'],
        ['detect: model + NMS', `${ms(st.detect / F)} ms`, '', `${ms(bare.detect)} ms / frame`, 'worker'],
        ['landmarks (crop, model, 5 points)', `${ms(st.landmarks / F)} ms`, `${ms(st.landmarks / Math.max(1, faces))} ms / face`, `${ms(bare.landmark)} ms / face`, 'worker'],
        ['align (112x112 warp)', `${ms(st.align / F)} ms`, `${ms(st.align / Math.max(1, faces))} ms / face`, '', 'worker'],
        ['quality (Laplacian, pose, context crop)', `${ms(st.quality / F)} ms`, `${ms(st.quality / Math.max(1, faces))} ms / face`, '', 'worker'],
        ['embed (best faces only)', `${ms(st.embed / F)} ms`, `${ms(st.embed / Math.max(1, emb))} ms / embedding`, `${ms(bare.feature)} ms / embedding`, 'worker'],
        ['attributes (once per visit)', `${ms(st.attributes / F)} ms`, `${ms(st.attributes / Math.max(1, visits))} ms / visit`, `${ms(bare.expression + (runs('age') / Math.max(1, visits)) * (bare.age + bare.gender))} ms / visit`, 'worker'],
        ['frame intake (copy into a pooled buffer), wall', `${ms(r.timings.intake / F)} ms`, '', '', 'main thread'],
        ['tracking and bookkeeping, wall', `${ms(r.timings.tracking / F)} ms`, '', '', 'main thread'],
        ['face JPEG, wall', `${ms(r.timings.faceImages / F)} ms`, `${ms(r.timings.faceImages / Math.max(1, visits))} ms / visit`, '', 'main thread + libuv'],
        ['everything else inline (GC, copies, tracking, JPEG)', `${ms(inlineOther / F)} ms`, '', '', ''],
        ['**inline total**', `**${ms(r.processCpuMs / F)} ms**`, '', `${ms(bareTotal / F)} ms`, ''],
        ['**with the worker (production) total**', `**${ms(p.processCpuMs / F)} ms**`, '', `${ms(bareTotal / F)} ms`, 'messages to and from the worker add the difference'],
      ],
    ),
  );
  lines.push('');
  lines.push(
    'Stage rows: the same frames through the same pipeline with the analysis inline on one thread and the process CPU time ' +
      '(getrusage) read around every stage, so they add up to the inline total; rows marked wall are wall time. The model ' +
      `calls inside the pipeline took ${ms(modelCpuInPipeline / F)} ms per frame against ${ms(bareTotal / F)} ms for the same calls run bare.`,
  );
  lines.push('');
  lines.push('### Cameras per core');
  lines.push('');
  lines.push(
    `One 5-fps 640x360 camera with one visitor every 10 s costs, per 10 s: 50 frames x (${ms(perFrame)} ms per frame + ${ms(decodePerFrame)} ms decode) ` +
      `+ ${facesPerTrack.toFixed(1)} face observations per pass (the average on the source) x ${ms(faceCpu)} ms + one visit ` +
      `(${(emb / Math.max(1, visitsId)).toFixed(1)} embeddings and the attributes) ${ms(visitCpu)} ms = **${ms(per10s)} ms of CPU**, so one core sustains ` +
      `**${camerasPerCore.toFixed(1)} cameras** (goal >= 10). Per face and per visit are the stage CPU times above; per frame is the rest of the ` +
      `production run's CPU (detection, messages, copies, tracking, JPEG, GC) divided by its frames; an empty-scene frame measured ${ms(emptyCpu)} ms ` +
      `(+ ${ms(emptyDecode)} ms decode).`,
  );
  lines.push('');
  lines.push('### Small image operations: own TypedArray code or sharp (the OpenCV question)');
  lines.push('');
  lines.push(table(['operation', 'own code, CPU / call', 'sharp, CPU / call', 'sharp pipeline'], ops));
  return lines.join('\n');
}
