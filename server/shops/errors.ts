import type { Ctx } from '../context.js';
import { NoEncryptionKeyError } from '../crypto/keys.js';
import { HttpError } from '../http/errors.js';
import { BrokerRefused } from './broker-logins.js';

/** 503: the server has no usable key (see unusableKeys in server/crypto/keys.ts), so it cannot seal secrets. */
export const noEncryptionKey = (doing: string) =>
  new HttpError(
    503,
    'no_encryption_key',
    `This server cannot ${doing}: it has no usable encryption key. Ask whoever runs head office to restore the key file (the server log says what is wrong) and restart it.`,
  );

/** 502: the broker would not take the login (closed or failing); nothing was created. */
export const brokerUnavailable = () =>
  new HttpError(502, 'broker_unavailable', 'The message broker refused the new shop login, so nothing was created. Try again; if it keeps failing, restart head office.');

/** Refuses early when the key is unusable. */
export function requireKey(ctx: Ctx, doing: string): void {
  if (ctx.deps.keys.problem) throw noEncryptionKey(doing);
}

/** Maps key and broker failures thrown from deeper down to their answers; anything else passes through. */
export function mapInfraErrors(err: unknown, doing: string): unknown {
  if (err instanceof NoEncryptionKeyError) return noEncryptionKey(doing);
  if (err instanceof BrokerRefused) return brokerUnavailable();
  return err;
}
