import { text, pgTable } from 'drizzle-orm/pg-core';
import { bytes } from '../columns.js';
import { cameras } from './cameras.js';
import { faceImages } from './customers.js';

/**
 * PostgreSQL only (server/photos/pictures.ts): the bytes that the embedded store keeps as files in the data folder,
 * kept in the database so every head-office process on every machine sees the same ones. Each row goes with the row
 * it belongs to (on delete cascade): an erasure or the privacy sweep deletes a photo in its transaction, a company's
 * deletion everything. server/db/pg/schema.test.ts names these as the only tables SQLite does not have.
 */

/** A face photo's JPEG (face_images.path is empty for these). */
export const faceImageBytes = pgTable('face_image_bytes', {
  faceImageId: text('face_image_id')
    .primaryKey()
    .references(() => faceImages.id, { onDelete: 'cascade' }),
  jpeg: bytes('jpeg').notNull(),
});

/** A camera's latest picture (snapshot or camera check); cameras.snapshot_at says when it came. */
export const cameraPictures = pgTable('camera_pictures', {
  cameraId: text('camera_id')
    .primaryKey()
    .references(() => cameras.id, { onDelete: 'cascade' }),
  jpeg: bytes('jpeg').notNull(),
});

/** The tables SQLite has no counterpart of (`footfall migrate --to` fills them from the data folder's files). */
export const postgresOnlyTables = [faceImageBytes, cameraPictures];
