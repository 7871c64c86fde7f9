/**
 * Erasure needs the server key (the do-not-enrol marker's sketch key is derived from it, docs/visits-and-customers.md):
 * with a key file that cannot be used, DELETE /api/visitors/{id} is 503 no_encryption_key and nothing is erased. The
 * customer is made the real way first (a shop PC publishes visits of a real face, with photos), then head office is
 * restarted on the same data folder with its key file damaged; then restarted again with the key restored, where the
 * same erasure succeeds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realFaces, visitOf } from '../../test/support/faces.js';
import { startHarness, type Company, type Harness } from '../../test/support/harness.js';
import { arrivals, shopPc } from '../../test/support/visits.js';
import { statementOn } from '../db/statement.js';
import { faceImageFile } from '../agent-api/faces.js';
import { storedFace } from '../../test/support/pictures.js';

describe('erasure when the server key is unusable', () => {
  const overrides = { FOOTFALL_IMAGES: 'local' as const };
  let dataDir: string;
  let keyFile: string;
  let key: string;
  let h: Harness | undefined;
  let c: Company;
  let customerId: string;
  let visitIds: string[];
  let photoIds: string[];
  /** Whether each photo's bytes are stored (a file; on PostgreSQL a row) and none is set aside for an erasure. */
  const photosStored = async () => Promise.all(photoIds.map(async (id) => (await storedFace(h!, c.id, id)) !== undefined && !fs.existsSync(`${faceImageFile(dataDir, c.id, id)}.erasing`)));

  /** Rows as stored, read through head office's own connection (either store), not the API. */
  const count = async (sql: string, ...args: unknown[]) => (await statementOn(h!.server.store, sql).get<{ n: number }>(...args))!.n;
  const customerRow = async () => await statementOn(h!.server.store, 'select * from customers where id = ?').get(customerId);

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'footfall-erasure-nokey-'));
    keyFile = path.join(dataDir, 'encryption.key');
    const [first, faces] = await Promise.all([startHarness(overrides, { dataDir, keepDataDir: true }), realFaces()]);
    h = first;
    c = await h.company('Keyless Erasers');
    const pc = await shopPc(h, c.ownerToken, c.slug, 'High Street');
    // One customer, two visits (the same person in two photos), each with its photo.
    visitIds = [];
    for (const [i, face] of faces.same.entries()) {
      const up = await pc.uploadFace(face.jpeg);
      expect(up.status).toBe(201);
      // Two hours apart: two visits (stays), not one.
      const msg = visitOf(faces, face, { face_image_id: up.body.face_image_id, occurred_at: new Date(Date.now() - (2 - i) * 7_200_000).toISOString() });
      await pc.publish(msg);
      visitIds.push(msg.visit_id);
    }
    const rows = await arrivals(h, c.ownerToken, 2);
    expect(rows.map((r) => [r.visitor_ref, r.is_new_visitor, r.image.available])).toEqual([
      ['V-1', true, true],
      ['V-1', false, true],
    ]);
    customerId = rows[0].visitor_id;
    const profile = await h.request('PUT', '/api/visitors/V-1/profile', { token: c.ownerToken, body: { full_name: 'Kim Keyless', consent: true } });
    expect(profile.status).toBe(200);
    photoIds = (await statementOn(h.server.store, 'select id from face_images where customer_id = ?').all<{ id: string }>(customerId)).map((r) => r.id);
    await pc.close();
    await h.close();
    h = undefined;

    key = fs.readFileSync(keyFile, 'utf8');
    fs.writeFileSync(keyFile, 'not a key\n', { mode: 0o600 });
    h = await startHarness(overrides, { dataDir, keepDataDir: true });
  });

  afterAll(async () => {
    await h?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 503 no_encryption_key and erases nothing: customer, profile, consent, visits, photos and template stay', async () => {
    expect(photoIds).toHaveLength(2);
    expect(await photosStored()).toEqual([true, true]);
    const owner = (await h!.login(c.ownerEmail, c.ownerPassword)).access_token;
    const before = await customerRow();
    expect(before).toMatchObject({ id: customerId, full_name: 'Kim Keyless', template: expect.any(Buffer) });

    for (const ref of ['V-1', customerId]) {
      const r = await h!.request('DELETE', `/api/visitors/${ref}`, { token: owner });
      expect(r.status).toBe(503);
      expect(r.body).toEqual({ error: 'no_encryption_key', message: expect.stringMatching(/Nothing was erased/) });
    }

    // The row is untouched (template, profile, consent, counts), and so is everything hanging off it.
    expect(await customerRow()).toEqual(before);
    const customer = await h!.request('GET', '/api/visitors/V-1', { token: owner });
    expect(customer.status).toBe(200);
    expect(customer.body).toMatchObject({ id: customerId, ref: 'V-1', full_name: 'Kim Keyless', has_consent: true, visit_count: 2 });
    const history = await h!.request('GET', '/api/visitors/V-1/history', { token: owner });
    expect(history.body.map((v: any) => v.id).sort()).toEqual([...visitIds].sort());
    const feed = (await h!.request('GET', '/api/visits?limit=1000', { token: owner })).body.arrivals;
    expect(feed.map((a: any) => [a.visit_id, a.visitor_id, a.label, a.image.available])).toEqual(visitIds.map((id) => [id, customerId, 'Kim Keyless', true]));
    expect((await h!.request('GET', '/api/visitors/V-1/image', { token: owner })).status).toBe(200);
    expect(await photosStored()).toEqual([true, true]);
    expect(await count('select count(*) as n from face_images where customer_id = ?', customerId)).toBe(2);
    expect(await count('select count(*) as n from do_not_enrol')).toBe(0);
    expect(await count("select count(*) as n from customer_consents where customer_id = ? and reason = 'erasure'", customerId)).toBe(0);
    expect(await count("select count(*) as n from audit_log where action = 'customer.erase'")).toBe(0);
  });

  it('with the key restored, the same erasure goes through', async () => {
    await h!.close();
    h = undefined;
    fs.writeFileSync(keyFile, key, { mode: 0o600 });
    h = await startHarness(overrides, { dataDir, keepDataDir: true });
    const owner = (await h.login(c.ownerEmail, c.ownerPassword)).access_token;
    const r = await h.request('DELETE', '/api/visitors/V-1', { token: owner });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      erased: customerId,
      ref: 'V-1',
      visits_unlinked: 2,
      images_deleted: 2,
      consent_revoked: true,
      enrolment_blocked_until: expect.any(String),
    });
    expect(await photosStored()).toEqual([false, false]);
    expect(await count('select count(*) as n from do_not_enrol')).toBe(1);
  });
});
