import Router from '@koa/router';
import { z } from 'zod';
import { audit } from '../audit/service.js';
import { tenantOf, type AppRouter } from '../context.js';
import { auth } from '../http/auth.js';
import { badRequest, HttpError } from '../http/errors.js';
import { bodyOf, queryOf, validate } from '../http/pipeline.js';
import { resolve } from '../references/resolver.js';
import { shopRef } from '../references/shops.js';
import { noEncryptionKey } from '../shops/errors.js';
import { alertsPolicy } from './policy.js';
import { presentAlert, presentSettings } from './presenter.js';
import { mergeRules, RulesInput } from './rules.js';
import { listAlerts, openAlertCount, recipientsOf, saveSettings, settingsOf } from './service.js';

export const AlertsQuery = z.object({
  cursor: z.string().max(100).optional(),
  limit: z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').min(1, 'must be at least 1').max(200, 'must be at most 200').default(50),
  state: z.enum(['open', 'all'], { error: 'must be open or all' }).default('all'),
  site: z.string().trim().max(200).optional(),
});

const webhookUrl = z
  .string()
  .trim()
  .max(2000)
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an http(s) URL without user name or password');

export const AlertSettingsBody = z
  .object({
    rules: RulesInput.optional(),
    /** null: the company's owners and managers. */
    email_to: z.array(z.email('must be e-mail addresses').max(320)).max(50, 'at most 50 addresses').nullable().optional(),
    webhook_url: webhookUrl.nullable().optional(),
    webhook_secret: z.string().min(16, 'must be at least 16 characters').max(256, 'must be at most 256 characters').optional(),
  })
  .strict();

/** The paging cursor: opaque to clients (base64url of the last row's position). */
const encodeCursor = (seq: number) => Buffer.from(`a1:${seq}`).toString('base64url');
function decodeCursor(cursor: string): number {
  const m = /^a1:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw new HttpError(400, 'invalid_cursor', 'cursor: this is not a cursor from GET /api/alerts; drop it and start from the first page.');
  return Number(m[1]);
}

export function alertsRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api/alerts' });

  /** History, newest first; `next_cursor` fetches the older page (null at the end). */
  r.get('/', auth(alertsPolicy.view), validate({ query: AlertsQuery }), async (ctx) => {
    const q = queryOf(ctx, AlertsQuery);
    const db = ctx.deps.store.db;
    const companyId = tenantOf(ctx);
    const siteId = q.site ? (await resolve(db, shopRef, companyId, q.site, 'query')) : null;
    const rows = await listAlerts(db, companyId, { before: q.cursor ? decodeCursor(q.cursor) : null, limit: q.limit, openOnly: q.state === 'open', siteId });
    const page = rows.slice(0, q.limit);
    ctx.body = {
      alerts: page.map(presentAlert),
      next_cursor: rows.length > q.limit ? encodeCursor(page[page.length - 1]!.alert.seq) : null,
      open_count: await openAlertCount(db, companyId),
    };
  });

  r.get('/settings', auth(alertsPolicy.view), async (ctx) => {
    const db = ctx.deps.store.db;
    const s = await settingsOf(db, tenantOf(ctx));
    ctx.body = presentSettings(s, await recipientsOf(db, tenantOf(ctx), { ...s, emailTo: null }));
  });

  /** Rules are merged over the current ones; an omitted field is left alone; webhook_url null removes the webhook. */
  r.patch('/settings', auth(alertsPolicy.configure), validate({ body: AlertSettingsBody }), async (ctx) => {
    const body = bodyOf(ctx, AlertSettingsBody);
    const { store, keys } = ctx.deps;
    const companyId = tenantOf(ctx);
    ctx.body = await store.tx(async () => {
      const current = await settingsOf(store.db, companyId);
      let secret = current.webhookSecret;
      if (body.webhook_secret !== undefined) {
        if (keys.problem) throw noEncryptionKey('keep a webhook secret');
        secret = keys.encrypt(body.webhook_secret);
      }
      const url = body.webhook_url === undefined ? current.webhookUrl : body.webhook_url;
      if (url === null) secret = null;
      else if (secret === null) throw badRequest('webhook_secret: send a secret of at least 16 characters with the webhook URL; deliveries are signed with it');
      const saved = await saveSettings(store.db, companyId, {
              rules: body.rules ? mergeRules(current.rules, body.rules) : current.rules,
              emailTo: body.email_to === undefined ? current.emailTo : body.email_to,
              webhookUrl: url,
              webhookSecret: secret,
            });
      await audit(ctx, { action: 'alerts.settings', target: companyId, detail: { fields: Object.keys(body).filter((k) => k !== 'webhook_secret'), webhook_secret_changed: body.webhook_secret !== undefined } });
      return presentSettings(saved, await recipientsOf(store.db, companyId, { ...saved, emailTo: null }));
    });
  });

  return r;
}
