/**
 * Writing a file that holds secrets: mode 0600, atomically (a temporary file in the same folder, fsync, rename,
 * fsync of the folder), so a power cut leaves the old file or the new one, never half of one.
 *
 * And who owns what the shop PC's commands write. The service runs as its own user (`footfall`), owner of
 * /etc/footfall and /var/lib/footfall; an installer may run `footfall enrol` or `footfall agent` as root by hand. A
 * file root creates there would be root's, mode 0600: the service could not read it (the configuration, the kept
 * camera list) or open it at all (the queue file, and with it the agent). So a file created by root in another
 * user's folder is given to that folder's owner (ownerForNewFile).
 */
import { randomBytes } from 'node:crypto';
import { constants, statSync } from 'node:fs';
import { chmod, chown, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

const windows = process.platform === 'win32';

export interface Owner {
  uid: number;
  gid: number;
}

/**
 * Who is to own a file created by a process running as user `euid` in a folder owned by `folder`: the folder's owner
 * when root writes into another user's folder; undefined (the creator, as usual) otherwise: not root (nobody else may
 * give a file away), root's own folder, no user ids (Windows), no folder.
 */
export function ownerForNewFile(euid: number | undefined, folder: Owner | undefined): Owner | undefined {
  if (euid !== 0 || !folder || folder.uid === 0) return undefined;
  return { uid: folder.uid, gid: folder.gid };
}

/**
 * ownerForNewFile for this process and the folder `dir` (undefined when it cannot be read). Synchronous (one stat):
 * the queue file is opened synchronously, and the async writers use it as well.
 */
export function newFileOwner(dir: string): Owner | undefined {
  if (windows || process.geteuid?.() !== 0) return undefined;
  try {
    const { uid, gid } = statSync(dir);
    return ownerForNewFile(0, { uid, gid });
  } catch {
    return undefined;
  }
}

/**
 * An existing file in a folder of another user, when this process runs as root: given to the folder's owner unless
 * it is theirs already (a file an earlier run as root left behind). Nothing otherwise, or when the file is missing.
 */
export async function giveToFolderOwner(file: string): Promise<void> {
  const owner = newFileOwner(path.dirname(file));
  if (!owner) return;
  try {
    const now = await stat(file);
    if (now.uid !== owner.uid || now.gid !== owner.gid) await chown(file, owner.uid, owner.gid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

export interface PrivateFileOptions {
  /** Mode of the folder when it has to be created; default 0700. */
  dirMode?: number;
  /** Give the file to this user and group; default newFileOwner() of its folder (root writing for a service's user). Ignored on Windows. */
  owner?: Owner;
}

export async function writePrivateFile(file: string, text: string, options: PrivateFileOptions = {}): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: options.dirMode ?? 0o700 });
  const owner = options.owner ?? newFileOwner(dir);
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      if (owner && !windows) await handle.chown(owner.uid, owner.gid);
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
