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
  /** Connections logged in as this username now (one closing still counts until it is gone). */
  connections(username: string): number;
  /**
   * Holds the PUBACK of allowed publishes whose topic `matches` until `handler` resolves (then they go on as usual);
   * a rejection refuses the publish, which closes the connection so the client sends it again. Visit ingest uses it
   * to acknowledge a visit only once it is stored. Returns the function that removes the hold.
   */
  holdAcks(matches: (topic: string) => boolean, handler: (packet: PublishPacket) => Promise<void>): () => void;
  close(): Promise<void>;
}

const denyAll: BrokerAuth = { authenticate: () => false, canPublish: () => false, canSubscribe: () => false };

export async function startBroker(opts: { host: string; port: number; log: Logger }): Promise<Broker> {
  const aedes = await Aedes.createBroker();
  let auth = denyAll;
  // Keyed by the connection, not the client id: a reconnect with the same id takes over before the old
  // connection's clientDisconnect fires, and must keep its own login.
  const usernames = new Map<Client, string>();
  const holds: { matches: (topic: string) => boolean; handler: (packet: PublishPacket) => Promise<void> }[] = [];

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
    if (!username || !auth.canPublish(username, packet.topic)) return done(new Error(`not allowed to publish on ${packet.topic}`));
    const hold = holds.find((h) => h.matches(packet.topic));
    if (!hold) return done(null);
    hold.handler(packet).then(
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

  return {
    aedes,
    port,
    setAuth(next) {
      auth = next;
    },
    holdAcks(matches, handler) {
      const h = { matches, handler };
      holds.push(h);
      return () => {
        const i = holds.indexOf(h);
        if (i >= 0) holds.splice(i, 1);
      };
    },
    connections(username) {
      let n = 0;
      for (const name of usernames.values()) if (name === username) n++;
      return n;
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
