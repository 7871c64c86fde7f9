import { randomInt } from 'node:crypto';
import argon2 from 'argon2';

/** argon2id with OWASP's minimum: 19 MiB, 2 iterations, 1 lane (about 35 ms of CPU a hash on the 2-core reference machine). */
export const PASSWORD_HASHING = { type: argon2.argon2id, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const;

/**
 * The test suite's: argon2id at 1 MiB and one pass, about 1 ms. `npm test` hashes and verifies some 1,500 passwords
 * (estimated; head office's own files alone 863, counted), about 50 s of CPU at the real cost. Used only where FOOTFALL_TEST_PASSWORD_COST is
 * `low` under vitest (which sets VITEST in its workers; vitest.config.ts sets the other), so a deployment cannot
 * turn it on by accident. A hash names its own parameters, so either setting verifies the other's hashes;
 * passwords.test.ts checks that the real setting is the one used everywhere else.
 */
const TEST_HASHING = { type: argon2.argon2id, memoryCost: 1024, timeCost: 1, parallelism: 1 } as const;

/** The argon2 parameters new hashes use. */
export function passwordHashing(env: NodeJS.ProcessEnv = process.env): typeof PASSWORD_HASHING | typeof TEST_HASHING {
  return env.FOOTFALL_TEST_PASSWORD_COST === 'low' && env.VITEST ? TEST_HASHING : PASSWORD_HASHING;
}

const options = passwordHashing();

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
