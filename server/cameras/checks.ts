import { randomUUID } from 'node:crypto';
import { and, asc, eq, gt, isNull, lte } from 'drizzle-orm';
import type { CheckAnswer } from '../../shared/agent-api.js';
import type { CheckKind } from '../../shared/messages.js';
import type { Db } from '../db/open.js';
import { HttpError, conflict } from '../http/errors.js';
import type { CameraRow, CheckRow } from './service.js';
import { one, returned, changes } from '../db/query.js';
import { cameraChecks, cameras } from '../db/tables.js';

/**
 * Camera check lifecycle (spec: States and transitions, Camera check):
 *   (none) --POST /api/cameras/{id}/check--> requested --shop PC answers--> done
 *   requested --release_at passes unanswered--> timed_out   (released: a new check may be requested)
 * Claiming (POST /api/agent/checks/claim) stamps claimed_at; the state stays `requested`. Release is evaluated when
 * read (so no timer is needed) and persisted when the shop's checks are next touched.
 */
export type CheckState = 'absent' | 'requested' | 'done' | 'timed_out';

export function stateOf(check: CheckRow | null | undefined, now = Date.now()): CheckState {
  if (!check) return 'absent';
  if (check.state === 'requested' && Date.parse(check.releaseAt) <= now) return 'timed_out';
  return check.state;
}

/** Records a new request; 409 while the camera's previous check is still open. Call inside a transaction. */
export async function requestCheck(
  db: Db,
  camera: CameraRow,
  current: CheckRow | null,
  input: { kind: CheckKind; seconds: number | null; requestedBy: string; releaseS: number },
): Promise<CheckRow> {
  const now = Date.now();
  if (stateOf(current, now) === 'requested') {
    throw conflict(`A check of this camera is already running; it ends by ${current!.releaseAt} at the latest. Poll GET /api/cameras until it is done.`);
  }
  const check = await returned(db
    .insert(cameraChecks)
    .values({
      id: randomUUID(),
      companyId: camera.companyId,
      shopId: camera.shopId,
      cameraUuid: camera.id,
      kind: input.kind,
      seconds: input.seconds,
      state: 'requested',
      requestedAt: new Date(now).toISOString(),
      requestedBy: input.requestedBy,
      releaseAt: new Date(now + input.releaseS * 1000).toISOString(),
    })
    .returning());
  await db.update(cameras).set({ lastCheckId: check.id }).where(eq(cameras.id, camera.id));
  return check;
}

/** Persists the release of the shop's checks whose time ran out. */
export async function releaseExpired(db: Db, shopId: string, now = Date.now()): Promise<number> {
  return changes(await db
    .update(cameraChecks)
    .set({ state: 'timed_out' })
    .where(and(eq(cameraChecks.shopId, shopId), eq(cameraChecks.state, 'requested'), lte(cameraChecks.releaseAt, new Date(now).toISOString()))));
}

/** The shop's oldest open, unclaimed check, now claimed; undefined when there is none. Call inside a transaction. */
export async function claimNextCheck(db: Db, shopId: string, now = Date.now()): Promise<{ check: CheckRow; camera: CameraRow } | undefined> {
  await releaseExpired(db, shopId, now);
  const row = await one(db
    .select({ check: cameraChecks, camera: cameras })
    .from(cameraChecks)
    .innerJoin(cameras, eq(cameras.id, cameraChecks.cameraUuid))
    .where(
      and(
        eq(cameraChecks.shopId, shopId),
        eq(cameraChecks.state, 'requested'),
        isNull(cameraChecks.claimedAt),
        gt(cameraChecks.releaseAt, new Date(now).toISOString()),
        isNull(cameras.deletedAt),
      ),
    )
    .orderBy(asc(cameraChecks.requestedAt))
    .limit(1));
  if (!row) return undefined;
  const claimedAt = new Date(now).toISOString();
  await db.update(cameraChecks).set({ claimedAt }).where(eq(cameraChecks.id, row.check.id));
  return { check: { ...row.check, claimedAt }, camera: row.camera };
}

/** A check of this shop, for answering (404 for anyone else's). */
export async function shopCheck(db: Db, shopId: string, checkId: string): Promise<CheckRow> {
  const check = await one(db
    .select()
    .from(cameraChecks)
    .where(and(eq(cameraChecks.id, checkId), eq(cameraChecks.shopId, shopId))));
  if (!check) throw new HttpError(404, 'not_found', 'This shop has no such check.');
  return check;
}

/** Records the shop PC's answer; 409 when the check is no longer open. `ok` is true only for `good`. */
export async function answerCheck(db: Db, check: CheckRow, answer: CheckAnswer, hasImage: boolean, now = Date.now()): Promise<CheckRow> {
  const state = stateOf(check, now);
  if (state !== 'requested') {
    throw conflict(state === 'timed_out' ? 'This check timed out before the answer arrived; it was released.' : 'This check was already answered.');
  }
  return await returned(db
    .update(cameraChecks)
    .set({
      state: 'done',
      answeredAt: new Date(now).toISOString(),
      verdict: answer.verdict,
      faces: answer.detail.faces,
      fractionBelowGate: answer.detail.fraction_below_gate,
      reason: answer.reason ?? null,
      hasImage,
    })
    .where(eq(cameraChecks.id, check.id))
    .returning());
}
