import fs from 'node:fs/promises';
import path from 'node:path';
import type { CompanyPurger } from '../clients/deletion.js';
import type { Store } from '../db/open.js';
import { deleteCompanyFaceBytes, picturesInDatabase } from './pictures.js';

/** Stored face images live under <data>/images/<company id>/ (on PostgreSQL: server/photos/pictures.ts). */
export function companyImagesDir(dataDir: string, companyId: string): string {
  return path.join(dataDir, 'images', companyId);
}

async function countFiles(dir: string): Promise<number> {
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  return entries.filter((e) => e.isFile()).length;
}

/** Deletes every stored image of a company (first step of company deletion). */
export function imagesPurger(deps: { store: Store; config: { dataDir: string } }): CompanyPurger {
  return {
    name: 'images',
    failure: { status: 502, code: 'storage_error', message: 'Stored face images could not be deleted, so nothing was deleted. Check the data folder and try again.' },
    async purge(companyId) {
      if (picturesInDatabase(deps.store)) return await deleteCompanyFaceBytes(deps.store.db, companyId);
      const dir = companyImagesDir(deps.config.dataDir, companyId);
      const n = await countFiles(dir);
      await fs.rm(dir, { recursive: true, force: true });
      return n;
    },
  };
}
