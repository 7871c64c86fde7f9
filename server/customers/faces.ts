import fs from 'node:fs';
import path from 'node:path';
import { and, asc, desc, eq, inArray, isNull, lt } from 'drizzle-orm';
import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import { faceImageFile, storeFaceImage } from '../agent-api/faces.js';
import type { Db, Store } from '../db/open.js';
import { insertFaceBytes, picturesInDatabase, readFaceBytes, readPictureFile } from '../photos/pictures.js';
import { changes, one } from '../db/query.js';
import { faceImages } from '../db/tables.js';

export type FaceImageRow = typeof faceImages.$inferSelect;

/**
 * Face images (spec: Photos). The shop PC uploads the face crop (POST /api/agent/faces, only with
 * FOOTFALL_IMAGES=local) and then publishes the visit naming it. The upload writes the file and an unlinked row;
 * ingest links the row to the visit and its customer, or discards it when the visit identified nobody (photos are
 * kept only for identified customers, so erasure can find and destroy every one) or when photos are off.
 * Unlinked rows older than UNLINKED_FACE_TTL_MS are swept with their files.
 */
export const UNLINKED_FACE_TTL_MS = 24 * 3600 * 1000;

/**
 * Stores an uploaded face (file, then its unlinked row; on PostgreSQL the row and its bytes in one transaction:
 * server/photos/pictures.ts); returns the id the visit will name.
 */
export async function storeUploadedFace(
  deps: { store: Store; config: { dataDir: string } },
  agent: { companyId: string; shopId: string },
  jpeg: Buffer,
): Promise<string> {
  const { dataDir } = deps.config;
  const { store } = deps;
  if (picturesInDatabase(store)) {
    const id = randomBytes(16).toString('base64url');
    await store.tx(async () => {
      await store.db.insert(faceImages).values({ id, companyId: agent.companyId, shopId: agent.shopId, path: '', createdAt: new Date().toISOString() });
      await insertFaceBytes(store.db, id, jpeg);
    });
    return id;
  }
  const id = await storeFaceImage(dataDir, agent.companyId, jpeg);
  const file = faceImageFile(dataDir, agent.companyId, id);
  try {
    await deps.store.db
      .insert(faceImages)
      .values({ id, companyId: agent.companyId, shopId: agent.shopId, path: path.relative(dataDir, file), createdAt: new Date().toISOString() });
  } catch (err) {
    fs.rmSync(file, { force: true });
    throw err;
  }
  return id;
}

/** The photo's file in the data folder, or undefined when its bytes are a database row (an empty path). */
export function faceFile(dataDir: string, row: Pick<FaceImageRow, 'path'>): string | undefined {
  return row.path === '' ? undefined : path.join(dataDir, row.path);
}

/** A photo's JPEG, or undefined when it is gone (its file or its row). */
export async function readFace(deps: { store: Store; config: { dataDir: string } }, row: Pick<FaceImageRow, 'id' | 'path'>): Promise<Buffer | undefined> {
  const file = faceFile(deps.config.dataDir, row);
  return file ? await readPictureFile(file) : await readFaceBytes(deps.store.db, row.id);
}

/** A face of the company, linked to a customer (the only ones served), or undefined. */
export async function findServableFace(db: Db, companyId: string, id: string): Promise<FaceImageRow | undefined> {
  if (!/^[A-Za-z0-9_-]{16,64}$/.test(id)) return undefined;
  const row = await one(db.select().from(faceImages).where(and(eq(faceImages.id, id), eq(faceImages.companyId, companyId))));
  return row && row.customerId !== null ? row : undefined;
}

/** The customer's newest photo. */
export async function latestFaceOf(db: Db, customerId: string): Promise<FaceImageRow | undefined> {
  return await one(db.select().from(faceImages).where(eq(faceImages.customerId, customerId)).orderBy(desc(faceImages.createdAt), desc(faceImages.id)).limit(1));
}

export async function facesOf(db: Db, customerId: string): Promise<FaceImageRow[]> {
  return await db.select().from(faceImages).where(eq(faceImages.customerId, customerId)).orderBy(asc(faceImages.createdAt));
}

