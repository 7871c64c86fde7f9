import type { z } from 'zod';
import type { Ctx, Mw } from '../context.js';
import { describesRequest } from './describe.js';
import { badRequest } from './errors.js';

const kinds: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
};

/**
 * Plain wording for the commonest failures ("email: is required", "active: must be true or false") instead of
 * zod's "Invalid input: expected string, received undefined". A message set on the schema itself still wins.
 */
export const plainErrors: z.core.$ZodErrorMap = (iss) => {
  if (iss.code !== 'invalid_type') return undefined;
  if (!iss.path?.length) {
    if (iss.expected === 'object') return 'The request body must be a JSON object.';
    return undefined;
  }
  if (iss.input === undefined) return 'is required';
  const kind = kinds[iss.expected];
  return kind ? `must be ${kind}` : undefined;
};

/** Turns zod issues into one sentence a person can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
}

/** validate({ body, query }): parses the request with zod; bad input is a 400 with the spec's envelope. */
export function validate(schemas: { body?: z.ZodType; query?: z.ZodType }): Mw {
  return describesRequest<Mw>(async (ctx, next) => {
    if (schemas.body) {
      if (ctx.state.bodyError !== undefined) throw ctx.state.bodyError;
      const parsed = schemas.body.safeParse(ctx.request.body ?? {}, { error: plainErrors });
      if (!parsed.success) throw badRequest(describeIssues(parsed.error));
      refuseNul(parsed.data, 'body');
      ctx.state.body = parsed.data;
    }
    if (schemas.query) {
      const parsed = schemas.query.safeParse(ctx.query, { error: plainErrors });
      if (!parsed.success) throw badRequest(describeIssues(parsed.error));
      refuseNul(parsed.data, 'query');
      ctx.state.query = parsed.data;
    }
    await next();
  }, schemas);
}

/**
 * Text with the NUL character (U+0000) is refused on every route, whatever the store: PostgreSQL cannot hold it in
 * text, and no name, note or identifier a person types has one (a 400 on both stores, not a 500 on one).
 */
function refuseNul(value: unknown, where: string): void {
  const path = nulAt(value, where);
  if (path !== undefined) throw badRequest(`${path}: text may not contain the NUL character (U+0000).`);
}

function nulAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = nulAt(value[i], `${path}[${i}]`);
      if (p !== undefined) return p;
    }
  } else if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array)) {
    for (const [k, v] of Object.entries(value)) {
      const p = nulAt(v, `${path}.${k}`);
      if (p !== undefined) return p;
    }
  }
  return undefined;
}

/** The validated body, typed by the schema that validate() used. */
export function bodyOf<S extends z.ZodType>(ctx: Ctx, _schema: S): z.output<S> {
  return ctx.state.body as z.output<S>;
}

export function queryOf<S extends z.ZodType>(ctx: Ctx, _schema: S): z.output<S> {
  return ctx.state.query as z.output<S>;
}

/**
 * transaction(handler): runs a handler inside one database transaction (server/db/transaction.ts). A throw rolls
 * everything back. The handler may await only the database: handlers that must await something else (password
 * hashing) do that first and then call store.tx themselves for the write.
 */
export function transaction(handler: (ctx: Ctx) => Promise<void>): Mw {
  return async (ctx) => {
    await ctx.deps.store.tx(() => handler(ctx));
  };
}
