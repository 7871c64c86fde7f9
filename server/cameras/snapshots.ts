import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { CompanyPurger } from '../clients/deletion.js';
import type { Store } from '../db/open.js';
import { deleteCameraPicture, deleteCompanyCameraPictures, picturesInDatabase, readCameraPicture, readPictureFile, upsertCameraPicture } from '../photos/pictures.js';

/**
 * Camera pictures (the latest per camera): <data>/snapshots/<company id>/<camera uuid>.jpg on the embedded store; on
 * PostgreSQL a row of camera_pictures (server/photos/pictures.ts), deleted when the camera is removed (its row stays as a
 * tombstone) and with the company.
 */
type Deps = { store: Store; config: { dataDir: string } };

export function snapshotFile(dataDir: string, companyId: string, cameraUuid: string): string {
  return path.join(dataDir, 'snapshots', companyId, `${cameraUuid}.jpg`);
}

/** Replaces the camera's picture. A file is written atomically (temp file + rename): a reader never sees half a picture. */
export async function writeSnapshot(deps: Deps, companyId: string, cameraUuid: string, jpeg: Buffer): Promise<void> {
  if (picturesInDatabase(deps.store)) {
    await upsertCameraPicture(deps.store.db, cameraUuid, jpeg);
    return;
  }
  const file = snapshotFile(deps.config.dataDir, companyId, cameraUuid);
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fs.writeFile(tmp, jpeg);
  await fs.rename(tmp, file);
}

export async function readSnapshot(deps: Deps, companyId: string, cameraUuid: string): Promise<Buffer | undefined> {
  if (picturesInDatabase(deps.store)) return await readCameraPicture(deps.store.db, cameraUuid);
  return await readPictureFile(snapshotFile(deps.config.dataDir, companyId, cameraUuid));
}

/** After a camera's removal (its row stays, as a tombstone). */
export async function removeSnapshot(deps: Deps, companyId: string, cameraUuid: string): Promise<void> {
  if (picturesInDatabase(deps.store)) return await deleteCameraPicture(deps.store.db, cameraUuid);
  await fs.rm(snapshotFile(deps.config.dataDir, companyId, cameraUuid), { force: true });
}

/** Company deletion, after the broker logins: every camera picture of the company. */
export function snapshotsPurger(deps: Deps): CompanyPurger {
  return {
    name: 'snapshots',
    failure: { status: 502, code: 'storage_error', message: 'Camera pictures could not be deleted, so no rows were deleted. Check the data folder and try again.' },
    async purge(companyId) {
      if (picturesInDatabase(deps.store)) return await deleteCompanyCameraPictures(deps.store.db, companyId);
      const dir = path.join(deps.config.dataDir, 'snapshots', companyId);
      const n = (await fs.readdir(dir).catch(() => [] as string[])).length;
      await fs.rm(dir, { recursive: true, force: true });
      return n;
    },
  };
}