/**
 * Ingest: links an uploaded, still unlinked face of this company to its visit and customer. Returns false when there
 * is no such upload (unknown id, another company's, already linked, swept). Call inside the ingest transaction.
 */
export async function linkFace(db: Db, input: { id: string; companyId: string; customerId: string; visitId: string; at: string }): Promise<boolean> {
  const r = await db
    .update(faceImages)
    .set({ customerId: input.customerId, visitId: input.visitId, linkedAt: input.at })
    .where(and(eq(faceImages.id, input.id), eq(faceImages.companyId, input.companyId), isNull(faceImages.visitId)));
  return changes(r) === 1;
}

/** Unlinked uploads of the company among these ids (what ingest may discard). */
export async function unlinkedFaces(db: Db, companyId: string, ids: string[]): Promise<FaceImageRow[]> {
  if (ids.length === 0) return [];
  return await db
    .select()
    .from(faceImages)
    .where(and(eq(faceImages.companyId, companyId), inArray(faceImages.id, ids), isNull(faceImages.visitId)));
}

/**
 * Deletes unlinked uploads now (after ingest's commit: a visit that identified nobody, or photos off): the file,
 * then the row. A file that cannot be deleted keeps its row, so the sweeper tries again.
 */
export async function discardFaces(deps: { store: Store; config: { dataDir: string }; log: Logger }, rows: readonly FaceImageRow[]): Promise<number> {
  let n = 0;
  for (const row of rows) {
    try {
      const file = faceFile(deps.config.dataDir, row);
      if (file) fs.rmSync(file, { force: true });
      await deps.store.db.delete(faceImages).where(and(eq(faceImages.id, row.id), isNull(faceImages.visitId)));
      n++;
    } catch (err) {
      deps.log.warn({ err, face_image_id: row.id }, 'face image not discarded; the sweeper will retry');
    }
  }
  return n;
}

/** Deletes unlinked uploads older than the TTL (files, then rows). Returns how many went. */
export async function sweepUnlinkedFaces(deps: { store: Store; config: { dataDir: string }; log: Logger }, now = Date.now(), ttlMs = UNLINKED_FACE_TTL_MS): Promise<number> {
  const cutoff = new Date(now - ttlMs).toISOString();
  let total = 0;
  for (;;) {
    const rows = await deps.store.db
      .select()
      .from(faceImages)
      .where(and(isNull(faceImages.visitId), lt(faceImages.createdAt, cutoff)))
      .limit(500);
    if (rows.length === 0) return total;
    const n = await discardFaces(deps, rows);
    total += n;
    if (n < rows.length) return total;
  }
}

// -------------------------------------------------------------------------------------------------------------
// Erasure: every photo of the customer must go, or nothing is erased.

export class StorageError extends Error {}

/**
 * Step 1 of erasure, inside its transaction: renames every file to `<file>.erasing` (same folder, atomic). A missing
 * file is already gone; any other failure renames back what was moved and throws StorageError, so the caller's
 * transaction rolls back with every photo where it was.
 */
export function moveAside(dataDir: string, rows: readonly FaceImageRow[]): string[] {
  const moved: string[] = [];
  try {
    for (const row of rows) {
      // A photo kept in the database goes with its row, in the caller's transaction.
      const file = faceFile(dataDir, row);
      if (!file) continue;
      try {
        fs.renameSync(file, `${file}.erasing`);
        moved.push(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
    }
    return moved;
  } catch (err) {
    putBack(moved);
    throw new StorageError(`face image not deletable: ${(err as Error).message}`);
  }
}

/** The transaction failed after moveAside: put every file back. */
export function putBack(moved: readonly string[]): void {
  for (const file of moved) {
    try {
      fs.renameSync(`${file}.erasing`, file);
    } catch {
      // Best effort: the folder accepted the rename a moment ago.
    }
  }
}

/** After the commit: delete the moved files. */
export function destroyMoved(moved: readonly string[], log: Logger): void {
  for (const file of moved) {
    try {
      fs.rmSync(`${file}.erasing`, { force: true });
    } catch (err) {
      log.error({ err, file }, 'an erased customer\'s photo could not be deleted after the erasure; delete it by hand');
    }
  }
}
