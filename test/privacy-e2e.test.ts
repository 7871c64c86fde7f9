/**
 * The privacy modes with a real shop-PC runtime (issue 29): head office in-process (HTTP, broker, SQLite file), the
 * agent runtime enrolled with a real code and connected over MQTT; visits are injected where the recognition pipeline
 * hands them over (runtime.submitVisit), with embeddings of real faces. Count-only: the camera list tells the shop PC,
 * which then sends no embedding and no photo (checked on the broker), and head office stores no template. Consented:
 * a non-consenting face's template lives for the stay and is gone from the database file after it.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../agent/config/config.js';
import { enrolShopPc } from '../agent/enrol/enrol.js';
import { testModelsDir } from '../agent/models/test-cache.js';
import { AgentRuntime } from '../agent/runtime/runtime.js';
import type { Visit } from '../agent/vision/types.js';
import { upFilterAllShops } from '../shared/topics.js';
import { realFaces, type RealFace, type RealFaces } from './support/faces.js';
import { onDisk, startHarness, type Harness } from './support/harness.js';
import { addCamera, jpeg, enrolmentCode, openShop, waitFor } from './support/shop-pc.js';
import { testClip } from './support/clips.js';
import { startRtspServer } from './support/rtsp.js';
import { settled } from './support/visits.js';
import { embeddedOf } from '../server/broker/embedded.js';

const log = pino({ level: process.env.FOOTFALL_TEST_LOG ?? 'silent' });
let h: Harness;
let faces: RealFaces;
let owner: string;
let companyId: string;
let tmp: string;
let runtime: AgentRuntime;
let photo: Buffer;
/** Visit messages as head office's side of the broker receives them. */
const sent: any[] = [];

function visitOf(face: RealFace, at = new Date()): Visit {
  const t = at.toISOString();
  return {
    visit_id: randomUUID(),
    occurred_at: t,
    camera_id: 'entrance',
    embedding: face.embedding,
    recognition_model: faces.model,
    quality: face.quality,
    passed_gate: true,
    attributes: { gender: 'female', age: 31, emotion: 'neutral', raw: { age: 31.2 } },
    face_jpeg: photo,
    track: { id: `t-${randomUUID()}`, first_seen_at: t, last_seen_at: t, frames: 12, faces_passed: 5, faces_embedded: 3, ended_by: 'lost' },
  };
}

/** Sends a visit through the runtime; returns the message the broker carried and head office's stored row. */
async function through(face: RealFace, at?: Date) {
  const v = visitOf(face, at);
  await runtime.submitVisit(v);
  const msg = await waitFor(() => sent.find((m) => m.visit_id === v.visit_id), 10_000, 20);
  await settled(h);
  const row = await waitFor(() => sql<{ customer_id: string | null }>('select customer_id from visits where visit_id = ?', v.visit_id)[0], 5000, 20);
  if (!row) throw new Error(`visit ${v.visit_id} not stored`);
  return { msg, row };
}

/** Reads the database file (its own connection). */
function sql<T>(query: string, ...args: unknown[]): T[] {
  return onDisk(h, (db) => db.prepare(query).all(...args) as T[]);
}

