import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsync, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { mosquittoMissing, startMosquitto, type TestMosquitto } from '../../test/support/mosquitto.js';
import { waitFor } from '../../test/support/shop-pc.js';
import { noteSkip } from '../../test/support/skips.js';
import { AckingSession } from './acking-session.js';

const FILE = 'server/broker/acking-session.test.ts';
const missing = mosquittoMissing();
if (missing) noteSkip(FILE, missing);

/**
 * The ingest session's promise on a real Mosquitto: a message is acknowledged to the broker only when its handler
 * resolves; one not acknowledged (head office stopped, or the handler refused it) is delivered again.
 */
describe.skipIf(missing !== undefined)('ingest session on a real Mosquitto: acknowledged only once handled', () => {
  let mq: TestMosquitto;
  let publisher: MqttClient;
  const log = pino({ level: 'silent' });
  const session = (clientId: string, onMessage: (topic: string, payload: Buffer) => Promise<void>) =>
    new AckingSession({ url: new URL(mq.url), username: mq.admin.username, password: mq.admin.password, clientId, filters: ['t/+/in'], log, onMessage });

  beforeAll(async () => {
    mq = await startMosquitto();
    // The dynsec admin may subscribe to everything but publish nowhere: a publisher with its own role on t/#.
    const admin = await connectAsync(mq.url, { username: mq.admin.username, password: mq.admin.password, protocolVersion: 5 });
    const ask = (commands: object[]) =>
      new Promise<void>((resolve) => {
        admin.once('message', () => resolve());
        admin.publish('$CONTROL/dynamic-security/v1', JSON.stringify({ commands }));
      });
    await admin.subscribeAsync('$CONTROL/dynamic-security/v1/response');
    await ask([
      { command: 'createRole', rolename: 'pub', acls: [{ acltype: 'publishClientSend', topic: 't/#', allow: true }] },
      { command: 'createClient', username: 'pub', password: 'pub-password', roles: [{ rolename: 'pub' }] },
    ]);
    await admin.endAsync();
    publisher = await connectAsync(mq.url, { username: 'pub', password: 'pub-password' });
  });
  afterAll(async () => {
    await publisher?.endAsync(true);
    await mq?.close();
  });

  it('a message whose handler never finished is delivered again to the next session; a finished one is not', async () => {
    const first: string[] = [];
    const s1 = session('ingest-a', (_t, p) => {
      first.push(p.toString());
      return p.toString() === 'stored' ? Promise.resolve() : new Promise<void>(() => {});
    });
    await s1.start();
    await publisher.publishAsync('t/1/in', 'stored', { qos: 1 });
    await publisher.publishAsync('t/1/in', 'in the middle of its commit', { qos: 1 });
    await waitFor(() => first.length === 2);
    await waitFor(() => s1.stats.acked === 1);
    await s1.stop();

    const second: string[] = [];
    const s2 = session('ingest-a', (_t, p) => (second.push(p.toString()), Promise.resolve()));
    await s2.start();
    await waitFor(() => second.length >= 1);
    await publisher.publishAsync('t/1/in', 'after', { qos: 1 });
    await waitFor(() => second.includes('after'));
    expect(second).toEqual(['in the middle of its commit', 'after']);
    await waitFor(() => s2.stats.acked === 2);
    await s2.stop();
  });

  it('a refused message (the store failed) is delivered again on the same session after it reconnects', async () => {
    const seen: string[] = [];
    let refuse = true;
    const s = session('ingest-b', (_t, p) => {
      seen.push(p.toString());
      if (refuse) {
        refuse = false;
        return Promise.reject(new Error('database is locked'));
      }
      return Promise.resolve();
    });
    await s.start();
    await publisher.publishAsync('t/2/in', 'visit', { qos: 1 });
    await waitFor(() => s.stats.acked === 1, 5000);
    expect(seen).toEqual(['visit', 'visit']);
    expect(s.stats).toMatchObject({ refused: 1, acked: 1, connects: 2 });
    await s.stop();
  });
});
