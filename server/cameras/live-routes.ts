import { PassThrough } from 'node:stream';
import { tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auth } from '../http/auth.js';
import { notFound } from '../http/errors.js';
import { shopAddress } from '../shops/notices.js';
import { shopInPath } from '../shops/routes.js';
import type { LiveTarget } from './live.js';
import { camerasPolicy } from './policy.js';
import { listCameras, type CameraView } from './service.js';

/** Frames queued for a slow viewer beyond this are dropped rather than buffered. */
const MAX_VIEWER_BUFFER = 2 * 1024 * 1024;
const KEEP_ALIVE_MS = 15_000;
/** Cameras one shop-wide live stream carries at most (a 25-tile grid). */
export const MAX_GRID_CAMERAS = 25;

/**
 * One server-sent event stream relaying live frames of `targets`: `waiting` at once (data `waiting`), `frame` per
 * frame (data from `frameData`), `end` at the view's time limit or shutdown. Closing the connection stops the
 * uploads. A slow viewer loses frames rather than buffering them.
 */
function openLiveStream(ctx: Ctx, targets: LiveTarget[], waiting: string, frameData: (target: LiveTarget, b64: string) => string): void {
  const { live, config } = ctx.deps;
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.req.socket.setKeepAlive(true);
  const stream = new PassThrough();
  ctx.status = 200;
  ctx.body = stream;
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-store, no-transform');
  ctx.set('X-Accel-Buffering', 'no');

  // Filled in below; finish() may run before any of them exists (a client gone at once).
  const session: { stops: (() => void)[]; keepAlive?: NodeJS.Timeout; cap?: NodeJS.Timeout } = { stops: [] };
  const finish = (last?: string) => {
    for (const stop of session.stops) stop();
    clearInterval(session.keepAlive);
    clearTimeout(session.cap);
    if (!stream.writableEnded) {
      if (last) stream.write(last);
      stream.end();
    }
  };
  stream.write(`event: waiting\ndata: ${waiting}\n\n`);
  for (const target of targets) {
    session.stops.push(
      live.watch(target, {
        frame: (b64) => {
          if (!stream.writableEnded && stream.writableLength < MAX_VIEWER_BUFFER) stream.write(`event: frame\ndata: ${frameData(target, b64)}\n\n`);
        },
        end: () => finish('event: end\ndata: {"reason":"shutdown"}\n\n'),
      }),
    );
  }
  session.keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  session.cap = setTimeout(() => finish('event: end\ndata: {"reason":"max_duration"}\n\n'), config.FOOTFALL_LIVE_VIEW_MAX_S * 1000);
  ctx.res.once('close', () => finish());
  stream.once('error', () => finish());
}

/** The camera's last reported state in a `waiting` event (additive): `connected` null before the shop PC reported it. */
const stateOf = (v: CameraView) => ({ connected: v.camera.connected, connection_reason: v.camera.connectionReason });

/**
 * Live view: one camera (`GET /api/cameras/{id}/live`, data of `frame` is the base64 JPEG) and every switched-on
 * camera of a shop in one stream (`GET /api/sites/{site}/live`, data of `frame` is `{"camera","camera_id","jpeg"}`):
 * a browser opens at most six connections to a host over HTTP/1.1, so a grid of one stream per camera stalled past
 * five cameras (docs/console.md).
 */
export function liveRoutes(r: AppRouter, cameraInPath: (ctx: Ctx) => Promise<CameraView>): void {
  r.get('/cameras/:id/live', auth(camerasPolicy.view), async (ctx) => {
    const view = await cameraInPath(ctx);
    const address = await shopAddress(ctx.deps.store.db, view.shop.id);
    if (!address) throw notFound('That camera');
    // Additive: what the shop PC last reported about the camera, so a viewer of a camera known to be down learns why at once.
    openLiveStream(ctx, [{ cameraUuid: view.camera.id, cameraId: view.camera.cameraId, shopId: view.shop.id, address }], JSON.stringify(stateOf(view)), (_t, b64) => b64);
  });

  r.get('/sites/:site/live', auth(camerasPolicy.view), async (ctx) => {
    const shop = await shopInPath(ctx);
    const db = ctx.deps.store.db;
    const address = await shopAddress(db, shop.id);
    if (!address) throw notFound('That shop');
    const cameras = (await listCameras(db, tenantOf(ctx)))
      .filter((v) => v.shop.id === shop.id && v.camera.enabled)
      .slice(0, MAX_GRID_CAMERAS);
    const targets: LiveTarget[] = cameras.map((v) => ({ cameraUuid: v.camera.id, cameraId: v.camera.cameraId, shopId: shop.id, address }));
    const waiting = JSON.stringify({ cameras: cameras.map((v) => ({ camera: v.camera.id, camera_id: v.camera.cameraId, ...stateOf(v) })) });
    openLiveStream(ctx, targets, waiting, (t, b64) => `{"camera":"${t.cameraUuid}","camera_id":${JSON.stringify(t.cameraId)},"jpeg":"${b64}"}`);
  });
}
