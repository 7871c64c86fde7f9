import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';

describe('a server whose key file is damaged', () => {
  let h: Harness;
  beforeAll(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-nokey-'));
    fs.writeFileSync(path.join(dataDir, 'encryption.key'), 'not a key\n', { mode: 0o600 });
    h = await startHarness({}, { dataDir });
  });
  afterAll(async () => {
    await h.close();
    fs.rmSync(h.dataDir, { recursive: true, force: true });
  });

  it('still signs people in, and answers 503 no_encryption_key wherever the key is needed', async () => {
    const c = await h.company('Keyless Traders');
    const invite = await h.request('POST', '/api/team/invitations', {
      token: c.ownerToken,
      body: { email: 'new@keyless.test', full_name: 'New Person', role: 'staff' },
    });
    expect(invite.status).toBe(503);
    expect(invite.body.error).toBe('no_encryption_key');
    expect(invite.body.message).toMatch(/key/);
    const shop = await h.request('POST', '/api/sites', { token: c.ownerToken, body: { name: 'Main Street' } });
    expect(shop.status).toBe(503);
    expect(shop.body.error).toBe('no_encryption_key');
    expect((await h.request('GET', '/api/sites', { token: c.ownerToken })).body).toEqual([]);
  });
});