async function setRecognition(mode: 'all' | 'consented' | 'off') {
  const r = await h.request('PATCH', '/api/company/privacy', { token: owner, body: { recognition: mode } });
  expect(r.status).toBe(200);
  // Told through the camera-list channel: the cameras notice makes the shop PC pull the list, which carries the mode.
  await waitFor(() => runtime.visits.countOnly === (mode === 'off'), 10_000, 20);
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'footfall-privacy-e2e-'));
  [h, faces, photo] = await Promise.all([startHarness({ FOOTFALL_IMAGES: 'local', FOOTFALL_VISIT_GAP_S: 1 }), realFaces(), jpeg(96, 96)]);
  const company = await h.company('Count Only Co');
  owner = company.ownerToken;
  companyId = company.id;
  const shop = await openShop(h, owner, { name: 'Canal Street' });
  const file = path.join(tmp, 'agent.json');
  await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'data') } });
  const config = { ...(await loadAgentConfig(file)), log_level: 'silent' as const };
  await new Promise<void>((resolve) =>
    embeddedOf(h.server.broker).aedes.subscribe(
      upFilterAllShops('visit'),
      (packet, done) => {
        sent.push(JSON.parse(Buffer.from(packet.payload).toString('utf8')));
        done();
      },
      resolve,
    ),
  );
  runtime = await AgentRuntime.start({ config, log, modelsDir: false, drainMs: 500 });
  await waitFor(() => runtime.broker.connected, 10_000);
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
  await h?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('privacy modes with a real shop PC', () => {
  it('all: embeddings and photos go out and the same face is recognised', async () => {
    const first = await through(faces.same[0]);
    expect(first.msg.embedding).toEqual(expect.any(String));
    expect(first.msg.face_image_id).toEqual(expect.any(String));
    expect(first.row.customer_id).not.toBeNull();
    const second = await through(faces.same[1], new Date(Date.now() + 5000));
    expect(second.row.customer_id).toBe(first.row.customer_id);
  });

  it('off: the shop PC sends no embedding and no photo; visits are still counted, nobody is enrolled', async () => {
    const customersBefore = sql<{ n: number }>('select count(*) n from customers where company_id = ?', companyId)[0]!.n;
    const photosBefore = sql<{ n: number }>('select count(*) n from face_images where company_id = ?', companyId)[0]!.n;
    await setRecognition('off');
    for (const face of [faces.others[0]!, faces.others[1]!]) {
      const { msg, row } = await through(face);
      expect(msg.embedding).toBeUndefined();
      expect(msg.recognition_model).toBeUndefined();
      expect(msg.face_image_id).toBeUndefined();
      expect(msg.attributes).toMatchObject({ gender: 'female' });
      expect(row.customer_id).toBeNull();
    }
    expect(sql<{ n: number }>('select count(*) n from customers where company_id = ?', companyId)[0]!.n).toBe(customersBefore);
    expect(sql<{ n: number }>('select count(*) n from face_images where company_id = ?', companyId)[0]!.n).toBe(photosBefore);
    expect(sql<{ n: number }>('select count(*) n from visits where company_id = ?', companyId)[0]!.n).toBe(4);
  });

  it('consented: a non-consenting face is recognised during the stay, and its template is gone from the file after it', async () => {
    await setRecognition('consented');
    const { msg, row } = await through(faces.others[2]!);
    expect(msg.embedding).toEqual(expect.any(String)); // recognition runs: the stay needs it
    const id = row.customer_id!;
    expect(id).not.toBeNull();
    expect(sql('select id from customers where id = ? and template is not null', id)).toHaveLength(1);
    // The stay ends FOOTFALL_VISIT_GAP_S (1 s) after the last sighting; the sweep then forgets them.
    await new Promise((r) => setTimeout(r, 1200));
    await h.server.deps.privacy!.request();
    expect(sql('select id from customers where id = ? and (template is not null or erased_at is null)', id)).toHaveLength(0);
    expect(sql('select id from face_images where customer_id = ?', id)).toHaveLength(0);
    expect(sql('select visit_id from visits where customer_id = ?', id)).toHaveLength(0);
    expect(sql<{ n: number }>('select count(*) n from visits where company_id = ?', companyId)[0]!.n).toBe(5); // still counted
  });
});

/** Face models from the shared test cache, when a previous run fetched them (this test never downloads them). */
const modelsDir = existsSync(path.join(testModelsDir(), 'manifest.json')) ? testModelsDir() : undefined;

describe('count-only with the real recognition pipeline over RTSP', () => {
  it.skipIf(!modelsDir)('off: the embedding model is never called, visits of faces that pass the gate are still counted; all: it is', async () => {
    const rtsp = await startRtspServer({ file: await testClip(), mounts: ['/door'], user: 'admin', password: 'secret' });
    let pc: AgentRuntime | undefined;
    try {
      await setRecognition('off');
      const shop = await openShop(h, owner, { name: 'Lock Street' });
      const file = path.join(tmp, 'agent-lock.json');
      await enrolShopPc({ server: h.url, code: await enrolmentCode(h, owner, shop.site_id), configPath: file, local: { data_dir: path.join(tmp, 'data-lock') } });
      const config = { ...(await loadAgentConfig(file)), log_level: 'silent' as const };
      pc = await AgentRuntime.start({ config, log, modelsDir: modelsDir!, visionWorkers: 1, drainMs: 500 });
      await waitFor(() => pc!.broker.connected && pc!.recognition.running, 60_000, 50);
      await addCamera(h, owner, shop.site_id, { camera_id: 'lock-door', host: '127.0.0.1', port: rtsp.port, path: '/door', username: 'admin', password: 'secret', max_width: 640, tuning: { detect_fps: 5 } });
      const mine = () => sent.filter((m) => m.camera_id === 'lock-door');
      // Faces good enough to be recognised went by (passed the gate), and were only counted.
      await waitFor(() => mine().some((m) => m.passed_gate), 90_000, 200);
      expect(pc.visits.countOnly).toBe(true);
      expect(pc.recognition.embeddings()).toBe(0);
      expect(mine().every((m) => m.embedding === undefined && m.recognition_model === undefined && m.face_image_id === undefined)).toBe(true);
      await settled(h);
      const stored = sql<{ n: number; named: number }>(
        "select count(*) n, count(customer_id) named from visits where company_id = ? and camera_id = 'lock-door'",
        companyId,
      )[0]!;
      expect(stored.n).toBeGreaterThan(0);
      expect(stored.named).toBe(0);

      // Recognition back on: the same pipeline computes embeddings again and sends them (the counter counts).
      const before = mine().length;
      await setRecognition('all');
      await waitFor(() => pc!.recognition.embeddings() > 0 && mine().slice(before).some((m) => m.embedding !== undefined), 90_000, 200);
    } finally {
      await pc?.stop();
      await rtsp.stop();
    }
  }, 240_000);
});
