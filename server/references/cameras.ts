import { and, eq, isNull } from 'drizzle-orm';
import { cameras } from '../cameras/schema.js';
import type { RefKind } from './resolver.js';

/**
 * A camera: uuid, or its camera_id (exact). Removed cameras (tombstones) never resolve. Two shops may each have the
 * same camera_id: the bare camera_id then names more than one camera and resolves to nothing.
 */
export const cameraRef: RefKind = {
  noun: 'camera',
  byId: (db, tenantId, id) =>
    db
      .select({ id: cameras.id })
      .from(cameras)
      .where(and(eq(cameras.id, id), eq(cameras.companyId, tenantId), isNull(cameras.deletedAt)))
      .get()?.id,
  byRef: (db, tenantId, ref) =>
    db
      .select({ id: cameras.id })
      .from(cameras)
      .where(and(eq(cameras.cameraId, ref), eq(cameras.companyId, tenantId), isNull(cameras.deletedAt)))
      .all()
      .map((r) => r.id),
};
