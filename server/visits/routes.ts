import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { z } from 'zod';
import { tenantOf, type AppRouter, type Ctx } from '../context.js';
import { auditPhotoLinks } from '../customers/service.js';
import { dbVersion, readCache } from '../db/read-cache.js';
import { auth } from '../http/auth.js';
import { badRequest } from '../http/errors.js';
import { queryOf, validate } from '../http/pipeline.js';
import { resolve } from '../references/resolver.js';
import { shopRef } from '../references/shops.js';
import { cursorOr400, feedCursors } from './cursor.js';
import type { FeedItem } from './hub.js';
import { visitsPolicy } from './policy.js';
import { presentArrival, type FeedRow } from './presenter.js';
import { feedAfter, feedTail, headSeq } from './service.js';

const wholeNumber = z.string().trim().regex(/^\d{1,7}$/, 'must be a whole number').transform(Number);

const SiteFilter = {
  site: z.string().max(200).optional(),
  site_id: z.string().max(200).optional(),
};

export const FeedQuery = z.object({
  limit: wholeNumber.optional(),
  cursor: z.string().max(200).optional(),
  ...SiteFilter,
});

export const StreamQuery = z.object({
  cursor: z.string().max(200).optional(),
  ...SiteFilter,
});

/** Rows sent per page while a stream catches up from its cursor. */
const CATCH_UP_PAGE = 500;
/** A stream whose client does not read past this many buffered bytes is closed (it resumes from its last id). */
const MAX_STREAM_BUFFER = 4 * 1024 * 1024;
/** Photo links handed out on a stream are written to the audit log at most this often (one row per flush). */
const STREAM_AUDIT_MS = 1000;

/** `site` / `site_id` (slug or uuid; both may be given if they name the same shop); unknown: 400. */
async function siteFilter(ctx: Ctx, q: { site?: string | undefined; site_id?: string | undefined }): Promise<string | undefined> {
  const db = ctx.deps.store.db;
  const values = [q.site, q.site_id].filter((v): v is string => v !== undefined && v.trim() !== '');
  const ids = [...new Set(await Promise.all(values.map((v) => resolve(db, shopRef, tenantOf(ctx), v, 'query'))))];
  if (ids.length > 1) throw badRequest('site and site_id name different shops; send one of them.');
  return ids[0];
}

function photoLinks(rows: readonly { faceImageId: string | null | undefined; customerId: string | null | undefined; image: { available: boolean } }[]) {
  return rows.filter((r) => r.image.available && r.faceImageId).map((r) => ({ faceImageId: r.faceImageId!, customerId: r.customerId ?? undefined }));
}

/** A feed answer without its `polled_at`: the arrivals as JSON text, the cursor, the photo links to audit. */
interface FeedPage {
  arrivals: string;
  cursor: string;
  links: { faceImageId: string; customerId: string | undefined }[];
}

function sseEvent(id: string, arrival: unknown): string {
  return `id: ${id}\nevent: arrival\ndata: ${JSON.stringify(arrival)}\n\n`;
}

