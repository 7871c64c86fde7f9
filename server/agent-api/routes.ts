import Router from '@koa/router';
import { eq } from 'drizzle-orm';
import { CameraStateReport, CheckAnswer, EnrolRequest, LIMITS, type EnrolResponse } from '../../shared/agent-api.js';
import { shopPrefix } from '../../shared/topics.js';
import { writeAudit } from '../audit/service.js';
import { newToken, hashToken } from '../auth/tokens.js';
import { answerCheck, claimNextCheck, shopCheck } from '../cameras/checks.js';
import { findShopCamera, recordCameraState, recordSnapshot, shopCameras } from '../cameras/service.js';
import { writeSnapshot } from '../cameras/snapshots.js';
import type { AppRouter, Ctx } from '../context.js';
import { HttpError, badRequest } from '../http/errors.js';
import { bodyOf, validate } from '../http/pipeline.js';
import { isUuid } from '../references/resolver.js';
import { mapInfraErrors, requireKey } from '../shops/errors.js';
import { getShop, spendEnrolmentCode } from '../shops/service.js';
import { agentAuth, agentOf } from './auth.js';
import { storeUploadedFace } from '../customers/faces.js';
import { presentCameraList, presentIdentity } from './presenter.js';
import { recognitionOf } from '../privacy/service.js';
import { checkJpeg, looksLikeJpeg, readJpegBody } from './raw-body.js';
import { one } from '../db/query.js';
import { companies, shops } from '../db/tables.js';

const invalidCode = () =>
  new HttpError(404, 'invalid_code', 'This enrolment code is unknown, expired or already used. Ask a manager for a new one (Shops, then Enrolment code).');

/** A present camera of the calling shop PC's shop, by uuid or camera_id; 404 otherwise. */
async function agentCamera(ctx: Ctx) {
  const camera = await findShopCamera(ctx.deps.store.db, agentOf(ctx).shopId, String(ctx.params.camera));
  if (!camera) throw new HttpError(404, 'not_found', 'This shop has no such camera (it may have been removed): pull the camera list again.');
  return camera;
}

async function companyOf(ctx: Ctx, companyId: string) {
  const company = await one(ctx.deps.store.db.select({ slug: companies.slug, name: companies.name }).from(companies).where(eq(companies.id, companyId)));
  if (!company) throw new Error('company of an enrolled shop not found');
  return company;
}

