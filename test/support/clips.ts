/**
 * A video clip for camera tests: the shared face clip when it is there (../shared/faces, next to the repository),
 * else a clip generated once with ffmpeg (test pattern, 640x360, H.264, 5 s; no faces, fine for connection
 * tests) into node_modules/.cache/footfall/clips/, shared by every test file and run.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The repository root (test/support/ -> ../..). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The shared clip: 9 s, 640x360, H.264 + AAC, people's faces. */
export const sharedClip = path.resolve(root, '..', 'shared', 'faces', 'short-hamilton-clip.mp4');

export const clipsCacheDir = path.join(root, 'node_modules', '.cache', 'footfall', 'clips');

let generated: Promise<string> | undefined;

/** The shared face clip if present, else the generated test-pattern clip. */
export function testClip(): Promise<string> {
  return existsSync(sharedClip) ? Promise.resolve(sharedClip) : generatedClip();
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
    await run('ffmpeg', [
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
