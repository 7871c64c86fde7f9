/** Small file helpers for the runtime's own state files (writing: agent/config/private-file.ts). */
import { readFile } from 'node:fs/promises';

export { giveToFolderOwner, writePrivateFile } from '../config/private-file.js';

/** The file's text, or undefined when it does not exist. */
export async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