/** The ten shop-PC routes (shared/agent-api.ts, docs/agent-protocol.md). */
export function agentRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/agent' });

  // 1. Enrolment: a single-use code -> this PC's token and a fresh broker secret. Any earlier PC is cut off.
  r.post('/enrol', validate({ body: EnrolRequest }), async (ctx) => {
    const body = bodyOf(ctx, EnrolRequest);
    const { store, keys, shopLogins } = ctx.deps;
    requireKey(ctx, 'enrol shop PCs');
    const token = newToken('agent');
    let result: { shopId: string; secret: string; previous: boolean };
    try {
      const { secret, sealed } = shopLogins.newSecret();
      result = await store.tx(async () => {
        const spent = await spendEnrolmentCode(store.db, keys, body.code);
        if (!spent) throw invalidCode();
        const { code, shop } = spent;
        await store.db
          .update(shops)
          .set({
            agentTokenHash: hashToken(token),
            enrolledAt: new Date().toISOString(),
            agentHostname: body.hostname ?? null,
            brokerSecret: sealed,
            ...(body.agent_version ? { agentVersion: body.agent_version } : {}),
          })
          .where(eq(shops.id, shop.id));
        await writeAudit(store, {
          action: 'shop.enrol',
          companyId: shop.companyId,
          target: shop.id,
          detail: { code_id: code.id, code_requested_by: code.requestedByEmail, hostname: body.hostname ?? null, replaced_previous: shop.agentTokenHash !== null },
          requestId: ctx.state.requestId,
        });
        return { shopId: shop.id, secret, previous: shop.agentTokenHash !== null };
      });
    } catch (err) {
      throw mapInfraErrors(err, 'enrol shop PCs');
    }
    const shop = (await getShop(store.db, result.shopId))!;
    const company = await companyOf(ctx, shop.companyId);
    // The new secret is the login now (an external broker is told); the old one no longer authenticates, and any
    // connection still using it (the previous PC, if any) is ended.
    await shopLogins.activate({ username: shop.brokerUsername, password: result.secret, prefix: shopPrefix(company.slug, shop.slug) });
    const identity = presentIdentity(ctx.deps, shop, company);
    const answer: EnrolResponse = { ...identity, token, broker: { ...identity.broker, password: result.secret } };
    ctx.status = 201;
    ctx.body = answer;
  });

  // 2. Who am I.
  r.get('/me', agentAuth(), async (ctx) => {
    const agent = agentOf(ctx);
    const shop = (await getShop(ctx.deps.store.db, agent.shopId))!;
    ctx.body = presentIdentity(ctx.deps, shop, await companyOf(ctx, agent.companyId));
  });

  // 3. Camera list pull, tombstones included.
  r.get('/cameras', agentAuth(), async (ctx) => {
    const rows = await shopCameras(ctx.deps.store.db, agentOf(ctx).shopId);
    if (rows.some((c) => c.password !== null && !c.deletedAt)) requireKey(ctx, 'hand out camera passwords');
    try {
      ctx.body = { ...presentCameraList(rows, (sealed) => ctx.deps.keys.decrypt(sealed)), recognition: await recognitionOf(ctx.deps.store.db, agentOf(ctx).companyId) };
    } catch (err) {
      throw mapInfraErrors(err, 'hand out camera passwords');
    }
  });

  // 4. Camera state report.
  r.post('/cameras/state', agentAuth(), validate({ body: CameraStateReport }), async (ctx) => {
    const body = bodyOf(ctx, CameraStateReport);
    const { store } = ctx.deps;
    const shopId = agentOf(ctx).shopId;
    ctx.body = await store.tx(async () => {
      let updated = 0;
      const unknown: string[] = [];
      for (const report of body.cameras) {
        const camera = await findShopCamera(store.db, shopId, report.camera);
        if (!camera) {
          unknown.push(report.camera);
          continue;
        }
        await recordCameraState(store.db, camera, report.connected, report.reason);
        updated++;
      }
      return { updated, unknown };
    });
  });

  // 5. Snapshot upload (image/jpeg).
  r.put('/cameras/:camera/snapshot', agentAuth(), async (ctx) => {
    const camera = await agentCamera(ctx);
    const jpeg = await readJpegBody(ctx, LIMITS.snapshotBytes);
    await checkJpeg(jpeg);
    await writeSnapshot(ctx.deps, camera.companyId, camera.id, jpeg);
    const at = new Date().toISOString();
    await recordSnapshot(ctx.deps.store.db, camera.id, at);
    ctx.body = { snapshot_at: at };
  });

  // 6. Face-image upload (image/jpeg), before the visit that names it.
  r.post('/faces', agentAuth(), async (ctx) => {
    const { config } = ctx.deps;
    if (config.FOOTFALL_IMAGES === 'off') {
      throw new HttpError(501, 'images_disabled', 'This deployment stores no face images: send visits without face_image_id and stop uploading faces.');
    }
    const jpeg = await readJpegBody(ctx, LIMITS.faceBytes);
    await checkJpeg(jpeg);
    const id = await storeUploadedFace(ctx.deps, agentOf(ctx), jpeg);
    ctx.status = 201;
    ctx.body = { face_image_id: id };
  });

  // 7. Check-job claim: the oldest open check of this shop, or job null.
  r.post('/checks/claim', agentAuth(), async (ctx) => {
    const { store } = ctx.deps;
    const claimed = await store.tx(async () => await claimNextCheck(store.db, agentOf(ctx).shopId));
    ctx.body = {
      job: claimed
        ? {
            check_id: claimed.check.id,
            camera: claimed.camera.id,
            camera_id: claimed.camera.cameraId,
            kind: claimed.check.kind,
            seconds: claimed.check.seconds,
            requested_at: claimed.check.requestedAt,
            release_at: claimed.check.releaseAt,
          }
        : null,
    };
  });

  // 8. Check answer.
  r.post('/checks/:check/answer', agentAuth(), validate({ body: CheckAnswer }), async (ctx) => {
    const body = bodyOf(ctx, CheckAnswer);
    const { store } = ctx.deps;
    const shopId = agentOf(ctx).shopId;
    const checkId = String(ctx.params.check);
    if (!isUuid(checkId)) throw new HttpError(404, 'not_found', 'This shop has no such check.');
    const before = await shopCheck(store.db, shopId, checkId.toLowerCase());
    let image: Buffer | undefined;
    if (body.image) {
      image = Buffer.from(body.image, 'base64');
      if (image.length > LIMITS.checkImageBytes) throw badRequest(`image: at most ${LIMITS.checkImageBytes / 1024} KiB`);
      await checkJpeg(image).catch(() => {
        throw badRequest('image: must be a base64 JPEG picture');
      });
    }
    const check = await store.tx(async () => await answerCheck(store.db, await shopCheck(store.db, shopId, before.id), body, image !== undefined));
    if (image) {
      await writeSnapshot(ctx.deps, check.companyId, check.cameraUuid, image);
      await recordSnapshot(store.db, check.cameraUuid, new Date().toISOString());
    }
    ctx.body = { state: 'done', ok: body.verdict === 'good', verdict: body.verdict };
  });

  // 9. Live demands (polling twin of the MQTT notice).
  r.get('/live', agentAuth(), (ctx) => {
    ctx.body = { cameras: ctx.deps.live.demandsOf(agentOf(ctx).shopId) };
  });

  // 10. Live frame upload (image/jpeg); the answer says whether anyone still watches.
  r.post('/live/:camera/frames', agentAuth(), async (ctx) => {
    const camera = await agentCamera(ctx);
    const jpeg = await readJpegBody(ctx, LIMITS.frameBytes);
    if (!looksLikeJpeg(jpeg)) throw badRequest('The body is not a JPEG picture.');
    ctx.body = ctx.deps.live.frame(camera.id, jpeg);
  });

  return r;
}
