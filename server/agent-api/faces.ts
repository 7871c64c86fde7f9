import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { companyImagesDir } from '../photos/local-store.js';

/**
 * Face images uploaded by shop PCs: <data>/images/<company id>/<first two characters of the id>/<id>.jpg. The id
 * is 128 random bits (base64url) so it cannot be guessed; the visit that names it (face_image_id) links it.
 * Company deletion removes the whole <data>/images/<company id> folder (imagesPurger).
 */
export function faceImageFile(dataDir: string, companyId: string, id: string): string {
  if (!/^[A-Za-z0-9_-]{16,64}$/.test(id)) throw new Error('bad face image id');
  return path.join(companyImagesDir(dataDir, companyId), id.slice(0, 2), `${id}.jpg`);
}

export async function storeFaceImage(dataDir: string, companyId: string, jpeg: Buffer): Promise<string> {
  const id = randomBytes(16).toString('base64url');
  const file = faceImageFile(dataDir, companyId, id);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, jpeg, { flag: 'wx' });
  return id;
}
