import { randomInt } from 'node:crypto';

/** Invitation codes: four groups of six upper-case letters and digits, joined by dashes (about 124 bits). */
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export const codePattern = /^[A-Z0-9]{6}(?:-[A-Z0-9]{6}){3}$/;

/** A fresh code from the CSPRNG (crypto.randomInt is uniform, no modulo bias). */
export function generateInvitationCode(): string {
  const group = () => Array.from({ length: 6 }, () => alphabet[randomInt(alphabet.length)]).join('');
  return [group(), group(), group(), group()].join('-');
}

/** What gets hashed: dashes and whitespace dropped, letters upper-cased ("abcd12-..." == "ABCD12..."). */
export function normaliseCode(presented: string): string {
  return presented.replace(/[\s-]+/g, '').toUpperCase();
}
