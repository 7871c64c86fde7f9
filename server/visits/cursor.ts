import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Keys } from '../crypto/keys.js';
import { HttpError } from '../http/errors.js';

/**
 * The arrivals feed cursor: a position (the last row's platform-wide sequence) sealed so that it reveals nothing and
 * cannot be forged (docs/visits-and-customers.md, "Cursor"). base64url of 36 bytes: a 12-byte synthetic IV, the
 * 8-byte sequence encrypted with AES-256-GCM, and the 16-byte tag. The IV is an HMAC-SHA-256 of the company and the
 * sequence (SIV: the same position always gives the same cursor, and an IV is never reused for another plaintext);
 * the company is the associated data, so one company's cursor does not open for another. Keys come from the server
 * key (Keys.cursorKey). Anything that does not open, old `v1:<seq>` cursors included, is refused with a message
 * telling the client to drop it and poll without one.
 */
const IV = 12;
const SEQ = 8;
const TAG = 16;
const SIZE = IV + SEQ + TAG;
/** base64url length of SIZE bytes. */
const LENGTH = Math.ceil((SIZE * 4) / 3);

export interface FeedCursors {
  encode(companyId: string, seq: number): string;
  /** The sequence in a cursor of this company, or undefined when it does not open. */
  decode(companyId: string, cursor: string): number | undefined;
}

const made = new WeakMap<Buffer, FeedCursors>();

export function feedCursors(keys: Pick<Keys, 'cursorKey'>): FeedCursors {
  let c = made.get(keys.cursorKey);
  if (!c) made.set(keys.cursorKey, (c = makeCursors(keys.cursorKey)));
  return c;
}

function makeCursors(key: Buffer): FeedCursors {
  const sub = (purpose: string) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `footfall:feed-cursor:${purpose}`, 32));
  const enc = sub('enc');
  const mac = sub('iv');
  const aad = (companyId: string) => Buffer.from(`footfall feed cursor v2\u0000${companyId}`, 'utf8');
  const ivOf = (companyId: string, plain: Buffer) => createHmac('sha256', mac).update(aad(companyId)).update(plain).digest().subarray(0, IV);
  return {
    encode(companyId, seq) {
      const plain = Buffer.alloc(SEQ);
      plain.writeBigUInt64BE(BigInt(seq));
      const iv = ivOf(companyId, plain);
      const cipher = createCipheriv('aes-256-gcm', enc, iv);
      cipher.setAAD(aad(companyId));
      const body = Buffer.concat([cipher.update(plain), cipher.final()]);
      return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
    },
    decode(companyId, cursor) {
      if (cursor.length !== LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
      const raw = Buffer.from(cursor, 'base64url');
      if (raw.length !== SIZE) return undefined;
      const iv = raw.subarray(0, IV);
      try {
        const decipher = createDecipheriv('aes-256-gcm', enc, iv);
        decipher.setAAD(aad(companyId));
        decipher.setAuthTag(raw.subarray(IV + SEQ));
        const plain = Buffer.concat([decipher.update(raw.subarray(IV, IV + SEQ)), decipher.final()]);
        if (!timingSafeEqual(ivOf(companyId, plain), iv)) return undefined;
        const seq = plain.readBigUInt64BE();
        return seq <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(seq) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

export const invalidCursor = () =>
  new HttpError(
    400,
    'invalid_cursor',
    'This cursor cannot be read (its format may have changed). Drop it and poll without a cursor to start again from the latest arrivals.',
  );

/** decode or a 400 invalid_cursor. */
export function cursorOr400(cursors: FeedCursors, companyId: string, cursor: string): number {
  const seq = cursors.decode(companyId, cursor.trim());
  if (seq === undefined) throw invalidCursor();
  return seq;
}
