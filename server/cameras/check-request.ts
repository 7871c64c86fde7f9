/**
 * Asking a shop PC to check a camera, as POST /api/cameras/{id}/check and the assistant's camera_check tool both
 * do: the request is recorded and audited inside the caller's transaction (startCheck), and the shop PC is told
 * once it is committed (announceCheck), so it never claims a check that a rollback took back.
 */
import type { CheckKind } from '../../shared/messages.js';
import { audit } from '../audit/service.js';
import { actorOf, type Ctx } from '../context.js';
import { notifyShop, shopAddress } from '../shops/notices.js';
import { requestCheck } from './checks.js';
import type { CameraView, CheckRow } from './service.js';

/** Records and audits a check request on `found` (409 while one runs). Call inside a transaction. */
export async function startCheck(ctx: Ctx, found: CameraView, input: { kind: CheckKind; seconds: number | null; via?: string }): Promise<CheckRow> {
  const check = await requestCheck(ctx.deps.store.db, found.camera, found.check, {
      kind: input.kind,
      seconds: input.seconds,
      requestedBy: actorOf(ctx).userId,
      releaseS: ctx.deps.config.FOOTFALL_CHECK_RELEASE_S,
    });
  await audit(ctx, {
    action: 'camera.check',
    target: found.camera.id,
    detail: { check_id: check.id, kind: check.kind, seconds: check.seconds, ...(input.via ? { via: input.via } : {}) },
  });
  return check;
}

/** Tells the camera's shop PC about a committed check request (nothing when the shop has no broker login). */
export async function announceCheck(ctx: Ctx, view: CameraView, check: CheckRow): Promise<void> {
  const { store, broker } = ctx.deps;
  const address = await shopAddress(store.db, view.shop.id);
  if (!address) return;
  notifyShop(broker, ctx.log, address, 'check', {
    kind: 'check_requested',
    check_id: check.id,
    camera: view.camera.id,
    camera_id: view.camera.cameraId,
    check_kind: check.kind,
    seconds: check.seconds,
    release_at: check.releaseAt,
    at: check.requestedAt,
  });
}
