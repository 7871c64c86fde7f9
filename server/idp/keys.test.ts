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

  it('a data folder that does not exist yet is made (head office on PostgreSQL with FOOTFALL_ENCRYPTION_KEY makes nothing there before)', async () => {
    const fresh = path.join(dir, 'not-yet', 'data');
    const keys = await loadSigningKeys(fresh);
    expect(fs.existsSync(path.join(fresh, KEY_FILE))).toBe(true);
    expect((await loadSigningKeys(fresh)).kid).toBe(keys.kid);
  });

  it('two starts at once on one data folder (two processes) end with the same keys, the ones in the file', async () => {
    const shared = path.join(dir, 'shared');
    const [x, y] = await Promise.all([loadSigningKeys(shared), loadSigningKeys(shared)]);
    expect(x.kid).toBe(y.kid);
    expect(x.codeKey.equals(y.codeKey)).toBe(true);
    expect((await loadSigningKeys(shared)).kid).toBe(x.kid);
    expect(fs.readdirSync(shared)).toEqual([KEY_FILE]);
  });

  it('a file that is not a key file stops the start with a clear message', async () => {
    const bad = fs.mkdtempSync(path.join(dir, 'bad-'));
    fs.writeFileSync(path.join(bad, KEY_FILE), '{"keys": []}');
    await expect(loadSigningKeys(bad)).rejects.toThrow(/not a key file/);
  });
});
