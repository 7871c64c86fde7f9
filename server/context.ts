import type { ParameterizedContext, Middleware } from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Store } from './db/open.js';
import type { Keys } from './crypto/keys.js';
import type { Broker } from './broker/broker.js';
import type { Role } from './policy.js';
import type { CompanyPurger } from './clients/deletion.js';
import type { ShopLogins } from './shops/broker-logins.js';
import type { LiveHub } from './cameras/live.js';
import type { IdentityControl } from './visits/identity-control.js';
import type { ArrivalsHub } from './visits/hub.js';
import type { Metrics } from './metrics/metrics.js';

/** What every request can reach: built once by startServer (or a test) and handed to buildApp. */
export interface Deps {
  config: Config;
  store: Store;
  log: Logger;
  keys: Keys;
  broker: Broker;
  /** Run in order before a company's rows are deleted (images first, then broker logins). */
  purgers: CompanyPurger[];
  /** Shop logins on the broker (its BrokerAuth). */
  shopLogins: ShopLogins;
  /** Live camera view relay. */
  live: LiveHub;
  /** The main thread's side of the face galleries (which live on the ingest thread): erasure, merge, deletion. */
  identities: IdentityControl;
  /** Fan-out of committed visits to the open arrival streams. */
  arrivals: ArrivalsHub;
  /** Prometheus metrics, when FOOTFALL_METRICS_TOKEN turns them on. */
  metrics?: Metrics;
  /** The privacy sweep (server/privacy/sweep.ts): a settings change asks it to run. */
  privacy?: { request(): Promise<void> };
}

/** The signed-in person making the request. companyId is null for the platform admin. */
export interface Actor {
  userId: string;
  sessionId: string;
  companyId: string | null;
  companyName: string;
  role: Role;
  email: string;
  fullName: string;
}

/** A shop PC, identified by its own token. */
export interface AgentCaller {
  shopId: string;
  shopSlug: string;
  companyId: string;
  companySlug: string;
  brokerUsername: string;
}

export interface State {
  requestId: string;
  /** The request's log fields (req_id, user_id, shop_id): see defineRequestLog. */
  logFields?: Record<string, string>;
  actor?: Actor;
  /** The enrolled shop PC calling an /api/agent route (agentAuth). */
  agent?: AgentCaller;
  body?: unknown;
  /** Why the request body could not be read (bad JSON, too large): reported by the route that reads the body. */
  bodyError?: unknown;
  query?: unknown;
}

export interface Custom {
  deps: Deps;
  log: Logger;
  /** Path parameters, set by @koa/router. */
  params: Record<string, string>;
}

export type Ctx = ParameterizedContext<State, Custom>;
export type Mw = Middleware<State, Custom>;
export type AppRouter = Router<State, Custom>;

/** The signed-in actor; auth() guarantees it on every route behind it. */
export function actorOf(ctx: Ctx): Actor {
  if (!ctx.state.actor) throw new Error('route has no auth() in its pipeline');
  return ctx.state.actor;
}

/** The actor's company; tenant routes only (auth() refuses the platform admin there). */
export function tenantOf(ctx: Ctx): string {
  const companyId = actorOf(ctx).companyId;
  if (companyId === null) throw new Error('tenant route reached without a tenant');
  return companyId;
}
