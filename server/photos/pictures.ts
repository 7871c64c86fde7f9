import fs from 'node:fs/promises';
import { sql } from 'drizzle-orm';
import type { Db, Store } from '../db/open.js';
import { row, run } from '../db/raw.js';
import { someCause } from '../db/unavailable.js';

/**
 * Where head office keeps the bytes of face photos and camera pictures. On the embedded store they are files in the
 * data folder (`images/`, `snapshots/`: server/agent-api/faces.ts, server/cameras/snapshots.ts). On PostgreSQL they are
 * rows of `face_image_bytes` and `camera_pictures` (server/db/pg/tables/pictures.ts), so every head-office process on
 * every machine serves the same ones (docs/scale-out.md, "Pictures on PostgreSQL"), pg_dump backs them up with the
 * rest, and a photo row's deletion (an erasure, the privacy sweep, the sweep of unlinked uploads) takes its bytes in
 * the same transaction (on delete cascade). A face photo kept there has an empty `face_images.path`. A removed camera
 * keeps its row as a tombstone: its picture is deleted by removeSnapshot.
 */
export const picturesInDatabase = (store: Store): boolean => store.dialect === 'postgres';

/** PostgreSQL's "foreign key violation": the camera or face row went away meanwhile. */
const FK_VIOLATION = '23503';

/** A picture file's bytes (the embedded store), or undefined when there is none. */
export async function readPictureFile(file: string): Promise<Buffer | undefined> {
  return await fs.readFile(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
}

/** A face photo's bytes, in the transaction that inserts its face_images row (PostgreSQL). */
export async function insertFaceBytes(db: Db, faceImageId: string, jpeg: Buffer): Promise<void> {
  await run(db, sql`insert into face_image_bytes (face_image_id, jpeg) values (${faceImageId}, ${jpeg})`);
}

export async function readFaceBytes(db: Db, faceImageId: string): Promise<Buffer | undefined> {
  return (await row<{ jpeg: Buffer }>(db, sql`select jpeg from face_image_bytes where face_image_id = ${faceImageId}`))?.jpeg;
}

/** A camera's latest picture, replacing the one before. False when the camera was removed meanwhile. */
export async function upsertCameraPicture(db: Db, cameraUuid: string, jpeg: Buffer): Promise<boolean> {
  try {
    await run(db, sql`insert into camera_pictures (camera_id, jpeg) values (${cameraUuid}, ${jpeg}) on conflict (camera_id) do update set jpeg = excluded.jpeg`);
    return true;
  } catch (err) {
    if (someCause(err, (code) => code === FK_VIOLATION)) return false;
    throw err;
  }
}

export async function readCameraPicture(db: Db, cameraUuid: string): Promise<Buffer | undefined> {
  return (await row<{ jpeg: Buffer }>(db, sql`select jpeg from camera_pictures where camera_id = ${cameraUuid}`))?.jpeg;
}

export async function deleteCameraPicture(db: Db, cameraUuid: string): Promise<void> {
  await run(db, sql`delete from camera_pictures where camera_id = ${cameraUuid}`);
}

/** Company deletion on PostgreSQL: the company's face photos' bytes (the rows go with the company). How many. */
export async function deleteCompanyFaceBytes(db: Db, companyId: string): Promise<number> {
  return await run(db, sql`delete from face_image_bytes b using face_images f where f.id = b.face_image_id and f.company_id = ${companyId}`);
}

/** Company deletion on PostgreSQL: its cameras' pictures. How many. */
export async function deleteCompanyCameraPictures(db: Db, companyId: string): Promise<number> {
  return await run(db, sql`delete from camera_pictures p using cameras c where c.id = p.camera_id and c.company_id = ${companyId}`);
}
