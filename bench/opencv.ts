/**
 * The OpenCV question, measured (`npm run bench -- opencv`): the recognition pipeline's image work done by its own
 * kernels (agent/vision/image.ts, simd.ts) against the same work done by OpenCV through `@u4/opencv4nodejs`, on
 * the faces the pipeline really finds in the stage clip (or the registry video), CPU per call and per processed
 * frame. docs/decisions.md ("OpenCV") reads its conclusion from this section.
 *
 * OpenCV is not a dependency (that is the decision being checked), so this benchmark runs only where the addon has
 * been built, and is skipped with the reason otherwise. To run it, build the addon in a scratch folder:
 *
 *   apt-get install libopencv-dev
 *   mkdir /tmp/cv && cd /tmp/cv && npm init -y && OPENCV4NODEJS_DISABLE_AUTOBUILD=1 npm install @u4/opencv4nodejs
 *   FOOTFALL_BENCH_OPENCV=/tmp/cv npm run bench -- opencv
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pictureArgs } from '../agent/capture/ffmpeg.js';
import { PpmReader } from '../agent/capture/ppm.js';
import { ensureTestModels, testModelsDir } from '../agent/models/test-cache.js';
import { alignmentTransform } from '../agent/vision/align.js';
import { FaceAnalyzer } from '../agent/vision/analyzer.js';
import { processCpuMs } from '../agent/vision/cpu.js';
import { ensureRegistryVideo, sharedClip } from '../agent/vision/fixtures.js';
import { cropRgb, cropToTensor, rgbLaplacianVariance, shiftInside, warpAffine } from '../agent/vision/image.js';
import type { Affine, Rect, TensorFormat } from '../agent/vision/image.js';
import { ModelSessions } from '../agent/vision/models.js';
import { SHARPNESS_ROI, sharpnessWindow } from '../agent/vision/quality.js';
import { SimdTensors } from '../agent/vision/simd.js';
import type { RgbImage } from '../agent/vision/types.js';
import { loadAverage, ms, progress, table } from './util.js';
import { ffmpegBin } from '../agent/capture/ffmpeg-bin.js';

const execFileP = promisify(execFile);
const ALIGNED = 112;

/** The part of @u4/opencv4nodejs used here (the package is not a dependency, so it has no types in this build). */
interface CvMat {
  getData(): Buffer;
  getRegion(r: unknown): CvMat;
  resize(rows: number, cols: number): CvMat;
  cvtColor(code: number): CvMat;
  convertTo(type: number, alpha?: number, beta?: number): CvMat;
  splitChannels(): CvMat[];
  warpAffine(m: CvMat, size: unknown, flags: number, border: number): CvMat;
  laplacian(depth: number): CvMat;
  meanStdDev(): { mean: CvMat; stddev: CvMat };
}
interface Cv {
  version: { major: number; minor: number; revision: number };
  Mat: new (...args: unknown[]) => CvMat;
  Rect: new (x: number, y: number, w: number, h: number) => unknown;
  Size: new (w: number, h: number) => unknown;
  setNumThreads(n: number): void;
  CV_8UC3: number;
  CV_32F: number;
  CV_32FC3: number;
  CV_64F: number;
  INTER_LINEAR: number;
  WARP_INVERSE_MAP: number;
  BORDER_REPLICATE: number;
  COLOR_RGB2GRAY: number;
}

/** The addon, from FOOTFALL_BENCH_OPENCV (a folder it was installed in) or this checkout; or why it is not there. */
function loadOpenCv(): Cv | string {
  const dir = process.env.FOOTFALL_BENCH_OPENCV;
  const from = dir ? join(dir, 'package.json') : new URL('../../package.json', import.meta.url).pathname;
  if (dir && !existsSync(from)) return `FOOTFALL_BENCH_OPENCV=${dir} has no package.json`;
  // The package reads this when it is loaded: without it, it tries to build OpenCV itself.
  process.env.OPENCV4NODEJS_DISABLE_AUTOBUILD = '1';
  try {
    return createRequire(from)('@u4/opencv4nodejs') as Cv;
  } catch (err) {
    return `@u4/opencv4nodejs is not installed${dir ? ` in ${dir}` : ''} (${(err as Error).message.split('\n')[0]}); see bench/opencv.ts for how to build it`;
  }
}

/** A face as the pipeline found it: the landmark model's crop rect and the aligned crop's map into the frame. */
interface FaceWork {
  frame: number;
  rect: Rect;
  toFrame: Affine;
  crop: Rect;
}

/** CPU (ms) per call of `f` over `n` calls after a warm-up; best of three rounds (the machine is shared). */
function cpuPerCall(n: number, f: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 50); i++) f(i);
  let best = Infinity;
  for (let r = 0; r < 3; r++) {
    const c0 = processCpuMs();
    for (let i = 0; i < n; i++) f(i);
    best = Math.min(best, (processCpuMs() - c0) / n);
  }
  return best;
}

