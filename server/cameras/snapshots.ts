import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { CompanyPurger } from '../clients/deletion.js';

/** Camera pictures (the latest per camera): <data>/snapshots/<company id>/<camera uuid>.jpg. */
export function snapshotFile(dataDir: string, companyId: string, cameraUuid: string): string {
  return path.join(dataDir, 'snapshots', companyId, `${cameraUuid}.jpg`);
}

/** Writes atomically (temp file + rename), so a reader never sees half a picture. */
export async function writeSnapshot(dataDir: string, companyId: string, cameraUuid: string, jpeg: Buffer): Promise<void> {
  const file = snapshotFile(dataDir, companyId, cameraUuid);
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fs.writeFile(tmp, jpeg);
  await fs.rename(tmp, file);
}

export async function readSnapshot(dataDir: string, companyId: string, cameraUuid: string): Promise<Buffer | undefined> {
  return fs.readFile(snapshotFile(dataDir, companyId, cameraUuid)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
}

export async function removeSnapshot(dataDir: string, companyId: string, cameraUuid: string): Promise<void> {
  await fs.rm(snapshotFile(dataDir, companyId, cameraUuid), { force: true });
}

/** Company deletion, after the broker logins: every camera picture of the company. */
export function snapshotsPurger(dataDir: string): CompanyPurger {
  return {
    name: 'snapshots',
    failure: { status: 502, code: 'storage_error', message: 'Camera pictures could not be deleted, so no rows were deleted. Check the data folder and try again.' },
    async purge(companyId) {
      const dir = path.join(dataDir, 'snapshots', companyId);
      const n = (await fs.readdir(dir).catch(() => [] as string[])).length;
      await fs.rm(dir, { recursive: true, force: true });
      return n;
    },
  };
}
