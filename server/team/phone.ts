import { z } from 'zod';

/**
 * Phone numbers in E.164: a leading `+`, a country code that does not start with 0, 8 to 15 digits in all.
 * That is the only form stored and the form the identity provider puts in a phone sign-in's token.
 */
export const e164 = /^\+[1-9]\d{7,14}$/;

export const phoneMessage = 'must be a phone number in international format with a leading +, e.g. +447700900123';

/** A member's phone as typed in the console: spaces, dashes, dots and brackets are dropped, then it must be E.164. */
export const memberPhone = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string or null') })
  .transform((v) => v.replace(/[\s().-]/g, ''))
  .pipe(z.string().regex(e164, phoneMessage));

/** For logs and audit rows: never a phone number in full ("+44******0123"). */
export function maskPhone(phone: string): string {
  if (phone.length <= 7) return phone.slice(0, 2) + '*'.repeat(Math.max(0, phone.length - 2));
  return phone.slice(0, 3) + '*'.repeat(phone.length - 7) + phone.slice(-4);
}
