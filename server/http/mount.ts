import type { AppRouter, Ctx, Mw } from '../context.js';

/**
 * The app's routers as one middleware, answering exactly as `for (r of routers) app.use(r.routes()).use(r.allowedMethods())`
 * does (docs/decisions.md, "One mount for the routers"), without running every router on every request.
 *
 * - A router runs only when one of its layers could match the path: each layer's regexp (@koa/router, path-to-regexp,
 *   case-insensitive) only matches paths that start with the layer's static text (its path up to the first parameter,
 *   wildcard, group or escape), compared in lower case. A router none of whose layers can match would only have added
 *   nothing to `ctx.matched` and called next, so leaving it out changes nothing.
 * - One allowedMethods in place of one per router: every router here has @koa/router's default methods and no
 *   options, and each allowedMethods acts only on a 404 after every dispatch below it has run, on the same
 *   `ctx.matched`; so the first to act (405, 501, or OPTIONS) is the only one that can, and they all act alike.
 *   `ctx.matched` is made (empty) when no router ran, as the first router's dispatch would have.
 * - The chain of the routers a path can reach is composed once per set of routers and kept.
 *
 * `withAllowedMethods: false` mounts routers with their routes() only (the admin routes, which answer no 405).
 * The middleware carries `routers` so the OpenAPI document (server/openapi/document.ts) still finds their routes.
 */
export function mountRouters(routers: AppRouter[], opts: { withAllowedMethods: boolean } = { withAllowedMethods: true }): Mw & { routers: AppRouter[] } {
  if (routers.length > 30) throw new Error('mountRouters: at most 30 routers (a bit mask of them keys the chains)');
  const defaults = ['HEAD', 'OPTIONS', 'GET', 'PUT', 'PATCH', 'POST', 'DELETE'].join();
  for (const r of routers) {
    if (r.methods.join() !== defaults) throw new Error('mountRouters: a router with its own methods needs its own allowedMethods');
    if (r.opts.host !== undefined || r.opts.routerPath !== undefined || r.opts.exclusive) throw new Error('mountRouters: host, routerPath and exclusive routers are not supported');
  }
  const dispatch = routers.map((r) => r.routes() as Mw);
  const allowed = opts.withAllowedMethods && routers.length > 0 ? (routers[0]!.allowedMethods() as Mw) : undefined;
  // Static prefixes (lower case) with the routers (bits) they may lead to; a prefix that another prefix of the same
  // router begins with adds nothing and is left out.
  const byPrefix = new Map<string, number>();
  routers.forEach((r, i) => {
    const own = [...new Set(r.stack.map((layer) => staticPrefix(layer)))].sort((a, b) => a.length - b.length);
    const kept: string[] = [];
    for (const p of own) if (!kept.some((k) => p.startsWith(k))) kept.push(p);
    for (const p of kept) byPrefix.set(p, (byPrefix.get(p) ?? 0) | (1 << i));
  });
  const prefixes = [...byPrefix.entries()];
  const chains = new Map<number, Mw>();
  const chainOf = (mask: number): Mw => {
    let chain = chains.get(mask);
    if (!chain) {
      const parts: Mw[] = allowed ? [allowed] : [];
      dispatch.forEach((d, i) => {
        if (mask & (1 << i)) parts.push(d);
      });
      chain = compose(parts);
      chains.set(mask, chain);
    }
    return chain;
  };

  const mw = ((ctx: Ctx, next: () => Promise<unknown>) => {
    const c = ctx as Ctx & { newRouterPath?: string; routerPath?: string; matched?: unknown[] };
    const path = (c.newRouterPath || ctx.path || c.routerPath || '').toLowerCase();
    let mask = 0;
    for (let i = 0; i < prefixes.length; i++) if (path.startsWith(prefixes[i]![0])) mask |= prefixes[i]![1];
    if (mask === 0) {
      if (!c.matched) c.matched = [];
      // No router can match: the only thing left that could answer is allowedMethods' 501 for a method no router implements.
      return allowed ? allowed(ctx, next) : next();
    }
    return chainOf(mask)(ctx, next);
  }) as Mw & { routers: AppRouter[] };
  mw.routers = routers;
  return mw;
}

const special = /[:*(){}?+\\[\]]/;

/** The literal start of a layer's path, in lower case: every path its regexp matches starts with it (in any case). */
function staticPrefix(layer: AppRouter['stack'][number]): string {
  const p: unknown = layer.path;
  if (typeof p !== 'string' || (layer.opts as { pathAsRegExp?: boolean }).pathAsRegExp) return '';
  const at = p.search(special);
  return (at < 0 ? p : p.slice(0, at)).toLowerCase();
}

/**
 * koa-compose's chain (koa-compose is only a dependency of koa and @koa/router, not of this package): each middleware's
 * next runs the one after it, the last one's runs `next`; a second call of one next is an error, as there.
 */
function compose(parts: Mw[]): Mw {
  return (ctx, next) => {
    let called = -1;
    const step = (i: number): Promise<unknown> => {
      if (i <= called) return Promise.reject(new Error('next() called multiple times'));
      called = i;
      const f = i < parts.length ? parts[i] : next;
      if (!f) return Promise.resolve();
      try {
        return Promise.resolve(f(ctx, () => step(i + 1)));
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return step(0);
  };
}