export function visitsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/visits' });

  /**
   * The arrivals feed: ascending rows after the cursor, at most `limit`. Without a cursor: the latest `limit` rows.
   * The answer's cursor is the last row's position, or the caller's own cursor when nothing is new.
   */
  r.get('/', auth(visitsPolicy.view), validate({ query: FeedQuery }), async (ctx) => {
    const q = queryOf(ctx, FeedQuery);
    const { store, config } = ctx.deps;
    const companyId = tenantOf(ctx);
    const max = config.FOOTFALL_VISITS_LIMIT_MAX;
    const limit = q.limit ?? config.FOOTFALL_VISITS_LIMIT_DEFAULT;
    if (limit < 1 || limit > max) throw badRequest(`limit: must be from 1 to ${max}`);
    const shopId = await siteFilter(ctx, q);
    const given = q.cursor?.trim() ? q.cursor.trim() : undefined;
    const cursors = feedCursors(ctx.deps.keys);
    const after = given === undefined ? undefined : cursorOr400(cursors, companyId, given);
    const polledAt = new Date().toISOString();
    // The page read from the database, or the same page read earlier if nothing it reads has changed since.
    const cache = readCache<FeedPage>(store.db, 'visits-feed', 512);
    const key = `${companyId}|${shopId ?? ''}|${limit}|${given ?? ''}`;
    const version = dbVersion(store.db);
    let page = cache.get(key, version);
    if (!page) {
      let rows: FeedRow[];
      let cursor: string;
      if (after !== undefined) {
        rows = await feedAfter(store, companyId, after, limit, shopId);
        cursor = rows.length > 0 ? cursors.encode(companyId, rows[rows.length - 1]!.seq) : given!;
      } else {
        rows = await feedTail(store, companyId, limit, shopId);
        cursor = cursors.encode(companyId, rows.length > 0 ? rows[rows.length - 1]!.seq : await headSeq(store.db, companyId));
      }
      const arrivals = rows.map((row) => presentArrival(row, config));
      page = { arrivals: JSON.stringify(arrivals), cursor, links: photoLinks(rows.map((row, i) => ({ ...row, image: arrivals[i]!.image }))) };
      cache.set(key, version, page);
    }
    await auditPhotoLinks(ctx, 'GET /api/visits', page.links);
    // JSON.stringify({ arrivals, cursor, polled_at }) with the arrivals already serialised: the same bytes.
    ctx.type = 'json';
    ctx.body = `{"arrivals":${page.arrivals},"cursor":${JSON.stringify(page.cursor)},"polled_at":${JSON.stringify(polledAt)}}`;
  });

  /**
   * Server-sent events: `event: arrival`, `id:` the row's cursor, `data:` the Arrival. Resumes after `Last-Event-ID`
   * (or `cursor` when the header is absent); without either, only arrivals from now on. `: keep-alive` comments every
   * FOOTFALL_SSE_KEEPALIVE_S seconds.
   */
  r.get('/stream', auth(visitsPolicy.view), validate({ query: StreamQuery }), async (ctx) => {
    const q = queryOf(ctx, StreamQuery);
    const { store, config, arrivals, log } = ctx.deps;
    const companyId = tenantOf(ctx);
    const shopId = await siteFilter(ctx, q);
    const header = ctx.get('Last-Event-ID').trim();
    const given = header !== '' ? header : q.cursor?.trim() ? q.cursor.trim() : undefined;
    const cursors = feedCursors(ctx.deps.keys);
    const after = given === undefined ? undefined : cursorOr400(cursors, companyId, given);

    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.req.socket.setKeepAlive(true);
    const stream = new PassThrough();
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-store, no-transform');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = stream;

    let lastSent = after ?? (await headSeq(store.db, companyId));
    let catchingUp = after !== undefined;
    let buffered: FeedItem[] = [];
    let links: { faceImageId: string; customerId: string | undefined }[] = [];
    let closed = false;
    const waiters: (() => void)[] = [];

    const flushAudit = () => {
      if (links.length === 0) return;
      const out = links;
      links = [];
      auditPhotoLinks(ctx, 'GET /api/visits/stream', out).catch((err: unknown) => log.error({ err }, 'photo link audit failed'));
    };
    const send = (items: readonly { seq: number; shopId: string; arrival: FeedItem['arrival']; faceImageId: string | undefined; customerId: string | undefined }[]) => {
      if (closed) return;
      let chunk = '';
      for (const it of items) {
        if (it.seq <= lastSent || (shopId !== undefined && it.shopId !== shopId)) continue;
        chunk += sseEvent(cursors.encode(companyId, it.seq), it.arrival);
        lastSent = it.seq;
        if (it.arrival.image.available && it.faceImageId) links.push({ faceImageId: it.faceImageId, customerId: it.customerId });
      }
      if (chunk !== '') stream.write(chunk);
      if (stream.writableLength > MAX_STREAM_BUFFER) {
        log.warn({ company_id: companyId }, 'arrival stream client too slow; closing it (it resumes from its last event id)');
        finish();
      }
    };

    const unsubscribe = arrivals.subscribe(
      companyId,
      (items) => {
        if (catchingUp) buffered.push(...items);
        else send(items);
      },
      () => finish(),
    );
    const keepAlive = setInterval(() => {
      if (!closed) stream.write(': keep-alive\n\n');
    }, config.FOOTFALL_SSE_KEEPALIVE_S * 1000);
    const auditTimer = setInterval(flushAudit, STREAM_AUDIT_MS);
    function finish() {
      if (closed) return;
      closed = true;
      unsubscribe();
      clearInterval(keepAlive);
      clearInterval(auditTimer);
      flushAudit();
      for (const w of waiters.splice(0)) w();
      if (!stream.writableEnded) stream.end();
    }
    ctx.res.once('close', finish);
    stream.once('error', finish);

    stream.write('retry: 2000\n\n');
    if (!catchingUp) return;

    // Catch up from the database page by page; live rows wait in `buffered` meanwhile. The last page is read in the
    // same synchronous step that switches to live, so no committed row falls between the two.
    const catchUp = async () => {
      for (;;) {
        if (closed) return;
        const rows = await feedAfter(store, companyId, lastSent, CATCH_UP_PAGE, shopId);
        send(rows.map((row) => ({ seq: row.seq, shopId: row.shopId, arrival: presentArrival(row, config), faceImageId: row.faceImageId ?? undefined, customerId: row.customerId ?? undefined })));
        if (rows.length < CATCH_UP_PAGE) {
          catchingUp = false;
          const pending = buffered;
          buffered = [];
          send(pending);
          return;
        }
        if (stream.writableNeedDrain) {
          await new Promise<void>((res) => {
            waiters.push(res);
            stream.once('drain', () => res());
          });
        }
      }
    };
    catchUp().catch((err: unknown) => {
      log.error({ err }, 'arrival stream catch-up failed');
      finish();
    });
  });

  return r;
}
