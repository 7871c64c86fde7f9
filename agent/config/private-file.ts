/**
 * Writing a file that holds secrets: mode 0600, atomically (a temporary file in the same folder, fsync, rename,
 * fsync of the folder), so a power cut leaves the old file or the new one, never half of one.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

const windows = process.platform === 'win32';

export interface PrivateFileOptions {
  /** Mode of the folder when it has to be created; default 0700. */
  dirMode?: number;
  /** Give the file to this user and group (root writing for a service's user); ignored on Windows. */
  owner?: { uid: number; gid: number };
}

export async function writePrivateFile(file: string, text: string, options: PrivateFileOptions = {}): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: options.dirMode ?? 0o700 });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      if (options.owner && !windows) await handle.chown(options.owner.uid, options.owner.gid);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (!windows) await chmod(tmp, 0o600); // whatever the umask
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await syncDir(dir);
}

async function syncDir(dir: string): Promise<void> {
  if (windows) return; // a folder cannot be opened for fsync there; NTFS journals the rename
  const handle = await open(dir, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
