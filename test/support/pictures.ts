import fs from 'node:fs';
import path from 'node:path';
import { faceImageFile } from '../../server/agent-api/faces.js';
import { snapshotFile } from '../../server/cameras/snapshots.js';
import { companyImagesDir } from '../../server/photos/local-store.js';
import { statementOn } from '../../server/db/statement.js';
import type { Harness } from './harness.js';

/**
 * Where the store under test keeps picture bytes (server/photos/pictures.ts): files in the data folder on SQLite,
 * rows on PostgreSQL. Tests ask these whether a picture is kept or gone, and run on both stores.
 */
type On = Pick<Harness, 'server' | 'dataDir'>;

/** A face photo's stored bytes, or undefined when there are none. */
export async function storedFace(h: On, companyId: string, id: string): Promise<Buffer | undefined> {
  if (h.server.store.dialect === 'postgres') {
    return (await statementOn(h.server.store, 'select jpeg from face_image_bytes where face_image_id = ?').get<{ jpeg: Buffer }>(id))?.jpeg;
  }
  const file = faceImageFile(h.dataDir, companyId, id);
  return fs.existsSync(file) ? fs.readFileSync(file) : undefined;
}

/** How many face photos of the company are stored (files under its image folder, or rows). */
export async function storedFaces(h: On, companyId: string): Promise<number> {
  if (h.server.store.dialect === 'postgres') {
    const r = await statementOn(h.server.store, 'select count(*) as n from face_image_bytes b join face_images f on f.id = b.face_image_id where f.company_id = ?').get<{ n: number }>(companyId);
    return Number(r!.n);
  }
  const dir = companyImagesDir(h.dataDir, companyId);
  return fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length : 0;
}

/** How many camera pictures of the company are stored. */
export async function storedCameraPictures(h: On, companyId: string): Promise<number> {
  if (h.server.store.dialect === 'postgres') {
    const r = await statementOn(h.server.store, 'select count(*) as n from camera_pictures p join cameras c on c.id = p.camera_id where c.company_id = ?').get<{ n: number }>(companyId);
    return Number(r!.n);
  }
  const dir = path.dirname(snapshotFile(h.dataDir, companyId, 'x'));
  return fs.existsSync(dir) ? fs.readdirSync(dir).length : 0;
}
