import Router from '@koa/router';
import { z } from 'zod';
import { DEFAULT_TUNING, Tuning } from '../../shared/agent-api.js';
import { CameraId } from '../../shared/messages.js';
import { audit } from '../audit/service.js';
import { tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { HttpError, notFound } from '../http/errors.js';
import { bodyOf, validate } from '../http/pipeline.js';
import { cameraRef } from '../references/cameras.js';
import { resolve } from '../references/resolver.js';
import { mapInfraErrors, requireKey } from '../shops/errors.js';
import { notifyShop, shopAddress } from '../shops/notices.js';
import { shopInPath } from '../shops/routes.js';
import { announceCheck, startCheck } from './check-request.js';
import { liveRoutes } from './live-routes.js';
import { companyCounting } from './counting.js';
import { camerasPolicy } from './policy.js';
import { presentCamera, presentCheck } from './presenter.js';
import { DEFAULTS, createCamera, listCameras, mergeTuning, tombstoneCamera, updateCamera, viewCamera, type CameraFields, type CameraView } from './service.js';
import { readSnapshot, removeSnapshot } from './snapshots.js';

/** A host name or IP address: no scheme, no path, no spaces. */
const Host = z
  .string()
  .trim()
  .min(1, 'is required')
  .max(253)
  .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+)$/, 'must be a host name or IP address, without scheme, port or path');

const fields = {
  label: z.string().max(100),
  host: Host,
  port: z.number().int('must be a whole number').min(1).max(65535),
  path: z
    .string()
    .max(1024)
    .regex(/^[^\s\p{C}]*$/u, 'must not contain spaces or control characters'),
  username: z.string().max(128),
  password: z.string().max(256),
  max_width: z.number().int('must be a whole number').min(160).max(7680),
  enabled: z.boolean(),
  tuning: Tuning.partial().strict(),
};

export const CreateCameraBody = z.strictObject({
  camera_id: CameraId,
  host: fields.host,
  label: fields.label.optional(),
  port: fields.port.optional(),
  path: fields.path.optional(),
  username: fields.username.optional(),
  password: fields.password.optional(),
  max_width: fields.max_width.optional(),
  enabled: fields.enabled.optional(),
  tuning: fields.tuning.optional(),
});

export const PatchCameraBody = z.strictObject({
  camera_id: z.unknown().refine((v) => v === undefined, "cannot be changed; remove the camera and add it again under the new camera_id").optional(),
  label: fields.label.optional(),
  host: fields.host.optional(),
  port: fields.port.optional(),
  path: fields.path.optional(),
  username: fields.username.optional(),
  password: fields.password.optional(),
  max_width: fields.max_width.optional(),
  enabled: fields.enabled.optional(),
  tuning: fields.tuning.optional(),
});

export const CheckBody = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('connection') }),
    z.strictObject({ kind: z.literal('placement'), seconds: z.number().int('must be a whole number').min(5, 'must be at least 5').max(120, 'must be at most 120') }),
  ],
  { error: 'kind: must be "connection", or "placement" with "seconds"' },
);

/** The camera named in the path (uuid or an unambiguous camera_id), in the caller's company; 404 otherwise. */
async function cameraInPath(ctx: Ctx): Promise<CameraView> {
  const db = ctx.deps.store.db;
  const id = await resolve(db, cameraRef, tenantOf(ctx), String(ctx.params.id), 'path');
  const view = await viewCamera(db, id);
  if (!view) throw notFound('That camera');
  return view;
}

/** The sealed password, '' meaning none. Needs the server key. */
function sealPassword(ctx: Ctx, password: string): string | null {
  if (password === '') return null;
  requireKey(ctx, 'store camera passwords');
  try {
    return ctx.deps.keys.encrypt(password);
  } catch (err) {
    throw mapInfraErrors(err, 'store camera passwords');
  }
}

async function camerasChanged(ctx: Ctx, shopId: string): Promise<void> {
  const address = await shopAddress(ctx.deps.store.db, shopId);
  if (address) notifyShop(ctx.deps.broker, ctx.log, address, 'cameras', { kind: 'cameras_changed', at: new Date().toISOString() });
}

