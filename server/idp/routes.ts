import { bodyParser } from '@koa/bodyparser';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Ctx, Mw } from '../context.js';
import { describesRoutes } from '../http/describe.js';
import { book, clearKey, forget, limitsFor, type AttemptKind } from '../auth-service/limits.js';
import { runtimeFor } from '../auth-service/runtime.js';
import { revokedBefore } from '../auth-service/service.js';
import { e164 } from '../team/phone.js';
import { IdpError, adminOnly, presentIdpError, tooManyAttempts } from './errors.js';
import { presentLookup, presentPasswordSignIn, presentPhoneSignIn, presentSendCode, presentTokenGrant, presentUpdate } from './presenter.js';
import { sessionKey, type EmbeddedIdp } from './service.js';

/**
 * The embedded provider on the head-office port (FOOTFALL_IDP=embedded), under the paths a Firebase client SDK
 * calls after connectAuthEmulator(auth, "http://HEAD-OFFICE:8080"): Identity Toolkit v1 (`/identitytoolkit.googleapis.com/v1/accounts:*`,
 * JSON) and Secure Token (`/securetoken.googleapis.com/v1/token`, form-encoded), plus the public keys at
 * `/.well-known/jwks.json`. Answers and errors are Identity Toolkit's own (`{ error: { code, message, errors } }`).
 * In the other modes these paths do not exist (404 like any unknown path).
 */
const TOOLKIT = '/identitytoolkit.googleapis.com/v1/';
const TOKEN = '/securetoken.googleapis.com/v1/token';
export const JWKS_PATH = '/.well-known/jwks.json';

const field = (max: number) => z.string().max(max).optional().catch(undefined);
const Body = z.looseObject({
  email: field(254),
  password: field(1024),
  idToken: field(8192),
  displayName: field(1000),
  phoneNumber: field(32),
  sessionInfo: field(4096),
  code: field(16),
  temporaryProof: field(4096),
  grant_type: field(64),
  grantType: field(64),
  refresh_token: field(4096),
  refreshToken: field(4096),
});
type Body = z.infer<typeof Body>;

/** A required field: absent or empty is Identity Toolkit's MISSING_* code. */
function need(value: string | undefined, missing: string): string {
  if (value === undefined || value === '') throw new IdpError(missing);
  return value;
}

interface Call {
  ctx: Ctx;
  idp: EmbeddedIdp;
  body: Body;
  ip: string;
}

/** Books a limited attempt (the /auth limits' rows, so the SDK path and /auth share them); refused: TOO_MANY_ATTEMPTS_TRY_LATER. */
async function booked(c: Call, kind: AttemptKind, key: string): Promise<number> {
  const { store, config } = c.ctx.deps;
  const r = await store.tx(async () => await book(store.db, config, { kind, key, ip: c.ip, ...limitsFor(config)[kind] }));
  if (!r.ok) {
    c.ctx.set('Retry-After', String(r.retryAfterSeconds));
    throw tooManyAttempts();
  }
  return r.id;
}

const operations: Record<string, (c: Call) => Promise<unknown>> = {
  'accounts:signUp': async ({ body }) => {
    if (body.email === undefined) throw new IdpError('OPERATION_NOT_ALLOWED', 'anonymous accounts are not enabled on head office');
    throw adminOnly('accounts are made on head office: POST /auth/client/sign-up, or a manager adds the member to the team');
  },

  'accounts:signInWithPassword': async ({ idp, body, ip }) => {
    const email = need(body.email, 'MISSING_EMAIL').trim();
    if (!z.email().safeParse(email).success) throw new IdpError('INVALID_EMAIL');
    return presentPasswordSignIn(await idp.signInWithPassword(email, need(body.password, 'MISSING_PASSWORD'), ip));
  },

  'accounts:lookup': async ({ idp, body, ctx }) => {
    const { user } = await idp.accountOf(body.idToken);
    return presentLookup(user, await revokedBefore(ctx.deps.store.db, user.id));
  },

  'accounts:update': async ({ idp, body }) => {
    const { user, tokens } = await idp.update(body.idToken, { displayName: body.displayName, password: body.password, email: body.email, phoneNumber: body.phoneNumber });
    return presentUpdate(user, tokens);
  },

  'accounts:delete': async () => {
    throw adminOnly('a manager removes team members on head office');
  },

  'accounts:sendVerificationCode': async (c) => {
    const phone = need(c.body.phoneNumber, 'MISSING_PHONE_NUMBER').trim();
    if (!e164.test(phone)) throw new IdpError('INVALID_PHONE_NUMBER', 'TOO_SHORT');
    const attempt = await booked(c, 'sms', phone);
    try {
      return presentSendCode(await c.idp.sendVerificationCode(phone));
    } catch (err) {
      if (err instanceof IdpError && err.kind === 'unavailable') (await c.ctx.deps.store.tx(async () => await forget(c.ctx.deps.store.db, attempt)));
      throw err;
    }
  },

  'accounts:signInWithPhoneNumber': async (c) => {
    if (c.body.idToken !== undefined || c.body.temporaryProof !== undefined) throw new IdpError('OPERATION_NOT_ALLOWED', 'linking and temporary proofs are not supported; sign in with sessionInfo and code');
    const sessionInfo = need(c.body.sessionInfo, 'MISSING_SESSION_INFO');
    const code = need(c.body.code, 'MISSING_CODE');
    const key = sessionKey(sessionInfo);
    await booked(c, 'code', key);
    const signed = await c.idp.signInWithPhoneNumber(sessionInfo, code);
    await c.ctx.deps.store.tx(async () => await clearKey(c.ctx.deps.store.db, 'code', key));
    return presentPhoneSignIn(signed);
  },
};

