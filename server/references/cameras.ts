import { and, eq, isNull } from 'drizzle-orm';
import type { RefKind } from './resolver.js';
import { one } from '../db/query.js';
import { cameras } from '../db/tables.js';

/**
 * A camera: uuid, or its camera_id (exact). Removed cameras (tombstones) never resolve. Two shops may each have the
 * same camera_id: the bare camera_id then names more than one camera and resolves to nothing.
 */
export const cameraRef: RefKind = {
  noun: 'camera',
  byId: async (db, tenantId, id) =>
    (await one(db
      .select({ id: cameras.id })
      .from(cameras)
      .where(and(eq(cameras.id, id), eq(cameras.companyId, tenantId), isNull(cameras.deletedAt)))))?.id,
  byRef: async (db, tenantId, ref) =>
    (await db
      .select({ id: cameras.id })
      .from(cameras)
      .where(and(eq(cameras.cameraId, ref), eq(cameras.companyId, tenantId), isNull(cameras.deletedAt))))
      .map((r) => r.id),
};
