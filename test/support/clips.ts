/**
 * Video clips for camera tests, made once with ffmpeg into node_modules/.cache/footfall/clips/ and shared by every
 * test file and run:
 * - `testClip()`: a clip with people's faces: the shared stage clip when ../shared/faces is there (and not hidden with
 *   FOOTFALL_SHARED_FACES=off), else `registryPersonClip()`, made from the registry photos. Either way a camera test
 *   that runs recognition gets faces, whatever is in the model cache.
 * - `generatedClip()`: a test pattern (640x360, H.264, 5 s; no faces), for connection tests.
 * - `registryPersonClip()`: faces from the registry photos only, for identity tests.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ensureTestPhotos } from '../../agent/fixtures/registry-photos.js';
import { sharedClip } from '../../agent/vision/fixtures.js';
import { ffmpegBin, probeVideoFile } from '../../agent/capture/ffmpeg-bin.js';

const run = promisify(execFile);

/** The repository root (test/support/ -> ../..). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const clipsCacheDir = path.join(root, 'node_modules', '.cache', 'footfall', 'clips');

let generated: Promise<string> | undefined;

/** A clip with faces: the shared stage clip (9 s, 640x360) if present, else the registry photo clip (640x360). */
export function testClip(): Promise<string> {
  const shared = sharedClip();
  return shared ? Promise.resolve(shared) : registryPersonClip();
}

/** The generated clip (made on first use; later calls and other processes reuse the file). */
export function generatedClip(): Promise<string> {
  generated ??= makeClip().catch((err: unknown) => {
    generated = undefined;
    throw err;
  });
  return generated;
}

async function makeClip(): Promise<string> {
  const file = path.join(clipsCacheDir, 'testsrc-640x360-5s.mp4');
  if (existsSync(file)) return file;
  await mkdir(clipsCacheDir, { recursive: true });
  // Written under a unique name and renamed into place: concurrent test processes never see half a file.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp.mp4`;
  try {
    await run(ffmpegBin(), [
      '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
      '-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25:duration=5',
      '-c:v', 'libx264', '-preset', 'veryfast', '-profile:v', 'baseline', '-pix_fmt', 'yuv420p', '-g', '25',
      '-movflags', '+faststart', tmp,
    ]);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
  return file;
}

/** Seconds of a file's first video stream (what the RTSP test server loops: audio is not served). */
export async function videoSeconds(file: string): Promise<number> {
  const { videoDuration } = await probeVideoFile(file);
  if (!(videoDuration > 0)) throw new Error(`${file}: no video duration`);
  return videoDuration;
}

/**
 * A clip for identity over RTSP that needs only the registry photos (agent/fixtures/registry-photos.ts): 640x360,
 * 25 fps (a camera's rate, so ffmpeg's stream probing takes a fraction of a second), H.264, three showings, each
 * `blankS` of black then a photo held `holdS` (the black is longer than the pipeline's 3 s link window, so
 * every showing is its own pass, also across the loop; it comes first so a camera's first moments show nothing):
 *
 *   0. `sample1.jpg` cropped to the woman on the right                 (W, one face)
 *   1. `sample6.jpg` whole                                            (four other women)
 *   2. `sample3.jpg` cropped to the woman in the middle                (W again, another photo: SAME_PERSON)
 *
 * So one loop shows W twice in two different photos and four other people once. Measured with agent/vision on
 * this clip: W's two photos 0.72; W against the four others at most 0.28; the four among themselves at most 0.35
 * (under the burst threshold 0.40). Cached in node_modules/.cache/footfall/clips/.
 */
export const REGISTRY_CLIP = {
  // Held 3 s (15 frames at the camera's 5 fps; was 2 s): in CI a starved shop PC once analysed the four-face photo
  // in one frame only, under the pipeline's two-frame minimum, and made no visit of the four. The black is 4 s (was
  // 5 s) so that the loop stays 21 s; gaps only grow when frames are dropped.
  holdS: 3,
  blankS: 4,
  /** Faces per showing. */
  faces: [1, 4, 1],
  /** Showings that show W. */
  w: [0, 2],
} as const;

let registry: Promise<string> | undefined;

export function registryPersonClip(): Promise<string> {
  registry ??= makeRegistryClip().catch((err: unknown) => {
    registry = undefined;
    throw err;
  });
  return registry;
}

async function makeRegistryClip(): Promise<string> {
  const file = path.join(clipsCacheDir, 'registry-w-sample6-w-640x360-25fps-hold3.mp4');
  if (existsSync(file)) return file;
  const { dir } = await ensureTestPhotos();
  await mkdir(clipsCacheDir, { recursive: true });
  const { holdS, blankS } = REGISTRY_CLIP;
  const fit = 'scale=640:360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuv420p';
  // Crops keep only W: her face spans x 1464-1679 in sample1 (the next face ends at 1033) and x 1078-1300 in
  // sample3 (neighbours end at 791 and start at 1504).
  const showings = [
    { photo: 'sample1.jpg', crop: 'crop=720:ih:1200:0,' },
    { photo: 'sample6.jpg', crop: '' },
    { photo: 'sample3.jpg', crop: 'crop=540:ih:880:0,' },
  ];
  const inputs = showings.flatMap((s) => ['-loop', '1', '-framerate', '25', '-t', String(holdS), '-i', path.join(dir, s.photo)]);
  const graph =
    showings.map((s, i) => `[${i}:v]${s.crop}${fit}[p${i}];color=c=black:s=640x360:r=25:d=${blankS},format=yuv420p[b${i}]`).join(';') +
    ';' +
    showings.map((_, i) => `[b${i}][p${i}]`).join('') +
    `concat=n=${showings.length * 2}:v=1:a=0[v]`;
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp.mp4`;
  try {
    await run(ffmpegBin(), ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...inputs, '-filter_complex', graph, '-map', '[v]', '-r', '25', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-g', '50', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', tmp]);
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
  return file;
}