async function grant({ idp, body }: Call): Promise<unknown> {
  const grantType = need(body.grant_type ?? body.grantType, 'MISSING_GRANT_TYPE');
  if (grantType !== 'refresh_token') throw new IdpError('INVALID_GRANT_TYPE');
  const refreshToken = need(body.refresh_token ?? body.refreshToken, 'MISSING_REFRESH_TOKEN');
  return presentTokenGrant(await idp.refresh(refreshToken), idp.projectId);
}

const isProviderPath = (p: string) => p.startsWith(TOOLKIT) || p === TOKEN || p === JWKS_PATH;

export function idpRoutes(config: Config): Mw {
  const parse = bodyParser({ enableTypes: ['json', 'form'], jsonLimit: config.FOOTFALL_BODY_LIMIT_BYTES, formLimit: config.FOOTFALL_BODY_LIMIT_BYTES });
  // Tagged with the paths the table answers, so the OpenAPI document and its coverage test see them (./openapi.ts).
  const answer: Mw = async (ctx, next) => {
    const idp = runtimeFor(ctx.deps.config)?.embedded;
    if (!idp) return next();
    if (ctx.path === JWKS_PATH) {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.body = idp.d.keys.jwks;
      return;
    }
    try {
      const op = ctx.path === TOKEN ? grant : operations[ctx.path.slice(TOOLKIT.length)];
      if (!op || ctx.method !== 'POST') throw new IdpError('NOT_FOUND', `${ctx.method} ${ctx.path} is not a method of this provider`, 404);
      const key = ctx.query.key;
      if (config.FOOTFALL_IDP_API_KEY !== undefined && key !== config.FOOTFALL_IDP_API_KEY) throw new IdpError('API key not valid. Please pass a valid API key.');
      try {
        await parse(ctx, async () => {});
      } catch {
        throw new IdpError('INVALID_JSON_PAYLOAD', 'the body is not one JSON object (or form-encoded, for the token endpoint)');
      }
      const raw: unknown = ctx.request.body;
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new IdpError('INVALID_JSON_PAYLOAD', 'send one JSON object');
      ctx.body = await op({ ctx, idp, body: Body.parse(raw), ip: ctx.ip || 'unknown' });
    } catch (err) {
      let e: IdpError;
      if (err instanceof IdpError) e = err;
      else {
        ctx.log.error({ err, path: ctx.path }, 'identity provider request failed');
        e = new IdpError('INTERNAL_ERROR', 'something went wrong on head office; the request id identifies it in the log', 500);
      }
      if (e.kind === 'unavailable') ctx.log.warn({ code: e.code, detail: e.detail, path: ctx.path }, 'identity provider: a dependency failed');
      ctx.status = e.status;
      ctx.body = presentIdpError(e);
    }
  };
  // Any other path passes straight on, without an async frame of its own.
  return describesRoutes<Mw>((ctx, next) => (isProviderPath(ctx.path) ? answer(ctx, next) : next()), [
    ...Object.keys(operations).map((op) => ({ method: 'POST' as const, path: TOOLKIT + op })),
    { method: 'POST', path: TOKEN },
    { method: 'GET', path: JWKS_PATH },
  ]);
}
