import { randomUUID } from 'node:crypto';
import { and, asc, eq, isNull } from 'drizzle-orm';
import { DEFAULT_TUNING, type Tuning } from '../../shared/agent-api.js';
import type { Db } from '../db/open.js';
import { conflict } from '../http/errors.js';
import type { CameraState } from '../shops/check.js';
import { one, returned } from '../db/query.js';
import { shops, cameraChecks, cameras } from '../db/tables.js';

export type CameraRow = typeof cameras.$inferSelect;
export type CheckRow = typeof cameraChecks.$inferSelect;

export interface ShopBrief {
  id: string;
  name: string;
  slug: string;
}

export interface CameraView {
  camera: CameraRow;
  shop: ShopBrief;
  check: CheckRow | null;
}

export const DEFAULTS = { port: 554, path: '', username: '', maxWidth: 1280 } as const;

const shopBrief = { id: shops.id, name: shops.name, slug: shops.slug };

/** The company's present cameras (no tombstones) with their shop and Check row, by shop then camera_id. */
export async function listCameras(db: Db, companyId: string): Promise<CameraView[]> {
  return await db
    .select({ camera: cameras, shop: shopBrief, check: cameraChecks })
    .from(cameras)
    .innerJoin(shops, eq(shops.id, cameras.shopId))
    .leftJoin(cameraChecks, eq(cameraChecks.id, cameras.lastCheckId))
    .where(and(eq(cameras.companyId, companyId), isNull(cameras.deletedAt)))
    .orderBy(asc(shops.name), asc(cameras.cameraId));
}

/** One present camera with its shop and Check row. */
export async function viewCamera(db: Db, id: string): Promise<CameraView | undefined> {
  return await one(db
    .select({ camera: cameras, shop: shopBrief, check: cameraChecks })
    .from(cameras)
    .innerJoin(shops, eq(shops.id, cameras.shopId))
    .leftJoin(cameraChecks, eq(cameraChecks.id, cameras.lastCheckId))
    .where(and(eq(cameras.id, id), isNull(cameras.deletedAt))));
}

/** A present camera of one shop by uuid or camera_id (unique within the shop). */
export async function findShopCamera(db: Db, shopId: string, ref: string): Promise<CameraRow | undefined> {
  const present = and(eq(cameras.shopId, shopId), isNull(cameras.deletedAt));
  return (
    (await one(db
      .select()
      .from(cameras)
      .where(and(present, eq(cameras.id, ref.toLowerCase()))))) ??
    (await one(db
      .select()
      .from(cameras)
      .where(and(present, eq(cameras.cameraId, ref)))))
  );
}

/** Every camera of a shop, tombstones included (the shop PC's list). */
export async function shopCameras(db: Db, shopId: string): Promise<CameraRow[]> {
  return await db.select().from(cameras).where(eq(cameras.shopId, shopId)).orderBy(asc(cameras.cameraId), asc(cameras.createdAt));
}

/**
 * What the shop check needs about the shop's present cameras; `counting` (./counting.ts) adds why a connected door
 * camera is not counting, so the check flags it like a camera that does not connect.
 */
export async function shopCameraStates(db: Db, shopId: string, counting: ReadonlyMap<string, { state: string; problem: string | null }> = new Map()): Promise<CameraState[]> {
  return (await db
    .select({ id: cameras.id, cameraId: cameras.cameraId, label: cameras.label, enabled: cameras.enabled, connected: cameras.connected, connectionReason: cameras.connectionReason })
    .from(cameras)
    .where(and(eq(cameras.shopId, shopId), isNull(cameras.deletedAt)))
    .orderBy(asc(cameras.cameraId)))
    .map(({ id, ...c }) => {
      const health = counting.get(id);
      return { ...c, countingProblem: health?.state === 'not_counting' ? health.problem : null };
    });
}

export interface CameraFields {
  label: string;
  host: string;
  port: number;
  path: string;
  username: string;
  /** Sealed password, or null for none. */
  password: string | null;
  maxWidth: number;
  tuning: Tuning;
  enabled: boolean;
}

/** Adds a camera. Call inside a transaction; a camera_id the shop already has is 409 conflict. */
export async function createCamera(db: Db, input: { companyId: string; shopId: string; cameraId: string } & CameraFields): Promise<CameraRow> {
  const taken = await one(db
    .select({ id: cameras.id })
    .from(cameras)
    .where(and(eq(cameras.shopId, input.shopId), eq(cameras.cameraId, input.cameraId), isNull(cameras.deletedAt))));
  if (taken) throw conflict(`This shop already has a camera "${input.cameraId}".`);
  const now = new Date().toISOString();
  return await returned(db
    .insert(cameras)
    .values({ id: randomUUID(), ...input, revision: 1, createdAt: now, updatedAt: now })
    .returning());
}

/** Applies an edit and bumps the revision (every edit does, even one that changes nothing). */
export async function updateCamera(db: Db, camera: CameraRow, changes: Partial<CameraFields>): Promise<CameraRow> {
  return await returned(db
    .update(cameras)
    .set({ ...changes, revision: camera.revision + 1, updatedAt: new Date().toISOString() })
    .where(eq(cameras.id, camera.id))
    .returning());
}

/**
 * DELETE: the row stays as a tombstone for the shop PC (its password dropped); its camera_id is free again. An open
 * check of it is released at once, so a late answer is refused rather than stored for a camera that is gone.
 */
export async function tombstoneCamera(db: Db, camera: CameraRow): Promise<void> {
  const now = new Date().toISOString();
  await db.update(cameras)
    .set({ deletedAt: now, updatedAt: now, revision: camera.revision + 1, password: null })
    .where(eq(cameras.id, camera.id));
  await db.update(cameraChecks)
    .set({ state: 'timed_out' })
    .where(and(eq(cameraChecks.cameraUuid, camera.id), eq(cameraChecks.state, 'requested')));
}

/** A shop PC's report on one camera. `connected` null before the first report; last_seen_at is the last true one. */
export async function recordCameraState(db: Db, camera: CameraRow, connected: boolean, reason: string | undefined): Promise<void> {
  const now = new Date().toISOString();
  await db.update(cameras)
    .set({ connected, connectionReason: reason ?? null, stateReportedAt: now, ...(connected ? { lastSeenAt: now } : {}) })
    .where(eq(cameras.id, camera.id));
}

export async function recordSnapshot(db: Db, cameraUuid: string, at: string): Promise<void> {
  await db.update(cameras).set({ snapshotAt: at }).where(eq(cameras.id, cameraUuid));
}

export function mergeTuning(base: Tuning, changes: Partial<Tuning> | undefined): Tuning {
  return { ...DEFAULT_TUNING, ...base, ...(changes ?? {}) };
}
