import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { waitFor } from '../../test/support/shop-pc.js';
import { LiveRelay, RELAY_PREFIX } from './live-relay.js';
import type { LiveTarget } from './live.js';

/**
 * The live-view relay between head-office processes (./live-relay.ts), two relays on one real broker as two processes
 * would be: demands heard by the other, frames handed on, a process's own messages ignored, and what breaks the
 * contract dropped. The two-process end-to-end test (test/scale-out-e2e.test.ts, scenario h) runs it through HTTP.
 */
describe('live relay between head-office processes', () => {
  let h: Harness;
  let a: LiveRelay;
  let b: LiveRelay;
  const framesAt: { relay: string; camera: string; base64: string }[] = [];
  const target: LiveTarget = { cameraUuid: '0b6f3c1e-3f7a-4a59-9a57-5b0d2a8f7c11', cameraId: 'door', shopId: 'shop-1', address: { companySlug: 'co', shopSlug: 'shop' } as never };

  beforeAll(async () => {
    h = await startHarness();
    const log = pino({ level: 'silent' });
    a = new LiveRelay(h.server.broker, log, (camera, base64) => framesAt.push({ relay: 'a', camera, base64 }));
    b = new LiveRelay(h.server.broker, log, (camera, base64) => framesAt.push({ relay: 'b', camera, base64 }));
    await a.start();
    await b.start();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await h?.close();
  });

  it('a demand is heard by the other process only, lists the camera for its shop, and a stop ends it', async () => {
    a.demand(target, true, 10_000);
    await waitFor(() => b.remoteUntil(target.cameraUuid) > 0, 5000, 10);
    expect(b.remoteUntil(target.cameraUuid)).toBeGreaterThan(Date.now() + 5000);
    expect(a.remoteUntil(target.cameraUuid)).toBe(0);
    expect(b.demandsOf('shop-1')).toEqual([{ camera: target.cameraUuid, camera_id: 'door', until: expect.any(Number) }]);
    expect(b.demandsOf('another-shop')).toEqual([]);
    a.demand(target, false, 0);
    await waitFor(() => b.remoteUntil(target.cameraUuid) === 0, 5000, 10);
    expect(b.demandsOf('shop-1')).toEqual([]);
  });

  it('a frame is handed to the other process, never back to its sender', async () => {
    framesAt.length = 0;
    const base64 = Buffer.from('not really a jpeg').toString('base64');
    b.forward(target.cameraUuid, base64);
    await waitFor(() => framesAt.length > 0, 5000, 10);
    await new Promise((r) => setTimeout(r, 100));
    expect(framesAt).toEqual([{ relay: 'a', camera: target.cameraUuid, base64 }]);
  });

  it('drops a demand that breaks the contract and a frame that is not base64, and goes on', async () => {
    framesAt.length = 0;
    const publish = (topic: string, body: string) => h.server.broker.publish(topic, Buffer.from(body), { qos: 0, retain: false });
    await publish(`${RELAY_PREFIX}demand`, 'not json');
    await publish(`${RELAY_PREFIX}demand`, JSON.stringify({ from: 'x', camera: target.cameraUuid, camera_id: 'door', shop_id: 'shop-1', watch: true, ttl_ms: -5 }));
    await publish(`${RELAY_PREFIX}frame/${target.cameraUuid}`, 'someone data: injected\n\nevent: end');
    await publish(`${RELAY_PREFIX}frame/${target.cameraUuid}`, 'nospace');
    // A good one after them still arrives.
    await publish(`${RELAY_PREFIX}demand`, JSON.stringify({ from: 'x', camera: target.cameraUuid, camera_id: 'door', shop_id: 'shop-1', watch: true, ttl_ms: 2000 }));
    await waitFor(() => a.remoteUntil(target.cameraUuid) > 0 && b.remoteUntil(target.cameraUuid) > 0, 5000, 10);
    expect(framesAt).toEqual([]);
  });
});
