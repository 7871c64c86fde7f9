import argon2 from 'argon2';
import { describe, expect, it } from 'vitest';
import { hashPassword, passwordHashing, PASSWORD_HASHING, verifyPassword } from './passwords.js';

describe('password hashing', () => {
  it('is argon2id at OWASP’s minimum everywhere but under vitest with FOOTFALL_TEST_PASSWORD_COST=low', () => {
    expect(PASSWORD_HASHING).toEqual({ type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 });
    expect(passwordHashing({})).toBe(PASSWORD_HASHING);
    // A deployment that sets the variable gets the real cost: only a vitest worker (VITEST) honours it.
    expect(passwordHashing({ FOOTFALL_TEST_PASSWORD_COST: 'low' })).toBe(PASSWORD_HASHING);
    expect(passwordHashing({ VITEST: 'true' })).toBe(PASSWORD_HASHING);
    expect(passwordHashing({ VITEST: 'true', FOOTFALL_TEST_PASSWORD_COST: 'high' })).toBe(PASSWORD_HASHING);
    expect(passwordHashing({ VITEST: 'true', FOOTFALL_TEST_PASSWORD_COST: 'low' })).toEqual({ type: argon2.argon2id, memoryCost: 1024, timeCost: 1, parallelism: 1 });
  });

  it('verifies hashes made at either cost (a hash names its parameters), and refuses a wrong password and an unknown account', async () => {
    const real = await argon2.hash('correct horse', PASSWORD_HASHING);
    expect(real).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    const ours = await hashPassword('correct horse');
    expect(ours).toMatch(/^\$argon2id\$v=19\$m=\d+,p=1,t=\d\$/);
    for (const hash of [real, ours]) {
      expect(await verifyPassword(hash, 'correct horse')).toBe(true);
      expect(await verifyPassword(hash, 'correct horse ')).toBe(false);
    }
    expect(await verifyPassword(undefined, 'correct horse')).toBe(false);
    expect(await verifyPassword('not a hash', 'correct horse')).toBe(false);
  });
});
