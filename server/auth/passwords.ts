import { randomInt } from 'node:crypto';
import argon2 from 'argon2';

/** argon2id with OWASP's minimum: 19 MiB, 2 iterations, 1 lane. */
const options = { type: argon2.argon2id, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options);
}

let dummy: Promise<string> | undefined;

/**
 * Verifies a password. With no stored hash (unknown account) it verifies against a dummy hash anyway,
 * so both failures take the same time.
 */
export async function verifyPassword(hash: string | undefined, password: string): Promise<boolean> {
  if (hash === undefined) {
    dummy ??= argon2.hash('footfall-dummy-password', options);
    await argon2.verify(await dummy, password).catch(() => false);
    return false;
  }
  return argon2.verify(hash, password).catch(() => false);
}

/** Warms the dummy hash so the first unknown-account login is not faster than the rest. */
export async function warmPasswords(): Promise<void> {
  dummy ??= argon2.hash('footfall-dummy-password', options);
  await dummy;
}

const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789'; // no 0/o, 1/l/i

/** A generated password: four groups of five, about 99 bits, easy to read out and type. */
export function generatePassword(): string {
  const groups = Array.from({ length: 4 }, () => Array.from({ length: 5 }, () => alphabet[randomInt(alphabet.length)]).join(''));
  return groups.join('-');
}
