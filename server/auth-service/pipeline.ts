import { z } from 'zod';
import type { Ctx, Mw } from '../context.js';
import { describesRequest } from '../http/describe.js';
import { HttpError } from '../http/errors.js';
import { describeIssues, plainErrors } from '../http/pipeline.js';
import { e164, phoneMessage } from '../team/phone.js';
import { authError, fromProvider, invalid, tooManyAttempts, unauthenticated } from './errors.js';
import { BadToken, type IdClaims } from './id-tokens.js';
import { book, forget, limitsFor, type AttemptKind, type Booked } from './limits.js';
import { ProviderError } from './provider.js';
import { runtimeOf, type AuthRuntime } from './runtime.js';
import { revokedBefore } from './service.js';

/**
 * The request bodies of /auth and the steps its routes are made of (validation with the service's envelope,
 * limits, provider failures, ID-token checks). The routes themselves: routes.ts.
 */

const str = (what = 'a string') => z.string({ error: (i) => (i.input === undefined ? 'is required' : `must be ${what}`) });
const email = str('an email address').trim().toLowerCase().pipe(z.email('must be an email address').max(254, 'must be at most 254 characters'));
const password = str().min(1, 'is required').max(1024, 'must be at most 1024 characters');
const phoneNumber = str().trim().regex(e164, phoneMessage);
const opaque = (max: number) => str().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const SignInBody = z.object({ email, password });
export const SignUpBody = z.object({ companyName: str().trim().min(1, 'is required').max(200, 'must be at most 200 characters'), email, password });
/** The attestation the provider's sendVerificationCode takes, under its own field names (docs/auth-service.md). */
export const PhoneStartBody = z.object({ phoneNumber, recaptchaToken: opaque(8192).optional(), playIntegrityToken: opaque(8192).optional() });
export const PhoneVerifyBody = z
  .object({
    mode: z.literal('sign-in', { error: 'must be "sign-in"' }),
    idToken: opaque(8192).optional(),
    sessionInfo: opaque(4096).optional(),
    code: str().trim().regex(/^\d{4,10}$/, 'must be the digits of the code the user received').optional(),
  })
  .superRefine((b, c) => {
    const sms = b.sessionInfo !== undefined || b.code !== undefined;
    if (b.idToken !== undefined && sms) c.addIssue({ code: 'custom', path: ['idToken'], message: 'send either idToken (device path) or sessionInfo and code (SMS path), not both' });
    else if (b.idToken === undefined && !sms) c.addIssue({ code: 'custom', path: ['idToken'], message: 'is required (or sessionInfo and code on the SMS path)' });
    else if (sms && b.sessionInfo === undefined) c.addIssue({ code: 'custom', path: ['sessionInfo'], message: 'is required with code' });
    else if (sms && b.code === undefined) c.addIssue({ code: 'custom', path: ['code'], message: 'is required with sessionInfo' });
  });

/** First step of every route: 503 AUTH_PROVIDER_ERROR when the provider is not configured, whatever the body. */
export const configured: Mw = async (ctx, next) => {
  runtimeOf(ctx);
  await next();
};

/** Body validation with the service's envelope: 400 VALIDATION_ERROR, `details.fields` naming each bad field. */
export function body(schema: z.ZodType): Mw {
  return describesRequest<Mw>(async (ctx, next) => {
    const unreadable = ctx.state.bodyError as { status?: number } | undefined;
    if (unreadable !== undefined) {
      if (unreadable.status === 413) throw authError(413, 'VALIDATION_ERROR', 'The request body is too large.', { reason: 'payload_too_large' });
      throw invalid('The request body is not valid JSON: send one JSON object.', { reason: 'malformed_json' });
    }
    const parsed = schema.safeParse(ctx.request.body ?? {}, { error: plainErrors });
    if (!parsed.success) {
      const fields: Record<string, string> = {};
      for (const i of parsed.error.issues) fields[i.path.length ? i.path.join('.') : 'body'] ??= i.message;
      throw invalid(describeIssues(parsed.error), { reason: 'invalid_body', fields });
    }
    ctx.state.body = parsed.data;
    await next();
  }, { body: schema });
}

/** A provider failure as the caller's error; codes that point at our configuration are logged. */
export function providerFailure(ctx: Ctx, err: unknown, op: string): never {
  if (!(err instanceof ProviderError)) throw err;
  const { error, known } = fromProvider(err);
  if (!known || err.kind === 'unavailable') ctx.log.warn({ op, provider_code: err.code, provider_status: err.httpStatus }, 'identity provider call failed');
  throw error;
}

export const ipOf = (ctx: Ctx) => ctx.ip || 'unknown';

export async function bookOrThrow(ctx: Ctx, kind: AttemptKind, key: string): Promise<number> {
  const { store, config } = ctx.deps;
  const l = limitsFor(config)[kind];
  const booked: Booked = await store.tx(async () => await book(store.db, config, { kind, key, ip: ipOf(ctx), ...l }));
  if (!booked.ok) {
    ctx.set('Retry-After', String(booked.retryAfterSeconds));
    throw tooManyAttempts(booked.retryAfterSeconds);
  }
  return booked.id;
}

/** Runs a provider call; a failure that is not the caller's wrong credential does not count against their limit. */
export async function counted<T>(ctx: Ctx, attempt: number, op: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    try {
      providerFailure(ctx, err, op);
    } catch (mapped) {
      const counts = mapped instanceof HttpError && mapped.status === 401;
      if (!counts) (await ctx.deps.store.tx(async () => await forget(ctx.deps.store.db, attempt)));
      throw mapped;
    }
  }
}

export const tokenMessages: Record<BadToken['reason'], string> = {
  token_missing: 'Sign in first, then send the ID token: Authorization: Bearer <ID token>.',
  token_invalid: 'The ID token is not valid for this service.',
  token_expired: 'The ID token has expired. Get a fresh one from the SDK (getIdToken) and try again.',
  token_revoked: 'This sign-in has been signed out. Sign in again.',
};

/** Verifies a provider ID token and our revocation record for its account. */
export async function verified(ctx: Ctx, rt: AuthRuntime, token: string | undefined): Promise<IdClaims> {
  try {
    if (!token) throw new BadToken('token_missing');
    const claims = await rt.verify(token);
    const before = await revokedBefore(ctx.deps.store.db, claims.uid);
    if (before !== undefined && claims.authTime < before) throw new BadToken('token_revoked');
    return claims;
  } catch (err) {
    if (err instanceof BadToken) {
      // Every refusal, with its reason and never the token (docs/auth-service.md, "Logs").
      ctx.log.info({ reason: err.reason, route: ctx.path, idp: rt.mode }, 'ID token refused');
      throw unauthenticated(tokenMessages[err.reason], err.reason);
    }
    providerFailure(ctx, err, 'keys');
  }
}

export const secondsLeft = (exp: number) => Math.max(0, exp - Math.floor(Date.now() / 1000));
