import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jwtVerify } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { KEY_FILE, ROTATE_AFTER_DAYS, loadSigningKeys } from './keys.js';

describe('embedded provider keys', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-idp-keys-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('made once (0600), kept across starts, rotated after 90 days with the previous key still verifying', async () => {
    const first = await loadSigningKeys(dir);
    expect(fs.statSync(path.join(dir, KEY_FILE)).mode & 0o777).toBe(0o600);
    const token = await first.sign({ user_id: 'u1' }, 'u1', 'footfall', 'https://securetoken.google.com/footfall', 3600);
    const again = await loadSigningKeys(dir);
    expect(again.kid).toBe(first.kid);
    expect(again.rotated).toBe(false);
    expect(again.codeKey.equals(first.codeKey)).toBe(true);

    const later = await loadSigningKeys(dir, Date.now() + (ROTATE_AFTER_DAYS + 1) * 86_400_000);
    expect(later.rotated).toBe(true);
    expect(later.kid).not.toBe(first.kid);
    expect(later.jwks.keys.map((k) => k.kid)).toEqual([later.kid, first.kid]);
    expect(later.codeKey.equals(first.codeKey)).toBe(true);
    // A token signed before the rotation still verifies; a new one names the new key.
    await expect(jwtVerify(token, later.getKey)).resolves.toBeDefined();
    const fresh = await later.sign({}, 'u1', 'footfall', 'https://securetoken.google.com/footfall', 3600);
    expect(JSON.parse(Buffer.from(fresh.split('.')[0]!, 'base64url').toString()).kid).toBe(later.kid);
    // A further rotation drops the oldest key: at most two are published.
    const third = await loadSigningKeys(dir, Date.now() + (2 * ROTATE_AFTER_DAYS + 2) * 86_400_000);
    expect(third.jwks.keys.map((k) => k.kid)).toEqual([third.kid, later.kid]);
    await expect(jwtVerify(token, third.getKey)).rejects.toThrow();
  });

  it('several processes on one data folder: starting at once they agree on one key set; one that started before another rotated verifies the new tokens', async () => {
    const shared = fs.mkdtempSync(path.join(dir, 'shared-'));
    const [a, b, c] = await Promise.all([loadSigningKeys(shared), loadSigningKeys(shared), loadSigningKeys(shared)]);
    expect(new Set([a.kid, b.kid, c.kid]).size).toBe(1);
    expect(a.codeKey.equals(b.codeKey) && a.codeKey.equals(c.codeKey)).toBe(true);
    expect(fs.existsSync(path.join(shared, `${KEY_FILE}.lock`))).toBe(false);
    // b restarts 91 days later and rotates; a, still running, meets a token of the new key.
    const rotated = await loadSigningKeys(shared, Date.now() + (ROTATE_AFTER_DAYS + 1) * 86_400_000);
    expect(rotated.rotated).toBe(true);
    const token = await rotated.sign({ user_id: 'u2' }, 'u2', 'footfall', 'https://securetoken.google.com/footfall', 3600);
    await expect(jwtVerify(token, a.getKey)).resolves.toBeDefined();
    expect(a.jwks.keys.map((k) => k.kid)).toEqual([rotated.kid, a.kid]);
    // A kid nobody has is still refused (and the file is not read again for it within 5 s).
    const stranger = await loadSigningKeys(fs.mkdtempSync(path.join(dir, 'other-')));
    await expect(jwtVerify(await stranger.sign({}, 'u3', 'footfall', 'https://securetoken.google.com/footfall', 3600), a.getKey)).rejects.toThrow();
  });

  it('a lock left by a process that died is taken over after 30 s', async () => {
    const left = fs.mkdtempSync(path.join(dir, 'left-'));
    const lock = path.join(left, `${KEY_FILE}.lock`);
    fs.writeFileSync(lock, '');
    const old = new Date(Date.now() - 31_000);
    fs.utimesSync(lock, old, old);
    await expect(loadSigningKeys(left)).resolves.toMatchObject({ rotated: false });
    expect(fs.existsSync(lock)).toBe(false);
  });

  it('a data folder that does not exist yet is made (head office on PostgreSQL with FOOTFALL_ENCRYPTION_KEY makes nothing there before)', async () => {
    const fresh = path.join(dir, 'not-yet', 'data');
    const keys = await loadSigningKeys(fresh);
    expect(fs.existsSync(path.join(fresh, KEY_FILE))).toBe(true);
    expect((await loadSigningKeys(fresh)).kid).toBe(keys.kid);
  });

  it('a file that is not a key file stops the start with a clear message', async () => {
    const bad = fs.mkdtempSync(path.join(dir, 'bad-'));
    fs.writeFileSync(path.join(bad, KEY_FILE), '{"keys": []}');
    await expect(loadSigningKeys(bad)).rejects.toThrow(/not a key file/);
  });
});
