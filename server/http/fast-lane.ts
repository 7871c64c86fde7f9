import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Actor, Deps } from '../context.js';
import type { Rule } from '../policy.js';
import { authenticate, bearer } from './auth.js';
import { HttpError } from './errors.js';
import { logAccess, logMs, privateAnswerHeaders, requestIdOf } from './middleware.js';

/**
 * A GET route the fast lane may answer: its whole path, its rule, and its 200 answer. The Koa route at the same path
 * answers from this same definition (`auth(route.rule)`, then `route.answer`), so the two lanes cannot say different
 * things; `answer` must not write anything (a request the lane gives up on is answered again by Koa).
 */
export interface FastRoute {
  /** The Koa route's path, e.g. `/api/auth/me` (also its metrics label). Only this exact path takes the lane. */
  path: string;
  rule: Rule;
  /** The 200 answer's JSON body. */
  answer(deps: Deps, actor: Actor): unknown;
}

/**
 * The fast lane (docs/decisions.md, "A fast lane beside Koa"): plain `node:http` answers the 200 of a few hot GETs
 * without building a Koa context or running the middleware chain, which on this hardware cost GET /api/auth/me three
 * quarters of its time. It runs the same checks and writes the same bytes, access-log line and metrics sample as
 * Koa would; anything it is not sure of goes to Koa untouched:
 * - any method but GET, any other path, or the path spelt differently (a trailing slash, other case, escapes);
 * - any refusal (no token, an unknown, expired or revoked one, a role the rule does not allow): authenticate() is
 *   read-only but for touchSession (at most once a minute, the same write Koa's run would make), so Koa runs it again
 *   and answers with its own error envelope;
 * - an answer that throws.
 * Headers are the ones Koa sends, named and ordered as Koa sets them: X-Request-Id, Cache-Control,
 * X-Content-Type-Options (privateAnswerHeaders), Content-Type, Content-Length.
 */
export function withFastLane(deps: Deps, routes: readonly FastRoute[], koa: RequestListener): RequestListener {
  const byPath = new Map(routes.map((r) => [r.path, r]));
  /** Answers the request and says so, or leaves it untouched for Koa. */
  const answered = async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const route = byPath.get(q < 0 ? url : url.slice(0, q));
    if (!route) return false;
    const started = process.hrtime.bigint();
    const actor = await authenticate(deps.store.db, bearer(req.headers.authorization), route.rule, 'GET', route.path);
    if (actor instanceof HttpError) return false;
    let body: string;
    try {
      body = JSON.stringify(route.answer(deps, actor));
    } catch {
      return false;
    }
    const requestId = requestIdOf(req.headers['x-request-id'] as string | undefined);
    res.setHeader('X-Request-Id', requestId);
    for (const [k, v] of privateAnswerHeaders) res.setHeader(k, v);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.statusCode = 200;
    const ns = Number(process.hrtime.bigint() - started);
    res.end(body);
    logAccess(deps.log, { req_id: requestId, user_id: actor.userId, method: 'GET', path: route.path, status: 200, ms: logMs(ns) });
    deps.metrics?.request('GET', route.path, 200, ns / 1e9);
    return true;
  };
  return (req, res) => {
    if (req.method !== 'GET') return void koa(req, res);
    answered(req, res).then(
      (done) => {
        if (!done) void koa(req, res);
      },
      (err: unknown) => {
        deps.log.error({ err }, 'fast lane failed; answering through Koa');
        if (!res.headersSent) void koa(req, res);
      },
    );
  };
}