async function framesOf(source: string): Promise<RgbImage[]> {
  const { stdout } = await execFileP(ffmpegBin(), ['-nostdin', '-v', 'error', '-i', source, ...pictureArgs({ fps: 5, maxWidth: 640 })], {
    encoding: 'buffer',
    maxBuffer: 1 << 30,
  });
  const frames: RgbImage[] = [];
  new PpmReader((img) => frames.push({ width: img.width, height: img.height, data: new Uint8Array(img.data) })).push(stdout);
  return frames;
}

export async function run(): Promise<string | undefined> {
  const cv = loadOpenCv();
  if (typeof cv === 'string') {
    progress(`skipped: ${cv}`);
    return undefined;
  }
  cv.setNumThreads(1);
  const clip = sharedClip();
  const source = clip ?? (await ensureRegistryVideo());
  const frames = await framesOf(source);
  await ensureTestModels();
  const models = await ModelSessions.load({ modelsDir: testModelsDir(), intraOpThreads: 1 });
  const analyzer = new FaceAnalyzer(models);
  const template = models.spec('feature').preprocessing.alignment!.points;
  const fmt = (id: 'detect' | 'landmark'): TensorFormat => {
    const p = models.spec(id).preprocessing;
    return { colour: p.colour, mean: p.mean, std: p.std };
  };
  const detectFmt = fmt('detect');
  const greyFmt = fmt('landmark');
  const lp = models.spec('landmark').preprocessing;

  progress(`finding the faces in ${frames.length} frames`);
  const faces: FaceWork[] = [];
  for (const [i, img] of frames.entries()) {
    for (const f of (await analyzer.scan(img)).faces) {
      faces.push({ frame: i, rect: shiftInside({ x: f.box.x1, y: f.box.y1, w: f.box.x2 - f.box.x1, h: f.box.y2 - f.box.y1 }, img.width, img.height), toFrame: alignmentTransform(f.landmarks, template, ALIGNED).toFrame, crop: f.crop });
    }
  }
  await models.release();
  const F = frames.length;
  const nf = faces.length;

  const mat = (img: RgbImage): CvMat => new cv.Mat(Buffer.from(img.data.buffer, img.data.byteOffset, img.data.length), img.height, img.width, cv.CV_8UC3);
  const mats = frames.map(mat);
  const size = new cv.Size(ALIGNED, ALIGNED);
  const cvAffine = (m: Affine): CvMat => new cv.Mat([[m[0], m[1], m[2]], [m[3], m[4], m[5]]], cv.CV_64F);
  const cvWarp = (src: CvMat, m: Affine): CvMat => src.warpAffine(cvAffine(m), size, cv.INTER_LINEAR | cv.WARP_INVERSE_MAP, cv.BORDER_REPLICATE);
  const roi = new cv.Rect(SHARPNESS_ROI.x - 1, SHARPNESS_ROI.y - 1, SHARPNESS_ROI.w + 2, SHARPNESS_ROI.h + 2);
  const cvSharpness = (aligned: CvMat): number => {
    const s = aligned.getRegion(roi).cvtColor(cv.COLOR_RGB2GRAY).convertTo(cv.CV_32F).laplacian(cv.CV_32F).meanStdDev().stddev.getData();
    const sd = new Float64Array(s.buffer, s.byteOffset, 1)[0]!;
    return sd * sd;
  };
  const simd = SimdTensors.create();
  const tensor = new Float32Array(3 * 320 * 240);
  const plane = 320 * 240;
  const window = sharpnessWindow(ALIGNED);
  const into = new Uint8Array(ALIGNED * ALIGNED * 3);

  // Agreement: OpenCV must compute the same thing (its 8-bit warp rounds in fixed point, so not bit-identical).
  let warpDiff = 0;
  let warpN = 0;
  for (const f of faces) {
    const own = warpAffine(frames[f.frame]!, f.toFrame, ALIGNED, ALIGNED).data;
    const theirs = cvWarp(mats[f.frame]!, f.toFrame).getData();
    for (let i = 0; i < own.length; i++) warpDiff += Math.abs(own[i]! - theirs[i]!);
    warpN += own.length;
  }

  progress(`timing ${nf} faces, own kernels and OpenCV`);
  const face = (i: number): FaceWork => faces[i % nf]!;
  const rows: [string, number, number, string][] = [];
  const frameIn = cpuPerCall(F * 4, (i) => mat(frames[i % F]!));
  const regionIn = cpuPerCall(nf * 4, (i) => {
    const f = face(i);
    const r = cropRgb(frames[f.frame]!, f.crop);
    mat(r);
  });
  rows.push(['frame into OpenCV (a copy into a cv.Mat)', Number.NaN, frameIn, 'per frame, OpenCV only']);
  rows.push(['a face\'s region into OpenCV (cut out, copied into a cv.Mat)', Number.NaN, regionIn, 'per face, OpenCV only (instead of the whole frame)']);
  const ownTensor = simd
    ? cpuPerCall(F * 4, (i) => simd.detectorTensor(frames[i % F]!, 320, 240, detectFmt))
    : Number.NaN;
  const cvTensor = cpuPerCall(F * 4, (i) => {
    const planes = mats[i % F]!.resize(240, 320).convertTo(cv.CV_32FC3, 1 / 128, -127 / 128).splitChannels();
    planes.forEach((p, c) => {
      const d = p.getData();
      tensor.set(new Float32Array(d.buffer, d.byteOffset, plane), c * plane);
    });
  });
  rows.push(['640x360 frame -> 320x240 detector tensor', ownTensor, cvTensor, 'per frame (own: WebAssembly SIMD; OpenCV: resize, convertTo, splitChannels)']);
  const ownCrop = cpuPerCall(nf * 4, (i) => cropToTensor(frames[face(i).frame]!, face(i).rect, lp.width, lp.height, greyFmt));
  const cvCrop = cpuPerCall(nf * 4, (i) => {
    const f = face(i);
    mats[f.frame]!.getRegion(new cv.Rect(Math.round(f.rect.x), Math.round(f.rect.y), Math.round(f.rect.w), Math.round(f.rect.h)))
      .resize(lp.height, lp.width)
      .cvtColor(cv.COLOR_RGB2GRAY)
      .convertTo(cv.CV_32F, 1 / greyFmt.std[0]!, -greyFmt.mean[0]! / greyFmt.std[0]!)
      .getData();
  });
  rows.push(['landmark input: face box -> 64x64 grey tensor', ownCrop, cvCrop, 'per face']);
  const ownWindow = cpuPerCall(nf * 4, (i) => {
    const f = face(i);
    const w = warpAffine(frames[f.frame]!, f.toFrame, ALIGNED, ALIGNED, { window, into });
    rgbLaplacianVariance(w, SHARPNESS_ROI);
  });
  const cvWindow = cpuPerCall(nf * 4, (i) => {
    const f = face(i);
    cvSharpness(cvWarp(mats[f.frame]!, f.toFrame));
  });
  rows.push(['quality\'s sharpness: aligned pixels + variance of the Laplacian', ownWindow, cvWindow, 'per face (own: the 66x70 window it reads; OpenCV: the whole 112x112 warp)']);
  const ownWarp = cpuPerCall(nf * 4, (i) => warpAffine(frames[face(i).frame]!, face(i).toFrame, ALIGNED, ALIGNED));
  const cvWarpCpu = cpuPerCall(nf * 4, (i) => cvWarp(mats[face(i).frame]!, face(i).toFrame).getData());
  rows.push(['112x112 aligned crop (embedding input)', ownWarp, cvWarpCpu, 'per embedded face (own: supersampled when the face is over 224 px; OpenCV: plain bilinear)']);

  const perFace = nf / F;
  const own = ownTensor + perFace * (ownCrop + ownWindow);
  const cvWhole = frameIn + cvTensor + perFace * (cvCrop + cvWindow);
  const cvBest = Math.min(ownTensor, cvTensor) + perFace * (regionIn + cvCrop + cvWindow);
  const lines = [
    '## OpenCV against own image kernels',
    '',
    `Source: ${clip ? '`../shared/faces/short-hamilton-clip.mp4`' : 'the registry photos\' video (no `../shared/faces` here)'}, ${F} frames of 640x360 at 5 fps and the ${nf} faces the pipeline finds in them (${perFace.toFixed(2)} per frame), each operation run on those very faces. OpenCV ${cv.version.major}.${cv.version.minor}.${cv.version.revision} (Debian \`libopencv-dev\`) through \`@u4/opencv4nodejs\`, one OpenCV thread; own code as the agent runs it. CPU per call, best of three rounds. Load average at the end: ${loadAverage()}. OpenCV is not a dependency; this runs where it has been built (see \`bench/opencv.ts\`) and is skipped elsewhere.`,
    '',
    table(['operation', 'own code, CPU / call (ms)', 'OpenCV, CPU / call (ms)', 'how often'], rows.map(([op, a, b, how]) => [op, ms(a), ms(b), how])),
    '',
    `Agreement: OpenCV's 112x112 warps of these faces differ from ours by ${(warpDiff / warpN).toFixed(2)} grey levels per channel on average (its 8-bit warp rounds in fixed point, and it does not supersample large faces).`,
    '',
    table(
      ['image work per processed frame (detector tensor, and per face: landmark input and sharpness)', 'CPU'],
      [
        ['own code (as the agent runs)', `${ms(own)} ms`],
        ['OpenCV, the frame copied into a cv.Mat', `${ms(cvWhole)} ms`],
        ['OpenCV for the faces only (own detector tensor, each face\'s region copied into a cv.Mat)', `${ms(cvBest)} ms`],
      ],
    ),
  ];
  return lines.join('\n');
}
