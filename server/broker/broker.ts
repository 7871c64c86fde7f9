import net from 'node:net';
import { Aedes, type AuthenticateError, type Client, type PublishPacket, type Subscription } from 'aedes';
import type { Logger } from 'pino';

/**
 * The embedded MQTT broker (aedes) on its own TCP port. Who may connect, publish and subscribe is decided by
 * the pluggable BrokerAuth (shop logins, later); until one is set, every connection is refused.
 */
export interface BrokerAuth {
  authenticate(username: string, password: string): Promise<boolean> | boolean;
  canPublish(username: string, topic: string): boolean;
  canSubscribe(username: string, topic: string): boolean;
}

export interface Broker {
  aedes: Aedes;
  port: number;
  setAuth(auth: BrokerAuth): void;
  /** Drops every connection logged in as this username (a removed shop login). */
  disconnect(username: string): number;
  close(): Promise<void>;
}

const denyAll: BrokerAuth = { authenticate: () => false, canPublish: () => false, canSubscribe: () => false };

export async function startBroker(opts: { host: string; port: number; log: Logger }): Promise<Broker> {
  const aedes = await Aedes.createBroker();
  let auth = denyAll;
  // Keyed by the connection, not the client id: a reconnect with the same id takes over before the old
  // connection's clientDisconnect fires, and must keep its own login.
  const usernames = new Map<Client, string>();

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
  aedes.authorizePublish = (client: Client | null, packet: PublishPacket, done: (error?: Error | null) => void) => {
    const username = client ? usernames.get(client) : undefined;
    if (username && auth.canPublish(username, packet.topic)) done(null);
    else done(new Error(`not allowed to publish on ${packet.topic}`));
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

  return {
    aedes,
    port,
    setAuth(next) {
      auth = next;
    },
    disconnect(username) {
      let n = 0;
      for (const [client, name] of usernames) {
        if (name !== username) continue;
        usernames.delete(client);
        client.close();
        n++;
      }
      return n;
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => aedes.close(() => resolve()));
    },
  };
}
