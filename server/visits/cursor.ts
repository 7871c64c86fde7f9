import { HttpError } from '../http/errors.js';

/**
 * The arrivals feed cursor: opaque to clients, base64url of `v1:<seq>` where seq is the last row's platform-wide
 * sequence. The version prefix lets a later format be told apart; anything that does not parse is refused with a
 * message telling the client to drop it and poll without one.
 */
const VERSION = 'v1';

export function encodeCursor(seq: number): string {
  return Buffer.from(`${VERSION}:${seq}`, 'utf8').toString('base64url');
}

/** The sequence in a cursor, or undefined when it does not parse. */
export function parseCursor(cursor: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return undefined;
  const m = /^v1:(0|[1-9][0-9]{0,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) return undefined;
  const seq = Number(m[1]);
  return Number.isSafeInteger(seq) ? seq : undefined;
}

export const invalidCursor = () =>
  new HttpError(
    400,
    'invalid_cursor',
    'This cursor cannot be read (its format may have changed). Drop it and poll without a cursor to start again from the latest arrivals.',
  );

/** parseCursor or a 400 invalid_cursor. */
export function cursorOr400(cursor: string): number {
  const seq = parseCursor(cursor.trim());
  if (seq === undefined) throw invalidCursor();
  return seq;
}
