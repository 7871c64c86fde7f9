import net from 'node:net';
import { Aedes, type AedesPublishPacket, type AuthenticateError, type Client, type PublishPacket, type Subscription } from 'aedes';
import type { Logger } from 'pino';
import { isUpTopic, type UpName } from '../../shared/topics.js';
import type { Broker, BrokerAuth, HeldMessage, ShopLogin } from './broker.js';

/**
 * The embedded MQTT broker (aedes) on its own TCP port. Who may connect, publish and subscribe is decided by
 * the pluggable BrokerAuth (shop logins, server/shops/broker-logins.ts); until one is set, every connection is refused.
 */
export interface EmbeddedBroker extends Broker {
  readonly kind: 'embedded';
  aedes: Aedes;
  /** Drops every connection logged in as this username (a removed shop login). */
  disconnect(username: string): number;
}

const denyAll: BrokerAuth = { authenticate: () => false, canPublish: () => false, canSubscribe: () => false, logins: async () => [] };

const bufferOf = (payload: Buffer | string): Buffer => (typeof payload === 'string' ? Buffer.from(payload) : payload);

export async function startEmbeddedBroker(opts: { host: string; port: number; log: Logger }): Promise<EmbeddedBroker> {
  const aedes = await Aedes.createBroker();
  let auth = denyAll;
  // Keyed by the connection, not the client id: a reconnect with the same id takes over before the old
  // connection's clientDisconnect fires, and must keep its own login.
  const usernames = new Map<Client, string>();
  const holds: { name: UpName; handler: (message: HeldMessage) => Promise<void> }[] = [];

  aedes.authenticate = (client: Client, username: string | undefined, password: Buffer | undefined, done: (error: AuthenticateError | null, success: boolean | null) => void) => {
    Promise.resolve(username && password ? auth.authenticate(username, password.toString('utf8')) : false)
      .then((ok) => {
        if (ok && username) {
          usernames.set(client, username);
          done(null, true);
        } else {
          const err = new Error('bad username or password') as AuthenticateError;
          err.returnCode = 4;
          done(err, false);
        }
      })
      .catch((err: unknown) => {
        opts.log.error({ err }, 'broker authentication failed');
        done(null, false);
      });
  };
  // A held publish: its PUBACK waits in the publish authorisation until the handler resolves; a rejection refuses
  // the publish, which closes the connection so the shop PC sends it again.
  aedes.authorizePublish = (client: Client | null, packet: PublishPacket, done: (error?: Error | null) => void) => {
    const username = client ? usernames.get(client) : undefined;
    if (!username || !auth.canPublish(username, packet.topic)) return done(new Error(`not allowed to publish on ${packet.topic}`));
    const hold = holds.find((h) => isUpTopic(packet.topic, h.name));
    if (!hold) return done(null);
    hold.handler({ topic: packet.topic, payload: bufferOf(packet.payload) }).then(
      () => done(null),
      (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
    );
  };
  aedes.authorizeSubscribe = (client: Client | null, sub: Subscription, done: (error: Error | null, subscription?: Subscription | null) => void) => {
    const username = client ? usernames.get(client) : undefined;
    // A refused filter gets the SUBACK failure code (0x80); the connection and its other subscriptions stay.
    if (username && auth.canSubscribe(username, sub.topic)) done(null, sub);
    else done(null, null);
  };
  aedes.on('clientDisconnect', (client) => usernames.delete(client));

  const server = net.createServer(aedes.handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  opts.log.info({ port }, 'MQTT broker listening');

  const disconnect = (username: string): number => {
    let n = 0;
    for (const [client, name] of usernames) {
      if (name !== username) continue;
      usernames.delete(client);
      client.close();
      n++;
    }
    return n;
  };

  return {
    kind: 'embedded',
    aedes,
    port,
    publicAddress: { host: null, port, tls: false },
    get accepting() {
      return !aedes.closed;
    },
    get connectedClients() {
      return aedes.connectedClients;
    },
    setAuth(next) {
      auth = next;
    },
    holdAcks(name, handler) {
      const h = { name, handler };
      holds.push(h);
      return () => {
        const i = holds.indexOf(h);
        if (i >= 0) holds.splice(i, 1);
      };
    },
    async listen(filter, handler) {
      const deliver = (packet: AedesPublishPacket, done: () => void) => {
        try {
          handler({ topic: packet.topic, payload: bufferOf(packet.payload) });
        } finally {
          done();
        }
      };
      await new Promise<void>((resolve) => aedes.subscribe(filter, deliver, resolve));
      return () => new Promise<void>((resolve) => aedes.unsubscribe(filter, deliver, resolve));
    },
    publish(topic, payload, { qos, retain }) {
      if (aedes.closed) return Promise.reject(new Error('the MQTT broker is closed'));
      return new Promise<void>((resolve, reject) => {
        aedes.publish({ cmd: 'publish', topic, payload, qos, retain, dup: false }, (err) => (err ? reject(err) : resolve()));
      });
    },
    // The login is the shops table's row (BrokerAuth reads it on every connect); a new password only has to end
    // the connections that used the earlier one.
    setLogin(login: ShopLogin) {
      disconnect(login.username);
      return Promise.resolve();
    },
    endLogin(username) {
      return Promise.resolve(disconnect(username));
    },
    disconnect,
    connections(username) {
      let n = 0;
      for (const name of usernames.values()) if (name === username) n++;
      return n;
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
    },
  };
}

/** The embedded broker behind a Broker (tests that watch its traffic from inside); throws for an external one. */
export function embeddedOf(broker: Broker): EmbeddedBroker {
  if (broker.kind !== 'embedded') throw new Error('this needs the embedded broker (FOOTFALL_MQTT_URL unset)');
  return broker as EmbeddedBroker;
}
