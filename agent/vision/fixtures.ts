/**
 * Test and benchmark inputs for the vision pipeline: the optional private
 * folder ../shared/faces, and a video made from the registry photos with
 * ffmpeg for machines that do not have it. Not used by the agent at run time.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ensureTestPhotos } from '../fixtures/registry-photos.js';
import { repoRoot, testCacheRoot } from '../models/test-cache.js';
import { ffmpegBin } from '../capture/ffmpeg-bin.js';

const execFileP = promisify(execFile);

/**
 * `<repo>/../shared/faces` when it exists (file name = person), else undefined.
 * FOOTFALL_SHARED_FACES=off makes it absent (to run the suite as a clean machine would).
 */
export function sharedFacesDir(): string | undefined {
  if (process.env.FOOTFALL_SHARED_FACES === 'off') return undefined;
  const dir = resolve(repoRoot(), '..', 'shared', 'faces');
  return existsSync(join(dir, 'obama-1.jpg')) ? dir : undefined;
}

/** The 9-second stage clip in ../shared/faces, when present. */
export function sharedClip(): string | undefined {
  const dir = sharedFacesDir();
  const clip = dir && join(dir, 'short-hamilton-clip.mp4');
  return clip && existsSync(clip) ? clip : undefined;
}

/** Person name from a ../shared/faces file name: "kit-harington-2.jpg" -> "kit-harington". */
export function personOf(file: string): string {
  return file.replace(/\.(jpe?g|png)$/i, '').replace(/-(\d+|240p|partial)$/, '');
}

/** Photos of the registry video, in order, and how many seconds each is held before a blank second. */
export const REGISTRY_VIDEO_PHOTOS = ['sample1.jpg', 'sample3.jpg', 'sample6.jpg'] as const;
export const REGISTRY_VIDEO_HOLD_S = 2;
/** Longer than the pipeline's link window (3 s): each showing is a pass of its own, not the previous one resumed. */
export const REGISTRY_VIDEO_BLANK_S = 5;

/**
 * A 640x360, 5-fps H.264 video made from registry photos: each photo
 * (letterboxed) held REGISTRY_VIDEO_HOLD_S seconds, then REGISTRY_VIDEO_BLANK_S black seconds (longer than the pipeline's link window), the
 * whole sequence twice. Cached in node_modules/.cache/footfall/video.
 * Each photo shows its people for one "pass"; sample1 right and sample3 middle
 * are the same woman (SAME_PERSON).
 */
export async function ensureRegistryVideo(): Promise<string> {
  const dir = join(testCacheRoot(), 'video');
  const out = join(dir, 'registry-photos-2x-v3.mp4');
  if (existsSync(out)) return out;
  const { dir: photos } = await ensureTestPhotos();
  await mkdir(dir, { recursive: true });
  const tmp = `${out}.${process.pid}.${Date.now()}.tmp.mp4`;
  const inputs: string[] = [];
  const filters: string[] = [];
  const parts: string[] = [];
  const seq = [...REGISTRY_VIDEO_PHOTOS, ...REGISTRY_VIDEO_PHOTOS];
  seq.forEach((file, i) => {
    inputs.push('-loop', '1', '-framerate', '5', '-t', String(REGISTRY_VIDEO_HOLD_S), '-i', join(photos, file));
    filters.push(`[${i}:v]scale=640:360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuv420p[p${i}]`);
    filters.push(`color=c=black:s=640x360:r=5:d=${REGISTRY_VIDEO_BLANK_S},format=yuv420p[b${i}]`);
    parts.push(`[p${i}][b${i}]`);
  });
  const graph = `${filters.join(';')};${parts.join('')}concat=n=${seq.length * 2}:v=1:a=0[v]`;
  try {
    await execFileP(ffmpegBin(), ['-nostdin', '-v', 'error', '-y', ...inputs, '-filter_complex', graph, '-map', '[v]', '-r', '5', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', tmp]);
    await rename(tmp, out);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new Error(`Could not make the registry test video with ffmpeg: ${(err as Error).message}`);
  }
  return out;
}
