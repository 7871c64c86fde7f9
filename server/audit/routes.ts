import Router from '@koa/router';
import { z } from 'zod';
import { tenantOf, type AppRouter } from '../context.js';
import { auth } from '../http/auth.js';
import { badRequest } from '../http/errors.js';
import { queryOf, validate } from '../http/pipeline.js';
import { customerRef as customerRefKind } from '../references/customers.js';
import { resolve } from '../references/resolver.js';
import { feedCursors, invalidCursor } from '../visits/cursor.js';
import { auditPolicy } from './policy.js';
import { presentAuditEntry } from './presenter.js';
import { listAudit } from './query.js';

const timestamp = z
  .string()
  .trim()
  .refine((v) => !Number.isNaN(Date.parse(v)) && /^\d{4}-\d{2}-\d{2}/.test(v), 'must be an RFC 3339 timestamp or a date (YYYY-MM-DD)')
  .transform((v) => new Date(v).toISOString());

export const AuditQuery = z.object({
  limit: z.string().trim().regex(/^\d{1,4}$/, 'must be a whole number from 1 to 500').transform(Number).refine((n) => n >= 1 && n <= 500, 'must be from 1 to 500').optional(),
  cursor: z.string().max(200).optional(),
  /** A member's id or email address. */
  actor: z.string().trim().min(1).max(254).optional(),
  /** An action (`customer.view`) or a family of them ending in a dot (`customer.`). */
  action: z.string().trim().regex(/^[a-z_.]{1,64}$/, 'must be an action name such as customer.view, or a family such as customer.').optional(),
  /** A customer: id or V-number. */
  customer: z.string().trim().min(1).max(100).optional(),
  from: timestamp.optional(),
  to: timestamp.optional(),
});

/** The audit cursor: the feed's sealed cursor, keyed to this company's audit list (it opens nowhere else). */
const cursorScope = (companyId: string) => `audit:${companyId}`;

export function auditRoutes(): AppRouter {
  const r: AppRouter = new Router({ prefix: '/api' });

  /**
   * The company's audit trail, newest first (docs/privacy.md, "The audit trail"). `cursor` is null on the last page;
   * otherwise send it back for the next (older) page with the same filters.
   */
  r.get('/audit', auth(auditPolicy.read), validate({ query: AuditQuery }), async (ctx) => {
    const q = queryOf(ctx, AuditQuery);
    const companyId = tenantOf(ctx);
    const { store, keys } = ctx.deps;
    if (q.from && q.to && q.from > q.to) throw badRequest('from: must not be after to');
    const cursors = feedCursors(keys);
    let before: number | undefined;
    if (q.cursor?.trim()) {
      before = cursors.decode(cursorScope(companyId), q.cursor.trim());
      if (before === undefined) throw invalidCursor();
    }
    const customerId = q.customer ? (await resolve(store.db, customerRefKind, companyId, q.customer, 'query')) : undefined;
    const { rows, more } = await listAudit(store.db, { companyId, actor: q.actor, action: q.action, customerId, from: q.from, to: q.to, before, limit: q.limit ?? 100 });
    ctx.body = { entries: rows.map(presentAuditEntry), cursor: more ? cursors.encode(cursorScope(companyId), rows[rows.length - 1]!.id) : null };
  });

  return r;
}