export function camerasRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api' });

  r.get('/cameras', auth(camerasPolicy.view), async (ctx) => {
    const now = Date.now();
    const db = ctx.deps.store.db;
    const { health } = await companyCounting(db, ctx.deps.config, tenantOf(ctx), undefined, now);
    ctx.body = (await listCameras(db, tenantOf(ctx))).map((v) => presentCamera(v, now, health));
  });

  r.post('/sites/:site/cameras', auth(camerasPolicy.manage), validate({ body: CreateCameraBody }), async (ctx) => {
    const body = bodyOf(ctx, CreateCameraBody);
    const { store } = ctx.deps;
    const password = sealPassword(ctx, body.password ?? '');
    const view = await store.tx(async () => {
      const shop = await shopInPath(ctx);
      const camera = await createCamera(store.db, {
              companyId: shop.companyId,
              shopId: shop.id,
              cameraId: body.camera_id,
              label: body.label ?? body.camera_id,
              host: body.host,
              port: body.port ?? DEFAULTS.port,
              path: body.path ?? DEFAULTS.path,
              username: body.username ?? DEFAULTS.username,
              password,
              maxWidth: body.max_width ?? DEFAULTS.maxWidth,
              tuning: mergeTuning(DEFAULT_TUNING, body.tuning),
              enabled: body.enabled ?? true,
            });
      await audit(ctx, { action: 'camera.create', target: camera.id, detail: { camera_id: camera.cameraId, site: shop.slug } });
      return (await viewCamera(store.db, camera.id))!;
    });
    await camerasChanged(ctx, view.shop.id);
    ctx.status = 201;
    ctx.body = presentCamera(view, Date.now(), (await companyCounting(store.db, ctx.deps.config, view.camera.companyId, view.shop.id)).health);
  });

  r.patch('/cameras/:id', auth(camerasPolicy.manage), validate({ body: PatchCameraBody }), async (ctx) => {
    const body = bodyOf(ctx, PatchCameraBody);
    const { store } = ctx.deps;
    const password = body.password === undefined ? undefined : sealPassword(ctx, body.password);
    const view = await store.tx(async () => {
      const before = await cameraInPath(ctx);
      const c = before.camera;
      const changes: Partial<CameraFields> = {};
      if (body.label !== undefined) changes.label = body.label;
      if (body.host !== undefined) changes.host = body.host;
      if (body.port !== undefined) changes.port = body.port;
      if (body.path !== undefined) changes.path = body.path;
      if (body.username !== undefined) changes.username = body.username;
      if (password !== undefined) changes.password = password;
      if (body.max_width !== undefined) changes.maxWidth = body.max_width;
      if (body.enabled !== undefined) changes.enabled = body.enabled;
      if (body.tuning !== undefined) changes.tuning = mergeTuning(c.tuning, body.tuning);
      await updateCamera(store.db, c, changes);
      await audit(ctx, { action: 'camera.update', target: c.id, detail: { camera_id: c.cameraId, fields: Object.keys(body).filter((k) => k !== 'camera_id') } });
      return (await viewCamera(store.db, c.id))!;
    });
    await camerasChanged(ctx, view.shop.id);
    ctx.body = presentCamera(view, Date.now(), (await companyCounting(store.db, ctx.deps.config, view.camera.companyId, view.shop.id)).health);
  });

  r.delete('/cameras/:id', auth(camerasPolicy.manage), async (ctx) => {
    const { store } = ctx.deps;
    const view = await store.tx(async () => {
      const found = await cameraInPath(ctx);
      await tombstoneCamera(store.db, found.camera);
      await audit(ctx, { action: 'camera.remove', target: found.camera.id, detail: { camera_id: found.camera.cameraId, site: found.shop.slug } });
      return found;
    });
    await camerasChanged(ctx, view.shop.id);
    await removeSnapshot(ctx.deps, view.camera.companyId, view.camera.id).catch((err: unknown) => ctx.log.warn({ err }, 'snapshot of a removed camera not deleted'));
    ctx.body = { deleted: view.camera.id, camera_id: view.camera.cameraId, site_id: view.shop.id };
  });

  r.post('/cameras/:id/check', auth(camerasPolicy.check), validate({ body: CheckBody }), async (ctx) => {
    const body = bodyOf(ctx, CheckBody);
    const { view, check } = await ctx.deps.store.tx(async () => {
      const found = await cameraInPath(ctx);
      return { view: found, check: await startCheck(ctx, found, { kind: body.kind, seconds: body.kind === 'placement' ? body.seconds : null }) };
    });
    await announceCheck(ctx, view, check);
    ctx.status = 202;
    ctx.body = presentCheck({ ...view, check });
  });

  r.get('/cameras/:id/snapshot.jpg', auth(camerasPolicy.view), async (ctx) => {
    const view = await cameraInPath(ctx);
    const jpeg = await readSnapshot(ctx.deps, view.camera.companyId, view.camera.id);
    if (!jpeg) throw new HttpError(404, 'no_image', 'There is no picture from this camera yet: the shop PC sends one about once a minute while the camera is connected.');
    ctx.set('Cache-Control', 'private, no-store');
    if (view.camera.snapshotAt) ctx.set('Last-Modified', new Date(view.camera.snapshotAt).toUTCString());
    ctx.type = 'image/jpeg';
    ctx.body = jpeg;
  });

  liveRoutes(r, cameraInPath);

  return r;
}
